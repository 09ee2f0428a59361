/**
 * The IPAM CLI (`strait network-ipam ...`) as an input surface: every subcommand's options and arguments, and the
 * files it runs on (the state file, its lock, a temporary left beside it) corrupted in every way. Each
 * input runs one command line on a fresh directory holding those files; most run in this process through
 * the CLI's runner (runCli), one in twenty (and every input with a fifo, which a regression would block
 * on, and a few of the hand-made cases) as a real `strait` process: a process costs about 0.5 s.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { runCli } from '../../src/cli/main';
import { mapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, setRemoteView } from '../../src/network-ipam/peers';
import { ipamStateCodec, toDocument } from '../../src/network-ipam/state-document';
import { temporaryPathFor } from '../../src/store/atomic-file';
import { accepted, documentTexts, fuzzSurface, refused, trickyStrings } from '../support/fuzz';

const cliPath = join(__dirname, '../../src/cli/main.js');

/** What sits at a path before the command runs. */
type Entry =
  | { kind: 'absent' }
  | { kind: 'text'; text: string; mode: number }
  | { kind: 'bytes'; bytes: number[] }
  | { kind: 'symlink' }
  | { kind: 'fifo' }
  | { kind: 'directory' };

interface Input {
  /** At the state path, at its lock, at the state's temporary. */
  state: Entry;
  lock: Entry;
  temporary: Entry;
  /** After `ipam`; `{state}` and `{dir}` stand for the paths of this input's directory. */
  args: string[];
  viaProcess: boolean;
}

/** A state with two peers (one that has told how it sees us, one that has not) and two NatMappings. */
function validDocument(): unknown {
  let state = initializeIpam(undefined, { podCIDR: '10.0.0.0/16', externalCIDR: '10.201.0.0/24' }).state;
  state = addPeer(state, { clusterId: 'a', podCIDR: '10.1.0.0/16', externalCIDR: '10.202.0.0/24' }).state;
  state = addPeer(state, { clusterId: 'b', podCIDR: '10.0.0.0/16', externalCIDR: '10.203.0.0/24' }).state;
  state = setRemoteView(state, { clusterId: 'a', localNATPodCIDR: '10.0.0.0/16', localNATExternalCIDR: '10.201.0.0/24' }).state;
  state = mapEndpoint(state, 'a', '10.3.0.5').state;
  state = mapEndpoint(state, 'a', '10.3.0.6').state;
  return toDocument({ primary: state });
}
const valid = validDocument();
const validText = JSON.stringify(valid);
const validState: Entry = { kind: 'text', text: validText, mode: 0o600 };

const entryOfKind = (kind: 'absent' | 'symlink' | 'fifo' | 'directory'): Entry => ({ kind });

const stateEntries: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 20, arbitrary: fc.constant(validState) },
  { weight: 6, arbitrary: documentTexts(valid).map((text): Entry => ({ kind: 'text', text, mode: 0o600 })) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 64 }).map((bytes): Entry => ({ kind: 'bytes', bytes })) },
  { weight: 1, arbitrary: fc.constantFrom(0o666, 0o000, 0o644).map((mode): Entry => ({ kind: 'text', text: validText, mode })) },
  { weight: 2, arbitrary: fc.constantFrom('absent', 'absent', 'symlink', 'directory').map(entryOfKind) },
  { weight: 1, arbitrary: fc.constant(entryOfKind('fifo')) },
);

const lockTexts = ['', '\n', 'garbage', '0\n', '-1\n', '1\n', `${process.pid}\n`, '4194303\n', '99999999999\n', '12 34\n', '\u0000'];
const lockEntries: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 16, arbitrary: fc.constant(entryOfKind('absent')) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(fc.constantFrom(...lockTexts), fc.string({ maxLength: 12 }))
      .map((text): Entry => ({ kind: 'text', text, mode: 0o644 })),
  },
  { weight: 1, arbitrary: fc.constantFrom('symlink', 'symlink', 'fifo', 'directory').map(entryOfKind) },
);

const temporaryEntries: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 14, arbitrary: fc.constant(entryOfKind('absent')) },
  { weight: 1, arbitrary: fc.constant<Entry>({ kind: 'text', text: validText.slice(0, 40), mode: 0o666 }) },
  { weight: 1, arbitrary: fc.constantFrom('symlink', 'symlink', 'directory', 'fifo').map(entryOfKind) },
);

