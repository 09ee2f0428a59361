/**
 * Multi-cluster services on the standalone control plane: the three clusters of three-clusters.ts (A-B
 * overlapping, B-C distinct), B and C exporting shop/cart, stepped as the controllers step. Every file
 * the round writes is the one a real run writes (src/controller/files/services.ts).
 */
import assert from 'node:assert/strict';
import type { ExportedServiceDocument } from '../../src/api/exported-service-schema';
import { runDirPaths } from '../../src/api/run-dir';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import { containsIp, formatIp, parseCidr, parseIp, translateIp } from '../../src/net/cidr';
import { Lab } from './memory-lab';

const cart = (hosts: string[], ready = (_: string) => true): Omit<ExportedServiceDocument, 'created'> => ({
  namespace: 'shop',
  name: 'cart',
  service: { clusterIP: '10.96.5.5', ports: [{ name: 'http', port: 80 }] },
  endpointSlices: [
    {
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: hosts.map((h) => ({ addresses: [h], conditions: { ready: ready(h) } })),
    },
  ],
});

function servicesLab(): Lab {
  const lab = new Lab();
  for (const [id, range] of [
    ['cluster-a', '10.96.0.0/16'],
    ['cluster-b', '10.96.0.0/16'],
    ['cluster-c', '10.97.0.0/16'],
  ] as const)
    lab.reconfigure(id, (doc) => (doc.serviceCIDR = range));
  lab.disk.write(
    runDirPaths.exportedService('cluster-b', 'shop', 'cart'),
    JSON.stringify({ ...cart(['10.0.1.10', '10.0.1.11']), created: '2026-01-01T00:00:00Z' }),
  );
  lab.disk.write(
    runDirPaths.exportedService('cluster-c', 'shop', 'cart'),
    JSON.stringify({ ...cart(['10.2.1.10']), created: '2026-01-02T00:00:00Z' }),
  );
  lab.heartbeatAll();
  lab.converge();
  return lab;
}

const imported = (lab: Lab, cluster: string) =>
  lab.disk.read(runDirPaths.serviceImport(cluster, 'shop', 'cart')) === undefined
    ? undefined
    : (lab.disk.json(runDirPaths.serviceImport(cluster, 'shop', 'cart')) as ServiceImportDocument);
const endpointsOf = (doc: ServiceImportDocument | undefined) =>
  doc?.endpointSlices.flatMap((s) => s.endpoints.map((e) => `${s.cluster} ${e.address}${e.ready ? '' : ' unready'}`)).sort();
const conditionsOf = (lab: Lab, cluster: string) =>
  (
    lab.disk.json(runDirPaths.exportStatus(cluster, 'shop', 'cart')) as {
      conditions: { type: string; status: string; reason: string; message: string }[];
    }
  ).conditions;

