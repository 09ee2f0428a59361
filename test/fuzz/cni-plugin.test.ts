/**
 * Fuzz: `strait-ipam`'s input, what a CNI runtime gives it: the environment (CNI_COMMAND,
 * CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH) and the network configuration on stdin.
 * Each input runs the built plugin as a process, as a runtime runs it, against the node's pool IPAM
 * service (test/pool-ipam/fuzz-node.ts). Accepted, or refused with a CNI error whose code is CNI's or
 * Strait's (never 5, an I/O failure) and whose message names the field or value that changed; nothing
 * on stderr, no error or stack in the service's log, and a refusal leaves every IPClaim and Endpoint.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fc from 'fast-check';
import { defaultIpamSocket } from '../../src/pool-ipam/protocol';
import { cannotRunHere, requireRoot, uniqueName } from '../support/kernel';
import { type FuzzSurface, type Verdict, accepted, documentTexts, fuzzSurface, refused, trickyStrings } from '../support/fuzz';
import { runStraitIpam } from '../cni/plugin-process';
import { type Changes, type FuzzNode, assertNamesChange, assertRefusalCode, changesOf, fuzzNode } from '../pool-ipam/fuzz-node';

/** Changes: the variables and configuration paths that differ from a valid call, and the strings they now hold. */
interface PluginInput extends Changes {
  env: Record<string, string>;
  stdin: string;
}

const commands = ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS', 'VERSION'] as const;
type Command = (typeof commands)[number];
const variables = ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_ARGS', 'CNI_PATH'] as const;
/** CNI_ARGS carries these: a refusal may name them instead. */
const argsKeys = ['K8S_POD_NAMESPACE', 'K8S_POD_NAME', 'K8S_POD_UID'];
/** An environment cannot hold NUL: no runtime can pass it. */
const noNul = (s: string) => !s.includes('\u0000');