/** An option's value: mostly one the command may take, else a tricky or random string. */
const valueOf = (good: readonly string[]) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...good) },
    { weight: 2, arbitrary: fc.constantFrom(...trickyStrings) },
    { weight: 1, arbitrary: fc.string({ maxLength: 16 }) },
  );

const cidrs = [
  '10.0.0.0/16',
  '10.1.0.0/16',
  '10.4.0.0/16',
  '10.201.0.0/24',
  '10.202.0.0/24',
  '10.9.0.0/24',
  '192.168.0.0/24',
  '172.16.0.0/12',
  'fd00::/64',
];
const cidr = valueOf(cidrs);
const cidrList = fc.oneof(
  cidr,
  fc.array(fc.constantFrom(...cidrs), { maxLength: 4 }).map((l) => l.join(',')),
);
const cluster = valueOf(['a', 'a', 'a', 'b', 'c']);
const ip = valueOf([
  '10.3.0.5',
  '10.3.0.9',
  '10.0.0.34',
  '10.1.0.7',
  '10.201.0.3',
  'fd00::1',
  '0.0.0.0',
  '255.255.255.255',
  '224.0.0.1',
  '127.0.0.1',
]);
const statePath = fc.oneof(
  { weight: 16, arbitrary: fc.constant('{state}') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      '{dir}/nested/deeper/ipam.json',
      '{dir}',
      '{dir}/',
      '{dir}/ipam.json/below',
      '{dir}/with\u0000nul',
      '{dir}/other.json',
    ),
  },
);

/** Each subcommand: its words and its options (value arbitrary; undefined for a flag), the required ones first. */
const subcommands: [
  words: string[],
  required: Record<string, fc.Arbitrary<string>>,
  optional: Record<string, fc.Arbitrary<string> | undefined>,
][] = [
  [
    ['init'],
    { '--pod-cidr': cidr, '--external-cidr': cidr },
    { '--service-cidr': cidr, '--reserved': cidrList, '--pools': cidrList, '--force': undefined },
  ],
  [['peer', 'add'], { '--cluster': cluster, '--pod-cidr': cidr, '--external-cidr': cidr }, {}],
  [['peer', 'remote-view'], { '--cluster': cluster, '--local-nat-pod-cidr': cidr, '--local-nat-external-cidr': cidr }, {}],
  [['peer', 'remove'], { '--cluster': cluster }, {}],
  [['home-pod-ip'], { '--cluster': cluster, '--ip': ip }, {}],
  [['map-endpoint'], { '--cluster': cluster, '--ip': ip }, {}],
  [['unmap-endpoint'], { '--cluster': cluster, '--ip': ip }, {}],
  [['nat-mappings'], { '--cluster': cluster }, {}],
  [['show'], {}, {}],
];

/** An option with its value, given (most of the time) or left out, sometimes twice. */
const optionArgs = (name: string, value: fc.Arbitrary<string> | undefined, presence: number): fc.Arbitrary<string[][]> =>
  fc.integer({ min: 0, max: 99 }).chain((roll) => {
    if (roll >= presence) return fc.constant([]);
    const one: fc.Arbitrary<string[]> = value === undefined ? fc.constant([name]) : value.map((v) => [name, v]);
    return roll < 4 ? fc.tuple(one, one) : one.map((o) => [o]);
  });

/**
 * Something a person gets wrong around the options: an unknown one, an extra word, a help request.
 * (An option left without its value takes the next word as it: the hand-made cases give it at the end.)
 */
const extras = fc.oneof(
  { weight: 12, arbitrary: fc.constant<string[][]>([]) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<string[][]>(
      [['--bogus']],
      [['--stat', 'x']],
      [['extra']],
      [['--']],
      [['-x']],
      [['--help']],
      [['--cluster=a']],
    ),
  },
);

const commandLines: fc.Arbitrary<string[]> = fc.constantFrom(...subcommands).chain(([words, required, optional]) =>
  fc
    .tuple(
      optionArgs('--state', statePath, 98),
      ...Object.entries(required).map(([name, value]) => optionArgs(name, value, 97)),
      ...Object.entries(optional).map(([name, value]) => optionArgs(name, value, 40)),
      extras,
    )
    .chain((groups) => {
      const options = groups.flat();
      return fc
        .shuffledSubarray(options, { minLength: options.length, maxLength: options.length })
        .map((shuffled) => [...words, ...shuffled.flat()]);
    }),
);