describe('controller: multi-cluster services on the run directory (three clusters, in memory)', () => {
  it('imports each export where its exporter is peered, endpoints in the importer’s view, with a ClusterSetIP of its own', () => {
    const lab = servicesLab();
    // A is peered with B only; B's pods (10.0.0.0/16, A's own PodCIDR too) are seen in A's remap of them.
    const a = imported(lab, 'cluster-a')!;
    const seen = lab.tunnel('cluster-a', 'cluster-b').remotePodCIDR!;
    assert.notEqual(seen, '10.0.0.0/16');
    assert.deepEqual(a.clusters, ['cluster-b']);
    for (const e of a.endpointSlices.flatMap((s) => s.endpoints))
      assert.ok(containsIp(parseCidr('', seen), parseIp('', e.address)), e.address);
    assert.deepEqual(a.ips, ['10.96.0.2']);
    // B imports its own and C's (C's PodCIDR is free in B: kept); C imports B's and its own.
    const cInB = translateIp(
      parseIp('', '10.2.1.10'),
      parseCidr('', '10.2.0.0/20'),
      parseCidr('', lab.tunnel('cluster-b', 'cluster-c').remotePodCIDR!),
    );
    assert.deepEqual(endpointsOf(imported(lab, 'cluster-b')), [
      'cluster-b 10.0.1.10',
      'cluster-b 10.0.1.11',
      `cluster-c ${formatIp(cInB)}`,
    ]);
    assert.deepEqual(imported(lab, 'cluster-c')!.clusters, ['cluster-b', 'cluster-c']);
    assert.deepEqual(imported(lab, 'cluster-c')!.ips, ['10.97.0.2']);
    // Every importer answered B's offers: Ready, and no conflict (same ports and type).
    assert.deepEqual(
      conditionsOf(lab, 'cluster-b').map((c) => `${c.type}=${c.status}/${c.reason}`),
      ['Valid=True/Valid', 'Ready=True/Exported', 'Conflict=False/NoConflict'],
    );
    assert.equal(lab.converge(), 1, 'a converged lab writes nothing more');
  });

  it('follows an endpoint going unready with one slice and one offer written per importer', () => {
    const lab = servicesLab();
    const before = new Map(lab.disk.files);
    lab.disk.write(
      runDirPaths.exportedService('cluster-b', 'shop', 'cart'),
      JSON.stringify({ ...cart(['10.0.1.10', '10.0.1.11'], (h) => h !== '10.0.1.11'), created: '2026-01-01T00:00:00Z' }),
    );
    lab.converge();
    assert.ok(endpointsOf(imported(lab, 'cluster-a'))!.some((e) => e.endsWith(' unready')));
    const changed = [...lab.disk.files]
      .filter(([path, text]) => before.get(path) !== text)
      .map(([path]) => path)
      .sort();
    assert.deepEqual(changed, [
      'cluster-a/imports/shop.cart.json',
      'cluster-b/imports/shop.cart.json',
      'cluster-b/services/shop.cart.json',
      'cluster-c/imports/shop.cart.json',
      'exchange/cluster-b/services/cluster-a/shop.cart.json',
      'exchange/cluster-b/services/cluster-a/shop.cart.status.json',
      'exchange/cluster-b/services/cluster-c/shop.cart.json',
      'exchange/cluster-b/services/cluster-c/shop.cart.status.json',
    ]);
    const offer = lab.disk.json('exchange/cluster-b/services/cluster-a/shop.cart.json') as { generation: number };
    const answer = lab.disk.json('exchange/cluster-b/services/cluster-a/shop.cart.status.json') as { observedGeneration: number };
    assert.deepEqual([offer.generation, answer.observedGeneration], [2, 2]);
  });

  it('refuses a forged offer whole, says so to its exporter, and imports nothing of it', () => {
    const lab = servicesLab();
    const path = 'exchange/cluster-b/services/cluster-a/shop.cart.json';
    const offer = lab.disk.json(path) as { generation: number; spec: { endpointGroups: { endpoints: { address: string }[] }[] } };
    offer.spec.endpointGroups[0]!.endpoints.push({ ...offer.spec.endpointGroups[0]!.endpoints[0]!, address: '192.168.1.1' });
    lab.disk.write(path, JSON.stringify({ ...offer, generation: offer.generation + 1 }));
    lab.step('cluster-a');
    assert.equal(imported(lab, 'cluster-a'), undefined, 'nothing of it is imported');
    const answer = lab.disk.json(`${path.slice(0, -'.json'.length)}.status.json`) as {
      conditions: { type: string; reason: string; message: string }[];
    };
    assert.equal(answer.conditions[0]!.reason, 'Refused');
    assert.match(answer.conditions[0]!.message, /spec\.endpointGroups\[0\]\.endpoints\[2\]\.address.*192\.168\.1\.1/);
    lab.step('cluster-b');
    const ready = conditionsOf(lab, 'cluster-b').find((c) => c.type === 'Ready')!;
    assert.equal(ready.reason, 'Failed');
    assert.match(ready.message, /cluster-a: Refused/);
    // The owner writes its offer again (it owns the file), and the import comes back.
    lab.converge();
    assert.deepEqual(imported(lab, 'cluster-a')!.clusters, ['cluster-b']);
  });

  it('takes a peer’s endpoints away with its peering, and an export withdrawn from every importer', () => {
    const lab = servicesLab();
    lab.reconfigure('cluster-c', (doc) => (doc.peers = []));
    lab.converge();
    assert.deepEqual(imported(lab, 'cluster-b')!.clusters, ['cluster-b']);
    assert.equal(lab.disk.read('exchange/cluster-b/services/cluster-c/shop.cart.json'), undefined, 'no offer to a peer gone');
    lab.disk.remove(runDirPaths.exportedService('cluster-b', 'shop', 'cart'));
    lab.converge();
    assert.equal(imported(lab, 'cluster-a'), undefined);
    assert.equal(imported(lab, 'cluster-b'), undefined);
    assert.deepEqual(
      [...lab.disk.files.keys()].filter((p) => (p.includes('/services/') || p.includes('/imports/')) && !p.startsWith('cluster-c/')),
      [],
      'nothing of the service is left but C’s own export and import',
    );
  });

  it('imports a Service named status like any other, and answers an offer it cannot read Refused, naming why', () => {
    const lab = servicesLab();
    lab.disk.write(
      runDirPaths.exportedService('cluster-b', 'shop', 'status'),
      JSON.stringify({ ...cart(['10.0.1.10']), name: 'status', created: '2026-01-01T00:00:00Z' }),
    );
    lab.converge();
    assert.equal((lab.disk.json(runDirPaths.serviceImport('cluster-a', 'shop', 'status')) as ServiceImportDocument).name, 'status');
    assert.equal(conditionsOf(lab, 'cluster-b')[1]!.reason, 'Exported');
    // B's offer of cart to A, garbled: A answers Refused on shop/cart with the reason, and imports nothing of it.
    const path = 'exchange/cluster-b/services/cluster-a/shop.cart.json';
    lab.disk.write(path, '{"generation": 9, "spec": {"clusterId": "cluster-b"}}');
    lab.step('cluster-a');
    const answer = lab.disk.json(`${path.slice(0, -'.json'.length)}.status.json`) as { conditions: { reason: string; message: string }[] };
    assert.equal(answer.conditions[0]!.reason, 'Refused');
    assert.match(answer.conditions[0]!.message, /spec/);
    assert.equal(imported(lab, 'cluster-a'), undefined);
  });
});
