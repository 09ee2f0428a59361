/**
 * Programming routes: one `ip route add` process per route, one `ip -batch` for all of them (what the
 * reconcilers used before rtnetlink), and one rtnetlink batch from the native addon; then the route
 * reconciler (read, diff, one rtnetlink batch) on 10,000 routes in table 18952 of a throwaway namespace. One process per route is slow, so it is measured on 1,000 routes and its per-route
 * cost extrapolated to 10,000 (the cost per process does not depend on the table size at this scale).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ip } from '../../src/kernel/command';
import { applyNetlink } from '../../src/kernel/rtnetlink';
import { withThrowawayNetns } from '../../src/kernel/netns';
import { type Route, reconcileRoutes } from '../../src/kernel/routes';
import { kernelDataplane } from '../../src/dataplane/kernel/dataplane';
import { KernelDatapath } from '../../src/dataplane/kernel/kernel-datapath';
import { KernelChangeMonitor } from '../../src/kernel/change-monitor';
import { hubSpec } from '../support/node-specs';
import { median, type BenchFigure, type BenchSuite } from './result';

const routeCount = 10_000;
const oneByOneCount = 1_000;
const rounds = 3;
const table = 18952;

const prefix = (i: number) => `10.${(i >> 8) & 255}.${i & 255}.0/24`;

function timeMs(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const routesPerSecond = (routes: number, ms: number) => Math.round((routes / ms) * 1000);

/**
 * One agent tick of the kernel fallback on the hub gateway of test/support/node-specs.ts with nothing to
 * change: reading everything (devices, FDB, neighbours, routes, rules, nftables: several processes)
 * against a tick the change monitor lets skip (no kernel event since the last apply).
 */
async function kernelTick(): Promise<BenchFigure[]> {
  return withThrowawayNetns('strait-bench-ktick', async (ns) => {
    ip(['link', 'set', 'lo', 'up'], ns);
    const datapath = new KernelDatapath(ns);
    const monitor = new KernelChangeMonitor(ns);
    const dataplane = kernelDataplane(datapath, monitor);
    try {
      const spec = hubSpec();
      datapath.apply(spec);
      const full: number[] = [];
      for (let i = 0; i < 20; i++) full.push(timeMs(() => datapath.apply(spec)));
      // Let the devices settle (IPv6 link-local addresses) and the monitor take the events of the applies.
      for (let i = 0; i < 30; i++) {
        dataplane.apply(spec);
        await new Promise((r) => setTimeout(r, 150));
      }
      const skipped: number[] = [];
      for (let i = 0; i < 20; i++) skipped.push(timeMs(() => dataplane.apply(spec)));
      return [
        {
          suite: 'netlink',
          name: 'kernel fallback tick, hub gateway, nothing to change: full read',
          value: Math.round(median(full) * 10) / 10,
          unit: 'ms',
          note: 'devices, FDB, neighbours, routes, rules, nftables',
        },
        {
          suite: 'netlink',
          name: 'the same tick with the change monitor and no kernel event',
          value: Math.round(median(skipped) * 1000) / 1000,
          unit: 'ms',
          note: 'skipped: no process',
        },
      ];
    } finally {
      dataplane.close();
    }
  });
}

export const run: BenchSuite = async () => [...(await routeFigures()), ...(await kernelTick())];

