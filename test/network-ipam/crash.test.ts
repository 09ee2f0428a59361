/**
 * Crash test: a long random sequence of `strait network-ipam` commands, most of them killed with SIGKILL at a
 * random moment of their run. After each kill `strait network-ipam show` must load the state, the invariants
 * must hold, and the state must be exactly the one before the command or the one after it: never a
 * half-written file, a double allocation, a leak, or a lock that blocks the next command.
 * Kill moments are spread over a command's whole measured lifetime (not only its first 30 ms, which
 * node spends starting up), so the write and the rename are hit too. STRAIT_CRASH_SEED replays a run.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError, StateError } from '../../src/errors';
import { mapEndpoint, unmapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, removePeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import type { IpamStateDocument as IpamDocument } from '../../src/api/ipam-state';
import { fromDocument, ipamStateCodec, toDocument } from '../../src/network-ipam/state-document';
import { FileStore } from '../../src/store/file-store';
import { cliPath, runCli } from './cli-runner';
import { assertDocumentInvariants } from './invariants';
import { prng } from '../support/prng';

type Op = { args: string[]; apply: (s: IpamState) => IpamState };

const podCidrs = ['10.0.0.0/16', '10.0.0.0/24', '10.1.0.0/20', '192.168.0.0/22', '172.16.0.0/16', '10.200.0.0/24'];
const externalCidrs = ['10.201.0.0/16', '10.202.0.0/24', '100.64.0.0/20', '192.168.8.0/24'];

function randomOp(rand: () => number): Op {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const cluster = `p${Math.floor(rand() * 8)}`;
  const ip = `10.9.${Math.floor(rand() * 8)}.${1 + Math.floor(rand() * 250)}`;
  const r = rand();
  if (r < 0.15) {
    const pod = pick(podCidrs);
    const ext = pick(externalCidrs);
    return {
      args: ['peer', 'add', '--cluster', cluster, '--pod-cidr', pod, '--external-cidr', ext],
      apply: (s) => addPeer(s, { clusterId: cluster, podCIDR: pod, externalCIDR: ext }).state,
    };
  }
  if (r < 0.25) {
    const view = {
      clusterId: cluster,
      localNATPodCIDR: pick(['10.0.0.0/16', '10.77.0.0/16']),
      localNATExternalCIDR: pick(['10.201.0.0/16', '10.78.0.0/16']),
    };
    return {
      args: [
        'peer',
        'remote-view',
        '--cluster',
        cluster,
        '--local-nat-pod-cidr',
        view.localNATPodCIDR,
        '--local-nat-external-cidr',
        view.localNATExternalCIDR,
      ],
      apply: (s) => setRemoteView(s, view).state,
    };
  }
  if (r < 0.3) return { args: ['peer', 'remove', '--cluster', cluster], apply: (s) => removePeer(s, cluster).state };
  if (r < 0.75) return { args: ['map-endpoint', '--cluster', cluster, '--ip', ip], apply: (s) => mapEndpoint(s, cluster, ip).state };
  return { args: ['unmap-endpoint', '--cluster', cluster, '--ip', ip], apply: (s) => unmapEndpoint(s, cluster, ip).state };
}

/** What the command must leave when it runs to the end: the core's answer, or no change if refused. */
function expectedAfter(before: IpamState, op: Op): IpamState {
  try {
    return op.apply(before);
  } catch (err) {
    if (err instanceof InputError || err instanceof StateError) return before;
    throw err;
  }
}

/** A state big enough (8 peers, ~1,000 mappings) that loading, checking and saving take a while. */
function seedState(rand: () => number): IpamState {
  let state = initializeIpam(undefined, { podCIDR: '10.0.0.0/16', serviceCIDR: '10.96.0.0/12', externalCIDR: '10.201.0.0/16' }).state;
  for (let i = 0; i < 8; i++) {
    state = addPeer(state, {
      clusterId: `p${i}`,
      podCIDR: podCidrs[i % podCidrs.length]!,
      externalCIDR: externalCidrs[i % externalCidrs.length]!,
    }).state;
    state = setRemoteView(state, { clusterId: `p${i}`, localNATPodCIDR: '10.77.0.0/16', localNATExternalCIDR: '10.78.0.0/16' }).state;
  }
  for (let i = 0; i < 1000; i++)
    state = mapEndpoint(state, `p${Math.floor(rand() * 8)}`, `10.9.${Math.floor(rand() * 8)}.${1 + Math.floor(rand() * 250)}`).state;
  return state;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode };
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { code, signal };
}

