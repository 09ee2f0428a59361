/**
 * One round of a cluster's multi-cluster services: its exports offered to every established peer and to
 * itself, its imports with ClusterSetIPs (kept from round to round, the lowest free otherwise) and
 * EndpointSlices, and its exports' conditions from the importers' answers.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ExportedServiceDocument } from '../../src/api/exported-service-schema';
import { containsIp, parseCidr, parseIp } from '../../src/net/cidr';
import { allocateClusterSetIps } from '../../src/services/cluster-set-ips';
import { type ServicesInput, planServices } from '../../src/services/plan-services';
import { endpoint, offer, translations } from './offers';

const exported: ExportedServiceDocument = {
  namespace: 'shop',
  name: 'cart',
  created: '2026-11-01T09:00:00Z',
  service: { clusterIP: '10.96.0.44', ports: [{ name: 'http', port: 80 }] },
  endpointSlices: [{ addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }], endpoints: [{ addresses: ['10.0.9.9'] }] }],
};

const input = (overrides: Partial<ServicesInput> = {}): ServicesInput => ({
  us: 'cluster-a',
  translations,
  peers: ['cluster-b'],
  podCIDRs: [parseCidr('pod', '10.0.0.0/16')],
  serviceCIDRs: [parseCidr('svc', '10.96.0.0/24'), parseCidr('svc', 'fd96::/112')],
  exports: [exported],
  offersForUs: [],
  answersOnOurs: new Map(),
  previousImports: new Map(),
  namespaces: { has: () => true },
  ...overrides,
});

describe('services: a cluster’s round', () => {
  it('offers its export to each established peer and to itself, and imports it as every importer would', () => {
    const plan = planServices(
      input({
        offersForUs: [
          offer('cluster-b', {
            exportCreated: '2026-11-01T10:00:00Z',
            endpointGroups: [{ ports: [{ name: 'http', protocol: 'TCP', port: 8080 }], endpoints: [endpoint('10.0.3.4')] }],
          }),
        ],
      }),
    );
    assert.deepEqual([...plan.offers.keys()], ['cluster-a', 'cluster-b']);
    assert.equal(plan.offers.get('cluster-b')![0]!.remoteClusterId, 'cluster-b');
    assert.deepEqual(
      plan.offers.get('cluster-b')![0]!.endpointGroups[0]!.endpoints[0]!.address,
      '10.0.9.9',
      "in the exporter's own numbering",
    );
    const cart = plan.imports.get('shop/cart')!;
    assert.deepEqual(cart.clusters, ['cluster-a', 'cluster-b']);
    assert.deepEqual(cart.ips, ['10.96.0.2', 'fd96::2']);
    assert.deepEqual(
      cart.endpointSlices.map((s) => [s.cluster, s.endpoints.map((e) => e.address)]),
      [
        ['cluster-a', ['10.0.9.9']],
        ['cluster-b', ['10.71.3.4']],
      ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
    );
    // B has not answered our offer yet: Pending; we imported it ourselves.
    assert.deepEqual(
      plan.exportConditions.get('shop/cart')!.map((c) => `${c.type}=${c.status}/${c.reason}`),
      ['Valid=True/Valid', 'Ready=Unknown/Pending', 'Conflict=False/NoConflict'],
    );
    const answered = planServices(
      input({
        answersOnOurs: new Map([
          [
            'cluster-b',
            new Map([
              [
                'shop/cart',
                [
                  { type: 'Imported', status: 'True' as const, reason: 'Imported', message: '' },
                  { type: 'Conflict', status: 'False' as const, reason: 'NoConflict', message: '' },
                ],
              ],
            ]),
          ],
        ]),
      }),
    );
    assert.equal(answered.exportConditions.get('shop/cart')![1]!.reason, 'Exported');
  });

  it('keeps an import’s ClusterSetIPs and its slices from the last round', () => {
    const first = planServices(input());
    const moved = new Map([...first.imports].map(([k, d]) => [k, { ...d, ips: ['10.96.0.77', 'fd96::77'] }]));
    const second = planServices(input({ previousImports: moved }));
    assert.deepEqual(second.imports.get('shop/cart')!.ips, ['10.96.0.77', 'fd96::77']);
    assert.deepEqual(second.imports.get('shop/cart')!.endpointSlices, first.imports.get('shop/cart')!.endpointSlices);
  });

  it('does not offer what a peer’s schema would refuse (it could never answer), and says so', () => {
    const slices = [{ ...exported.endpointSlices[0]!, endpoints: [{ addresses: ['10.0.9.9'], zone: 'z'.repeat(64) }] }];
    const plan = planServices(input({ exports: [{ ...exported, endpointSlices: slices }] }));
    assert.deepEqual([...plan.offers.values()], [[], []]);
    const [valid] = plan.exportConditions.get('shop/cart')!;
    assert.deepEqual([valid!.status, valid!.reason], ['False', 'Unexportable']);
    assert.match(valid!.message, /zone/);
  });

  it('says when ClusterSetIP imports get no address: no service network', () => {
    assert.match(
      planServices(input({ serviceCIDRs: [] })).problems.join(),
      /shop\/cart get no address: the cluster has no service network/,
    );
  });

  it('offers nothing for an export that is not valid, and withdraws it from every importer', () => {
    const plan = planServices(input({ exports: [{ ...exported, service: { type: 'ExternalName' } }] }));
    assert.deepEqual([...plan.offers.values()], [[], []]);
    assert.equal(plan.imports.size, 0);
    assert.equal(plan.exportConditions.get('shop/cart')![0]!.reason, 'InvalidServiceType');
  });
});

describe('services: ClusterSetIPs of the standalone control plane', () => {
  const v4 = parseCidr('svc', '10.96.0.0/29');
  it('gives the lowest free address past the first two, skips the broadcast, and says when a network is full', () => {
    const { ips, exhausted } = allocateClusterSetIps(['a', 'b', 'c', 'd', 'e'], new Map([['c', ['10.96.0.2']]]), [v4]);
    assert.deepEqual(
      [...ips],
      [
        ['a', ['10.96.0.3']],
        ['b', ['10.96.0.4']],
        ['c', ['10.96.0.2']],
        ['d', ['10.96.0.5']],
        ['e', ['10.96.0.6']],
      ],
    );
    assert.deepEqual(exhausted, []);
    assert.deepEqual(allocateClusterSetIps(['a', 'b', 'c', 'd', 'e', 'f'], new Map(), [v4]).exhausted, [
      'f: no free address in 10.96.0.0/29',
    ]);
  });

  it('never gives one address twice, and keeps what it can (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), { maxLength: 7 }),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd'), fc.integer({ min: 0, max: 9 })), { maxLength: 6 }),
        (keys, before) => {
          const previous = new Map(before.map(([k, n]) => [k, [`10.96.0.${n}`]]));
          const { ips, exhausted } = allocateClusterSetIps(keys, previous, [v4]);
          const given = [...ips.values()].flat();
          assert.equal(new Set(given).size, given.length);
          for (const ip of given) {
            const value = parseIp('', ip).value;
            assert.ok(containsIp(v4, parseIp('', ip)) && value >= v4.base + 2n && value <= v4.base + 6n, ip);
          }
          assert.equal(given.length + exhausted.length, keys.length);
          assert.ok(given.length === Math.min(keys.length, 5));
        },
      ),
    );
  });
});