const routeFigures = () =>
  withThrowawayNetns('strait-bench-netlink', (ns) => {
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1'], ns);
    for (const dev of ['veth0', 'veth1']) ip(['link', 'set', dev, 'up'], ns);
    const flush = () => reconcileRoutes([], { table }, ns);
    const count = () => (JSON.parse(ip(['-j', 'route', 'show', 'table', String(table)], ns)) as unknown[]).length;
    const samples = {
      oneByOne: [] as number[],
      batch: [] as number[],
      netlink: [] as number[],
      reconcileEmpty: [] as number[],
      reconcileChanged: [] as number[],
      reconcileSame: [] as number[],
    };
    const desired: Route[] = Array.from({ length: routeCount }, (_, i) => ({ dst: prefix(i), dev: 'veth0' }));
    // 1%: every 100th route moves to the other device (a `route replace` each).
    const changed: Route[] = desired.map((r, i) => (i % 100 === 0 ? { ...r, dev: 'veth1' } : r));

    for (let round = 0; round < rounds; round++) {
      flush();
      samples.oneByOne.push(
        timeMs(() => {
          for (let i = 0; i < oneByOneCount; i++) ip(['route', 'add', prefix(i), 'dev', 'veth0', 'table', String(table)], ns);
        }),
      );
      assert.equal(count(), oneByOneCount);

      flush();
      const lines = Array.from({ length: routeCount }, (_, i) => `route add ${prefix(i)} dev veth0 table ${table}`);
      // As the reconcilers ran it: the lines on stdin, results read from stderr (empty when all succeeded).
      samples.batch.push(
        timeMs(() =>
          assert.equal(
            spawnSync('ip', ['-n', ns, '-batch', '-', '-force'], { input: `${lines.join('\n')}\n`, encoding: 'utf8' }).stderr,
            '',
          ),
        ),
      );
      assert.equal(count(), routeCount);

      flush();
      const changes = Array.from({ length: routeCount }, (_, i) => ({
        kind: 'route' as const,
        op: 'add' as const,
        dst: prefix(i),
        dev: 'veth0',
        table,
      }));
      samples.netlink.push(timeMs(() => assert.ok(applyNetlink(changes, ns).every((r) => r.ok)))); // checking 10,000 results is part of the cost
      assert.equal(count(), routeCount);

      flush();
      samples.reconcileEmpty.push(timeMs(() => assert.equal(reconcileRoutes(desired, { table }, ns).added.length, routeCount)));
      samples.reconcileChanged.push(timeMs(() => assert.equal(reconcileRoutes(changed, { table }, ns).changed.length, routeCount / 100)));
      samples.reconcileSame.push(timeMs(() => assert.equal(reconcileRoutes(changed, { table }, ns).changed.length, 0)));
      assert.equal(count(), routeCount);
    }

    const perRouteOneByOne = median(samples.oneByOne) / oneByOneCount;
    const oneByOneMs = perRouteOneByOne * routeCount;
    const batchMs = median(samples.batch);
    const netlinkMs = median(samples.netlink);
    const figures: BenchFigure[] = [
      {
        suite: 'netlink',
        name: 'one `ip route add` process per route',
        value: routesPerSecond(1, perRouteOneByOne),
        unit: 'routes/s',
        note: `${perRouteOneByOne.toFixed(2)} ms per route, measured on ${oneByOneCount.toLocaleString('en')}; 10,000 extrapolated: ${Math.round(oneByOneMs).toLocaleString('en')} ms`,
      },
      {
        suite: 'netlink',
        name: 'one `ip -batch` for 10,000 `route add`',
        value: routesPerSecond(routeCount, batchMs),
        unit: 'routes/s',
        note: `${Math.round(batchMs)} ms, stderr checked empty`,
      },
      {
        suite: 'netlink',
        name: 'one process per route / ip -batch (time for 10,000)',
        value: Math.round((oneByOneMs / batchMs) * 10) / 10,
        unit: 'x',
      },
      {
        suite: 'netlink',
        name: 'one rtnetlink batch (native addon) for 10,000 route add',
        value: routesPerSecond(routeCount, netlinkMs),
        unit: 'routes/s',
        note: `${Math.round(netlinkMs)} ms, including the per-change results`,
      },
      {
        suite: 'netlink',
        name: 'ip -batch / rtnetlink batch (time for 10,000)',
        value: Math.round((batchMs / netlinkMs) * 10) / 10,
        unit: 'x',
      },
      {
        suite: 'netlink',
        name: 'reconcile 10,000 desired routes, empty table',
        value: routesPerSecond(routeCount, median(samples.reconcileEmpty)),
        unit: 'routes/s',
        note: `${Math.round(median(samples.reconcileEmpty))} ms: read, diff, one rtnetlink batch`,
      },
      {
        suite: 'netlink',
        name: 'reconcile 10,000 desired routes, full table, 1% changed',
        value: Math.round(median(samples.reconcileChanged)),
        unit: 'ms',
        note: '100 `route replace`; includes reading and diffing 10,000',
      },
      {
        suite: 'netlink',
        name: 'reconcile 10,000 desired routes, nothing to change',
        value: Math.round(median(samples.reconcileSame)),
        unit: 'ms',
        note: 'read + diff, no batch',
      },
    ];
    return figures;
  });