const inputs: fc.Arbitrary<Input> = fc.record({
  state: stateEntries,
  lock: lockEntries,
  temporary: temporaryEntries,
  args: commandLines,
  viaProcess: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
});

const on = (viaProcess: boolean, args: string[], files: Partial<Omit<Input, 'args' | 'viaProcess'>> = {}): Input => ({
  state: validState,
  lock: entryOfKind('absent'),
  temporary: entryOfKind('absent'),
  ...files,
  args,
  viaProcess,
});

/** The defects the issue found by hand (issue 24, items 5, 6 and 9), fed first in every run. */
const cases: Input[] = [
  ...['0.0.0.0', '255.255.255.255', '224.0.0.1', '127.0.0.1'].map((address, i) =>
    on(i === 0, ['map-endpoint', '--state', '{state}', '--cluster', 'a', '--ip', address]),
  ),
  on(true, ['show', '--state', '{state}'], { state: entryOfKind('fifo') }),
  on(false, ['show', '--state', '{state}'], { state: entryOfKind('directory') }),
  on(true, ['peer', 'remove', '--state', '{state}', '--cluster', 'b'], { lock: entryOfKind('fifo') }),
  ...['', 'garbage', '0\n', '-1\n'].map((text) =>
    on(false, ['peer', 'remove', '--state', '{state}', '--cluster', 'b'], { lock: { kind: 'text', text, mode: 0o644 } }),
  ),
  on(false, ['init', '--state', '{state}', '--pod-cidr', '10.0.0.0/16', '--external-cidr', '10.201.0.0/24', '--force'], {
    temporary: entryOfKind('symlink'),
  }),
  on(false, ['map-endpoint', '--state', '{state}', '--cluster', 'a', '--ip', '10.3.0.9'], {
    temporary: { kind: 'text', text: 'leftover', mode: 0o666 },
  }),
  on(true, ['show']),
  on(false, ['show', '--state']),
  on(false, ['show', '--state', '{state}', 'extra']),
  on(false, ['show', '--state', '{state}', '--stat', 'x']),
  on(false, ['nope']),
  on(false, []),
  on(false, ['show', '--state', '{state}'], {
    state: { kind: 'text', text: validText.replace(/^\{/, '{"__proto__":{"polluted":true},'), mode: 0o600 },
  }),
];

/** The input's files in a fresh directory. */
interface Scene {
  dir: string;
  state: string;
  /** What planted symlinks point at: a valid state, which nothing may write through to. */
  target: string;
}

function place(path: string, entry: Entry, target: string): void {
  switch (entry.kind) {
    case 'absent':
      return;
    case 'text':
      writeFileSync(path, entry.text, { mode: entry.mode });
      return;
    case 'bytes':
      writeFileSync(path, Buffer.from(entry.bytes), { mode: 0o600 });
      return;
    case 'symlink':
      symlinkSync(target, path);
      return;
    case 'fifo':
      execFileSync('mkfifo', [path]);
      return;
    case 'directory':
      mkdirSync(path);
      return;
  }
}

/** Every entry under `dir` (not following links): kind, mode and bytes. */
function snapshot(dir: string, skip: ReadonlySet<string>): Record<string, string> {
  const entries: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      if (skip.has(path)) continue;
      const stats = lstatSync(path);
      const mode = (stats.mode & 0o777).toString(8);
      if (stats.isDirectory()) {
        entries[path] = `directory ${mode}`;
        walk(path);
      } else if (stats.isSymbolicLink()) entries[path] = `symlink to ${readlinkSync(path)}`;
      else if (stats.isFile()) entries[path] = `file ${mode} ${readFileSync(path).toString('base64')}`;
      else entries[path] = `other ${mode}`;
    }
  };
  walk(dir);
  return entries;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runProcess(argv: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...argv], { cwd, encoding: 'utf8', timeout: 9000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

async function runInProcess(argv: string[], cwd: string): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const was = process.cwd();
  process.chdir(cwd);
  try {
    const code = await runCli(['node', 'strait', ...argv], { out: (text) => void (stdout += text), err: (text) => void (stderr += text) });
    return { code, stdout, stderr };
  } finally {
    process.chdir(was);
  }
}

