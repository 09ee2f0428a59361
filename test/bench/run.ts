/**
 * `npm run bench`: runs every suite but e2e, cni, idle, multivm and restwrites (or those named on the command line), prints a table
 * and writes bench-results/latest.json. BENCHMARKS.md summarises these files; tests never assert on timings.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import { type BenchFigure, type BenchSuite, benchResultsDir } from './result';

const suites: Record<string, () => Promise<{ run: BenchSuite }>> = {
  maps: () => import('./maps.bench'),
  ipam: () => import('./ipam.bench'),
  reconcile: () => import('./reconcile.bench'),
  datapath: () => import('./datapath.bench'),
  netlink: () => import('./netlink.bench'),
  start: () => import('./start.bench'),
  podattach: () => import('./pod-attach.bench'),
  kubernetes: () => import('./kubernetes.bench'),
  cni: () => import('./cni.bench'),
  e2e: () => import('./e2e.bench'),
  idle: () => import('./idle.bench'),
  multivm: () => import('./multivm.bench'),
  restwrites: () => import('./rest-writes.bench'),
  services: () => import('./services.bench'),
};

/** Suites that take minutes (e2e and restwrites bring up labs, and no other lab may be up; multivm boots VMs): run only when named. */
const onlyWhenNamed = new Set(['e2e', 'cni', 'idle', 'multivm', 'restwrites']);

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const names = wanted.length ? wanted : Object.keys(suites).filter((name) => !onlyWhenNamed.has(name));
  const figures: BenchFigure[] = [];
  for (const name of names) {
    const load = suites[name];
    if (!load) throw new Error(`unknown bench suite ${JSON.stringify(name)}; known: ${Object.keys(suites).join(', ')}`);
    process.stderr.write(`bench: ${name}...\n`);
    const got = await (await load()).run();
    for (const f of got) process.stderr.write(`  ${f.name}: ${f.value} ${f.unit}${f.note ? ` (${f.note})` : ''}\n`);
    figures.push(...got);
  }
  const dir = benchResultsDir;
  mkdirSync(dir, { recursive: true });
  const report = {
    date: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      memGiB: Math.round(os.totalmem() / 2 ** 30),
      kernel: os.release(),
      node: process.version,
    },
    figures,
  };
  writeFileSync(join(dir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.table(figures.map((f) => ({ suite: f.suite, name: f.name, value: f.value, unit: f.unit, note: f.note ?? '' })));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