describe('fuzz: strait-ipam, the CNI environment and network configuration', function () {
  requireRoot(this);
  let node: FuzzNode;
  before(async function () {
    // A configuration that loses ipam.socket calls the default one: it must not be a service of this machine's.
    if (existsSync(defaultIpamSocket))
      cannotRunHere(this, `${defaultIpamSocket} exists: inputs without ipam.socket would reach that service`);
    node = await fuzzNode();
  });
  after(async () => node?.close());

  const valid = (command: Command): { env: Record<string, string>; config: Record<string, unknown> } => {
    const attachment = {
      // DEL's container holds nothing: a valid DEL succeeds without undoing the standing attachment.
      CNI_CONTAINERID: command === 'DEL' ? 'fuzz-gone' : 'fuzz-ctr',
      CNI_NETNS: node.netns,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=fuzz;K8S_POD_UID=${node.podUid}`,
    };
    const env = { CNI_COMMAND: command, CNI_PATH: '/opt/cni/bin', ...(['ADD', 'CHECK', 'DEL'].includes(command) ? attachment : {}) };
    const config: Record<string, unknown> = {
      cniVersion: '1.1.0',
      name: 'underlay',
      type: 'macvlan',
      master: 'eth0',
      mode: 'bridge',
      ipam: { type: 'strait-ipam', socket: node.f.socket, default_ipv4_ippool: ['fuzz'], detect_ip_conflict: true, detect_gateway: false },
      ...(command === 'CHECK' ? { prevResult: { cniVersion: '1.1.0', ips: [{ address: node.standingAddress }], dns: {} } } : {}),
      ...(command === 'GC' ? { 'cni.dev/valid-attachments': [{ containerID: 'fuzz-ctr', ifname: 'eth0' }] } : {}),
    };
    return { env, config };
  };

  /** Values a runtime, a typo or an attacker could put in each variable, besides the tricky strings. */
  const plausible = (): Record<(typeof variables)[number], string[]> => ({
    CNI_COMMAND: [...commands, 'add', 'UPDATE', 'ADD '],
    CNI_CONTAINERID: ['fuzz-new', '-leading-dash', 'a b', 'c'.repeat(300), 'ctr;rm'],
    CNI_NETNS: [`/run/netns/${uniqueName('sipam-gone')}`, '/etc/hostname', '/tmp', 'netns/relative'],
    CNI_IFNAME: ['lo', 'eth9', 'eth0-peer', 'x'.repeat(16), 'a/b', 'a:b', 'ünïcødé'],
    CNI_ARGS: [
      '',
      ';;',
      '=x',
      'K8S_POD_NAMESPACE=default',
      'K8S_POD_NAMESPACE=default;K8S_POD_NAME=ghost',
      'K8S_POD_NAMESPACE=Default;K8S_POD_NAME=fuzz',
      'K8S_POD_NAMESPACE=default;K8S_POD_NAME=fuzz;K8S_POD_UID=another-incarnation',
      'K8S_POD_NAMESPACE=default;K8S_POD_NAME=Fuzz_Pod',
      'K8S_POD_NAMESPACE=../..;K8S_POD_NAME=fuzz',
    ],
    CNI_PATH: ['', '/nonexistent', ':'],
  });

  const envEdits = (command: Command) => {
    const choices = plausible();
    const value = (name: (typeof variables)[number]) =>
      fc.oneof(
        fc.constantFrom(...choices[name]),
        fc.constantFrom(...trickyStrings.filter(noNul)),
        fc.string({ maxLength: 24 }).filter(noNul),
      );
    const edit = fc.constantFrom(...variables).chain((name) =>
      fc.oneof(
        value(name).map((v) => [name, v] as const),
        fc.constant([name, undefined] as const),
      ),
    );
    return fc.array(edit, { minLength: 1, maxLength: 2 }).map((edits): PluginInput => {
      const { env, config } = valid(command);
      const edited: Record<string, string | undefined> = { ...env };
      for (const [name, v] of edits) edited[name] = v;
      const finalEnv = Object.fromEntries(Object.entries(edited).filter((e): e is [string, string] => e[1] !== undefined));
      const changed = variables.filter((n) => finalEnv[n] !== (env as Record<string, string>)[n]);
      return {
        env: finalEnv,
        stdin: JSON.stringify(config),
        changed: changed.includes('CNI_ARGS') ? [...changed, ...argsKeys] : changed,
        values: changed.map((n) => finalEnv[n] ?? ''),
      };
    });
  };

  const configEdits = (command: Command) => {
    const { env, config } = valid(command);
    return documentTexts(config).map((stdin): PluginInput => ({ env, stdin, ...changesOf(config, stdin, 'stdin') }));
  };

  const inputs = fc.constantFrom(...commands).chain((command) =>
    fc.oneof(
      { weight: 4, arbitrary: envEdits(command) },
      { weight: 5, arbitrary: configEdits(command) },
      {
        weight: 1,
        arbitrary: fc.constant<PluginInput>({ ...valid(command), stdin: JSON.stringify(valid(command).config), changed: [], values: [] }),
      },
    ),
  );

  /** The hand-made inputs of issue 24 (items 3, 8, 9) and of this suite's first runs. */
  const cases = (): PluginInput[] => {
    const add = valid('ADD');
    const withIpamKey = (key: string) => JSON.stringify(add.config).replace('"ipam":{', `"ipam":{"${key}":true,`);
    const gone = `/run/netns/${uniqueName('sipam-gone')}`;
    return [
      ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'].map((key) => ({
        env: add.env,
        stdin: withIpamKey(key),
        changed: [`ipam.${key}`],
        values: [],
      })),
      { env: { ...add.env, CNI_NETNS: gone }, stdin: JSON.stringify(add.config), changed: ['CNI_NETNS'], values: [gone] },
      { env: { ...add.env, CNI_IFNAME: 'eth9' }, stdin: JSON.stringify(add.config), changed: ['CNI_IFNAME'], values: ['eth9'] },
      {
        env: add.env,
        stdin: JSON.stringify({ ...add.config, ipam: { ...(add.config.ipam as object), socket: '/etc/hostname' } }),
        changed: ['ipam.socket'],
        values: ['/etc/hostname'],
      },
      ...['1.0.0', '1.1.0', '0.4.0'].map((v) => ({
        env: { CNI_COMMAND: 'VERSION' },
        stdin: JSON.stringify({ cniVersion: v }),
        changed: [],
        values: [],
      })),
    ];
  };

  const surface = (): FuzzSurface<PluginInput> => ({
    name: 'strait-ipam',
    inputs,
    cases: cases(),
    timeoutMs: 15_000,
    state: () => node.state(),
    async feed(input): Promise<Verdict> {
      const mark = node.logMark();
      const run = await runStraitIpam(input.env, input.stdin);
      node.checkLog(mark);
      assert.equal(run.stderr, '', `strait-ipam wrote to stderr: ${run.stderr}`);
      let verdict: Verdict;
      if (run.status === 0) {
        if (input.env.CNI_COMMAND === 'VERSION') {
          // Spec: the answer is in the version asked, when the plugin speaks it.
          const asked = (() => {
            try {
              return (JSON.parse(input.stdin) as { cniVersion?: unknown })?.cniVersion;
            } catch {
              return undefined;
            }
          })();
          assert.equal(JSON.parse(run.stdout).cniVersion, asked === '1.0.0' || asked === '1.1.0' ? asked : '1.1.0', run.stdout);
        }
        verdict = accepted;
      } else {
        assert.equal(run.status, 1, `strait-ipam exited ${run.status}: ${run.stdout}`);
        const error = JSON.parse(run.stdout) as { cniVersion?: unknown; code?: unknown; msg?: unknown; details?: unknown };
        assert.equal(typeof error.msg, 'string', `a CNI error without msg: ${run.stdout}`);
        assert.ok(['1.0.0', '1.1.0'].includes(error.cniVersion as string), `a CNI error in no version the plugin speaks: ${run.stdout}`);
        assertRefusalCode(error.code, error.msg as string);
        verdict = refused(error.msg as string);
      }
      await node.restore();
      return verdict;
    },
    clear: assertNamesChange,
  });

  fuzzSurface(surface);
});
