/**
 * IPAM at scale: 1,000 peers that all overlap the home networks (every one is a remap of both its
 * PodCIDR and its ExternalCIDR) and 100,000 endpoint mappings (each a new ExternalCIDR address).
 * Per-operation times are averaged over the last 10% of operations before each size, so the growth
 * with the count shows directly.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { ipamStateCodec } from '../../src/network-ipam/state-document';
import { FileStore } from '../../src/store/file-store';
import { type BenchFigure, type BenchSuite, median } from './result';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapMiB(): number {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

function round(value: number, digits = 2): number {
  return Number(value.toFixed(digits));
}

function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Applies `step(i)` for i = 0..last checkpoint-1; at each checkpoint reports the mean time per step over
 * the last 10% of steps before it, and the state reached.
 */
function timedGrowth(
  state: IpamState,
  checkpoints: number[],
  step: (s: IpamState, i: number) => IpamState,
  report: (count: number, usPerOp: number, reached: IpamState) => void,
): IpamState {
  let i = 0;
  for (const checkpoint of checkpoints) {
    const windowStart = Math.floor(checkpoint * 0.9);
    for (; i < windowStart; i++) state = step(state, i);
    const t0 = nowMs();
    for (; i < checkpoint; i++) state = step(state, i);
    report(checkpoint, ((nowMs() - t0) * 1000) / (checkpoint - windowStart), state);
  }
  return state;
}

const repeats = 3;
const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');
const home = { podCIDR: '10.0.0.0/16', serviceCIDR: '10.96.0.0/12', externalCIDR: '100.64.0.0/10' };

export const run: BenchSuite = async () => {
  const figures: BenchFigure[] = [];
  const figure = (name: string, value: number, unit: string, note?: string) =>
    figures.push({ suite: 'ipam', name, value: round(value), unit, ...(note ? { note } : {}) });
  const empty = initializeIpam(undefined, home).state;

  const stateKiB = (s: IpamState) => ipamStateCodec.encode({ primary: s }).length / 1024;

  /** The growth run `repeats` times (the first also warms the JIT up); median time per checkpoint. */
  const medianGrowth = (start: IpamState, checkpoints: number[], step: (s: IpamState, i: number) => IpamState) => {
    const samples = new Map<number, number[]>(checkpoints.map((c) => [c, []]));
    const reached = new Map<number, IpamState>();
    let last = start;
    for (let r = 0; r < repeats; r++) {
      last = timedGrowth(start, checkpoints, step, (count, us, at) => {
        samples.get(count)!.push(us);
        reached.set(count, at);
      });
    }
    return { last, reached, usPerOp: new Map([...samples].map(([c, xs]) => [c, median(xs)])) };
  };

  // Peers: each has PodCIDR 10.0.0.0/20 and ExternalCIDR 100.64.0.0/20, so both collide and are remapped.
  const heapBeforePeers = heapMiB();
  const addCollidingPeer = (s: IpamState, i: number) =>
    addPeer(s, { clusterId: `peer-${i}`, podCIDR: '10.0.0.0/20', externalCIDR: '100.64.0.0/20' }).state;
  const peers = medianGrowth(empty, [10, 100, 1000], addCollidingPeer);
  for (const [count, us] of peers.usPerOp) {
    figure(`remap per peer @${count} peers`, us, 'µs', 'PodCIDR and ExternalCIDR both remapped');
    figure(`state size @${count} peers`, stateKiB(peers.reached.get(count)!), 'KiB');
  }
  peers.reached.clear();
  figure('heap @1,000 peers', heapMiB() - heapBeforePeers, 'MiB', `${peers.last.peers.size} peers held`);
  const addAll = (): number => {
    const t = nowMs();
    let s = empty;
    for (let i = 0; i < 1000; i++) s = addCollidingPeer(s, i);
    return nowMs() - t;
  };
  figure(
    'add 1,000 colliding peers, in total',
    median(Array.from({ length: repeats }, addAll)),
    'ms',
    'from an empty state; both networks of each remapped',
  );

  // Endpoint mappings: 100,000 distinct non-local endpoints (20.x.y.z) reflected to one peer, each a new address.
  let state = addPeer(empty, { clusterId: 'peer-a', podCIDR: '10.1.0.0/16', externalCIDR: '10.202.0.0/16' }).state;
  state = setRemoteView(state, { clusterId: 'peer-a', localNATPodCIDR: '10.0.0.0/16', localNATExternalCIDR: '100.64.0.0/10' }).state;
  const heapBeforeMappings = heapMiB();
  const mappings = medianGrowth(
    state,
    [1000, 10_000, 100_000],
    (s, i) => mapEndpoint(s, 'peer-a', `20.${(i >> 16) & 0xff}.${(i >> 8) & 0xff}.${i & 0xff}`).state,
  );
  for (const [count, us] of mappings.usPerOp) {
    figure(`endpoint mapping @${count} mappings`, us, 'µs', 'new ExternalCIDR address + NatMapping');
    figure(`state size @${count} mappings`, stateKiB(mappings.reached.get(count)!), 'KiB');
  }
  mappings.reached.clear();
  state = mappings.last;
  figure('heap @100,000 mappings', heapMiB() - heapBeforeMappings, 'MiB', `${state.external.byEndpoint.size} allocations held`);

  const text = ipamStateCodec.encode({ primary: state });
  let t0 = nowMs();
  ipamStateCodec.decode(text);
  figure('load + check @100,000 mappings', nowMs() - t0, 'ms', 'JSON parse and full invariant check');
  const dir = mkdtempSync(join(tmpdir(), 'strait-bench-'));
  try {
    const store = new FileStore(join(dir, 'ipam.json'), ipamStateCodec);
    t0 = nowMs();
    await store.save({ primary: state });
    figure('save @100,000 mappings', nowMs() - t0, 'ms', `encode, write, fsync, rename; ${statSync(join(dir, 'ipam.json')).size} bytes`);
    // What an operator waits for: one `strait network-ipam` command on that state, a process that loads, checks,
    // changes and saves the whole file (the CLI is O(n) per command).
    const command = (i: number) => [
      'network-ipam',
      'map-endpoint',
      `--state=${join(dir, 'ipam.json')}`,
      '--cluster',
      'peer-a',
      '--ip',
      `21.0.0.${i + 1}`,
    ];
    const cliMs = Array.from({ length: repeats }, (_, i) => {
      const t = nowMs();
      execFileSync(process.execPath, [cli, ...command(i)], { stdio: 'ignore' });
      return nowMs() - t;
    });
    figure('strait network-ipam map-endpoint @100,000 mappings', median(cliMs), 'ms', 'the whole process: start, load + check, map, save');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
};