describe('fuzz: strait network-ipam (arguments, options, state and lock files)', function () {
  // Made when the suite runs, not when its file is loaded: a run that filters it out leaves nothing.
  let root: string;
  let scene: Scene;
  let count = 0;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'strait-fuzz-ipam-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  fuzzSurface<Input>(() => ({
    name: 'strait network-ipam',
    inputs,
    cases,
    timeoutMs: 10_000,
    prepare(input) {
      if (scene) rmSync(scene.dir, { recursive: true, force: true });
      const dir = join(root, String(count++));
      mkdirSync(dir);
      scene = { dir, state: join(dir, 'ipam.json'), target: join(dir, 'target') };
      writeFileSync(scene.target, validText, { mode: 0o600 });
      place(scene.state, input.state, scene.target);
      place(`${scene.state}.lock`, input.lock, scene.target);
      place(temporaryPathFor(scene.state), input.temporary, scene.target);
    },
    // A lock found dead is taken over (removed) by a command that is then refused: that is no change.
    state: () => snapshot(scene.dir, new Set([`${scene.state}.lock`])),
    // A refusal names the option or argument (`field: reason (got value)`), or the file it is about.
    clear: (message) =>
      assert.ok(/^\S+: \S/.test(message) || message.startsWith(scene.dir), `a refusal naming neither a field nor a file: ${message}`),
    async feed(input) {
      const argv = ['network-ipam', ...input.args.map((a) => a.replaceAll('{state}', scene.state).replaceAll('{dir}', scene.dir))];
      const lockBefore = snapshot(scene.dir, new Set())[`${scene.state}.lock`];
      const stateBefore = snapshot(scene.dir, new Set())[scene.state];
      const fifo = [input.state, input.lock, input.temporary].some((e) => e.kind === 'fifo');
      // A NUL cannot be passed to a process (execve); a person cannot type one either.
      const viaProcess = (input.viaProcess || fifo) && !argv.some((a) => a.includes('\u0000'));
      // In the input's directory: a path that a generated command line made relative stays in it.
      const run = viaProcess ? await runProcess(argv, scene.dir) : await runInProcess(argv, scene.dir);
      const after = snapshot(scene.dir, new Set());

      // Nothing is left behind: no private pid file or moved-aside lock, no temporary but the one planted.
      const planted = temporaryPathFor(scene.state);
      const strays = Object.keys(after).filter((p) => /\.lock\.(stale\.)?\d+$/.test(p) || (p.endsWith('.tmp') && p !== planted));
      assert.deepEqual(strays, [], `left behind by ${JSON.stringify(argv)}`);
      // A lock is released or left as found (a lock it refused to take), never held after the command.
      assert.ok(
        after[`${scene.state}.lock`] === undefined || after[`${scene.state}.lock`] === lockBefore,
        `a lock left by ${JSON.stringify(argv)}: ${after[`${scene.state}.lock`]}`,
      );
      // Nothing is written through a symlink.
      assert.equal(readFileSync(scene.target, 'utf8'), validText, `written through a symlink by ${JSON.stringify(argv)}`);

      if (run.code === 0) {
        assert.equal(run.stderr, '', `accepted with something on stderr: ${run.stderr}`);
        if (argv.includes('--help')) assert.match(run.stdout, /^Usage: strait network-ipam/);
        else JSON.parse(run.stdout);
        const stateAfter = after[scene.state];
        if (stateAfter !== stateBefore && stateAfter !== undefined) {
          // Written: a whole state, readable by its owner only.
          assert.match(stateAfter, /^file 600 /, `the state written by ${JSON.stringify(argv)}`);
          ipamStateCodec.decode(readFileSync(scene.state, 'utf8'));
        }
        return accepted;
      }
      assert.equal(run.code, 1, `exit ${run.code} (a crash or a hang?) for ${JSON.stringify(argv)}: ${run.stderr}`);
      assert.equal(run.stdout, '', 'a refusal printed on stdout');
      assert.equal(run.stderr.split('\n').length, 2, `a refusal is one line of JSON: ${run.stderr}`);
      const error = JSON.parse(run.stderr) as { error?: unknown; field?: unknown; value?: unknown };
      assert.equal(typeof error.error, 'string', run.stderr);
      const message = error.error as string;
      if (error.field !== undefined) {
        // An input refused: the field and the value named, in the JSON and in the message.
        assert.ok('value' in error, `a field without its value: ${run.stderr}`);
        assert.ok(message.startsWith(`${error.field as string}: `), `the message does not start with its field: ${run.stderr}`);
      } else {
        // A file refused (the state, its lock, what is in the way): the message starts with its path.
        assert.ok(message.startsWith(scene.dir), `a refusal naming neither a field nor a file: ${run.stderr}`);
      }
      return refused(message);
    },
  }));
});