describe('strait network-ipam under SIGKILL', function () {
  // 40 kills take about 25 s on an idle 2-core machine; the limit is for a machine doing other work,
  // and for the kills past 40 when none has landed yet between the commit point and the exit.
  this.timeout(600_000);
  const wantedKills = 40;
  const maxKills = 160;
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-crash-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('never leaves a half-written state, a double allocation or a blocking lock (40 kills or more)', async () => {
    const seed = Number(process.env.STRAIT_CRASH_SEED ?? Date.now() % 2 ** 31);
    const rand = prng(seed);
    const path = join(dir, 'ipam.json');
    const store = new FileStore(path, ipamStateCodec);
    let current = seedState(rand);
    await store.save({ primary: current });

    const run = async (op: Op, killAfterMs?: number) => {
      const started = process.hrtime.bigint();
      const child = spawn(process.execPath, [cliPath, 'network-ipam', ...op.args, '--state', path], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      if (killAfterMs !== undefined) {
        await sleep(killAfterMs);
        child.kill('SIGKILL');
      }
      const end = await exited(child);
      return { ...end, stderr, ms: Number(process.hrtime.bigint() - started) / 1e6 };
    };

    // How long a command that saves lives, so kill moments cover start-up, load, check, save and exit.
    const lifetimes: number[] = [];
    for (let i = 1; i <= 3; i++) {
      const op: Op = {
        args: ['map-endpoint', '--cluster', 'p0', '--ip', `10.10.0.${i}`],
        apply: (s) => mapEndpoint(s, 'p0', `10.10.0.${i}`).state,
      };
      const expected = expectedAfter(current, op);
      lifetimes.push((await run(op)).ms);
      current = expected;
    }
    // The median of the latest commands that ran to the end: the machine's load changes while the test runs.
    const lifetime = () => lifetimes.slice(-9).sort((a, b) => a - b)[Math.floor(Math.min(lifetimes.length, 9) / 2)]!;
    // Some kills anywhere in a command's life, most near its end, where the rename happens.
    const killMoment = () => (rand() < 0.4 ? rand() * lifetime() : lifetime() * (0.75 + rand() * 0.35));

    // A count of kills, not a time budget: a loaded machine makes the test slower, never weaker. The few
    // ms between the rename and the exit are a small target: past the wanted count, kills go on (up to
    // maxKills) until one has landed there and one before it.
    const outcomes = { kills: 0, old: 0, new: 0, completed: 0, staleLocks: 0 };
    const bothSeen = () => outcomes.old > 0 && outcomes.new > 0;
    try {
      while (outcomes.kills < wantedKills || (!bothSeen() && outcomes.kills < maxKills)) {
        const op = randomOp(rand);
        const before = toDocument({ primary: current });
        const after = toDocument({ primary: expectedAfter(current, op) });
        const kill = rand() < 0.85;
        const end = await run(op, kill ? killMoment() : undefined);
        assert.doesNotMatch(end.stderr, /held by process/, "a killed writer's lock must not block the next command");
        let doc: IpamDocument;
        if (end.signal === 'SIGKILL') {
          outcomes.kills++;
          const shown = runCli(['network-ipam', 'show', '--state', path]);
          assert.equal(shown.code, 0, `show after kill: ${shown.stderr}`);
          doc = JSON.parse(shown.stdout) as IpamDocument;
          const isOld = JSON.stringify(doc) === JSON.stringify(before);
          const isNew = JSON.stringify(doc) === JSON.stringify(after);
          assert.ok(isOld || isNew, `after killing "${op.args.join(' ')}" the state is neither the old nor the new one`);
          if (isOld && !isNew) outcomes.old++;
          if (isNew && !isOld) outcomes.new++;
          if (existsSync(`${path}.lock`)) outcomes.staleLocks++;
        } else {
          outcomes.completed++;
          lifetimes.push(end.ms);
          doc = toDocument((await store.load())!);
          assert.deepEqual(doc, after, `"${op.args.join(' ')}" ran to the end`);
        }
        assertDocumentInvariants(doc);
        current = fromDocument(doc).primary;
      }
    } catch (err) {
      throw new Error(`STRAIT_CRASH_SEED=${seed}: ${(err as Error).message}`);
    }
    process.stderr.write(
      `      crash test seed ${seed}, command lifetime ${lifetime().toFixed(0)} ms at the end: ${JSON.stringify(outcomes)}\n`,
    );
    assert.ok(bothSeen(), `kills landed both before and after the commit point within ${maxKills} kills`);
  });
});
