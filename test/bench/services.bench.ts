/**
 * Multi-cluster services at size (docs/services.md): B exports one service with N endpoints to A and C
 * (test/controller/memory-lab.ts: the controllers' real rounds over an in-memory run directory), then one
 * endpoint goes unready, N from 100 to 10,000 (an offer's most). Measured per N: the two controller
 * rounds the change takes to reach A's import (B's, then A's), the writes they make (files, and the
 * EndpointSlices of A's import that changed: the O(1) writes per change per importer of the goal), and
 * the bytes of one offer.
 */
import { runDirPaths } from '../../src/api/run-dir';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import { Lab } from '../controller/memory-lab';
import { type BenchFigure, type BenchSuite, median } from './result';

const sizes = [100, 1_000, 10_000];
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

const exportOf = (n: number, unready: number) => ({
  namespace: 'shop',
  name: 'cart',
  created: '2026-01-01T00:00:00Z',
  service: { ports: [{ name: 'http', port: 80 }] },
  // 1,000 endpoints a slice, as the EndpointSlice API allows.
  endpointSlices: Array.from({ length: Math.ceil(n / 1000) }, (_, s) => ({
    addressType: 'IPv4' as const,
    ports: [{ name: 'http', port: 8080 }],
    endpoints: Array.from({ length: Math.min(1000, n - s * 1000) }, (_, i) => {
      const host = s * 1000 + i + 256;
      return { addresses: [`10.0.${host >> 8}.${host & 255}`], conditions: { ready: host - 256 !== unready } };
    }),
  })),
});

export const run: BenchSuite = async () => {
  const figures: BenchFigure[] = [];
  for (const n of sizes) {
    const lab = new Lab();
    for (const id of ['cluster-a', 'cluster-b', 'cluster-c']) lab.reconfigure(id, (doc) => (doc.serviceCIDR = '10.96.0.0/16'));
    const path = runDirPaths.exportedService('cluster-b', 'shop', 'cart');
    lab.disk.write(path, JSON.stringify(exportOf(n, -1)));
    lab.heartbeatAll();
    lab.converge();
    const samples: number[] = [];
    let files = 0;
    let slices = 0;
    for (let round = 0; round < 5; round++) {
      const before = lab.disk.json(runDirPaths.serviceImport('cluster-a', 'shop', 'cart')) as ServiceImportDocument;
      lab.disk.write(path, JSON.stringify(exportOf(n, round * 7)));
      const started = nowMs();
      lab.step('cluster-b');
      lab.step('cluster-a');
      samples.push(nowMs() - started);
      files = lab.services('cluster-b').written.length + lab.services('cluster-a').written.length;
      const after = lab.disk.json(runDirPaths.serviceImport('cluster-a', 'shop', 'cart')) as ServiceImportDocument;
      slices = after.endpointSlices.filter(
        (s) => JSON.stringify(s) !== JSON.stringify(before.endpointSlices.find((b) => b.name === s.name)),
      ).length;
      lab.converge();
    }
    const offerBytes = lab.disk.read('exchange/cluster-b/services/cluster-a/shop.cart.json')!.length;
    const label = `${n.toLocaleString('en')} endpoints`;
    figures.push(
      {
        suite: 'services',
        name: `one endpoint unready, B's and A's rounds, ${label}`,
        value: Number(median(samples).toFixed(1)),
        unit: 'ms',
        note: 'median of 5',
      },
      { suite: 'services', name: `files written by those rounds, ${label}`, value: files, unit: 'files' },
      { suite: 'services', name: `EndpointSlices of A's import changed, ${label}`, value: slices, unit: 'slices' },
      { suite: 'services', name: `one offer, ${label}`, value: Number((offerBytes / 1024).toFixed(1)), unit: 'KiB' },
    );
  }
  return figures;
};
