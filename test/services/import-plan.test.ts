/**
 * The importer's plan: KEP-1645's merge of several exports (the union of ports, the oldest export winning
 * a conflict, the conflict told to every export of the service), the reasons an offer is not imported,
 * and properties over random offers: the plan does not depend on the offers' order, every imported
 * endpoint is in the importer's view of its exporter's PodCIDR, no two imported ports clash.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { OfferedServicePort, ServiceOfferSpec } from '../../src/api/service-offer';
import { containsIp, parseIp } from '../../src/net/cidr';
import { mergeExports } from '../../src/services/merge-exports';
import { checkOffer } from '../../src/services/offer-check';
import { type ImportContext, planServiceImports } from '../../src/services/import-plan';
import { endpoint, offer, translations } from './offers';

const context: ImportContext = { translations, namespaces: new Set(['shop', 'default']) };
const checked = (spec: ServiceOfferSpec) => checkOffer(spec, translations.get(spec.clusterId)!);
const conditionOf = (conditions: readonly { type: string }[], type: string) =>
  conditions.find((c) => c.type === type) as { status: string; reason: string; message: string } | undefined;

describe('services: the importer’s plan', () => {
  it('imports one service from B (remapped) and C (distinct), its endpoints per cluster in A’s view', () => {
    const plan = planServiceImports(
      [
        offer('cluster-b', {
          endpointGroups: [{ ports: [{ name: 'http', protocol: 'TCP', port: 8080 }], endpoints: [endpoint('10.0.3.4')] }],
        }),
        offer('cluster-c', {
          endpointGroups: [{ ports: [{ name: 'http', protocol: 'TCP', port: 8080 }], endpoints: [endpoint('10.2.0.9')] }],
        }),
      ],
      context,
    );
    assert.equal(plan.imports.length, 1);
    const [cart] = plan.imports;
    assert.deepEqual(cart!.clusters, ['cluster-b', 'cluster-c']);
    assert.deepEqual(
      cart!.groups.map((g) => [g.cluster, g.endpoints.map((e) => e.address)]),
      [
        ['cluster-b', ['10.71.3.4']],
        ['cluster-c', ['10.2.0.9']],
      ],
    );
    assert.deepEqual(
      plan.answers.map((a) => a.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`)),
      [
        ['Imported=True/Imported', 'Conflict=False/NoConflict'],
        ['Imported=True/Imported', 'Conflict=False/NoConflict'],
      ],
    );
  });

  it('says why an offer is not imported: not a peer, no such namespace, refused; the others import', () => {
    const plan = planServiceImports(
      [
        offer('cluster-x'),
        offer('cluster-b', { namespace: 'billing' }),
        offer('cluster-c', { endpointGroups: [{ ports: [], endpoints: [endpoint('10.9.9.9')] }] }),
        offer('cluster-b', { name: 'web' }),
        offer('cluster-b', { name: 'web', type: 'Headless' }),
      ],
      context,
    );
    assert.deepEqual(
      plan.answers.map((a) => conditionOf(a.conditions, 'Imported')!.reason),
      ['NotPeered', 'NamespaceMissing', 'Refused', 'Imported', 'Refused'],
    );
    assert.match(
      conditionOf(plan.answers[2]!.conditions, 'Imported')!.message,
      /endpointGroups\[0\]\.endpoints\[0\]\.address.*10\.9\.9\.9/,
    );
    assert.match(conditionOf(plan.answers[4]!.conditions, 'Imported')!.message, /offers shop\/web twice/);
    assert.deepEqual(
      plan.imports.map((i) => [i.name, i.type, i.clusters]),
      [['web', 'ClusterSetIP', ['cluster-b']]],
    );
  });

  it('resolves a conflict for the oldest export and tells every export of the service', () => {
    const older = offer('cluster-c', {
      exportCreated: '2026-01-01T00:00:00Z',
      ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
      sessionAffinity: 'ClientIP',
    });
    const newer = offer('cluster-b', {
      ports: [
        { name: 'http', protocol: 'TCP', port: 8080 },
        { name: 'grpc', protocol: 'TCP', port: 9090 },
      ],
      type: 'Headless',
    });
    const plan = planServiceImports([newer, older], context);
    const [cart] = plan.imports;
    assert.equal(cart!.type, 'ClusterSetIP');
    assert.equal(cart!.sessionAffinity, 'ClientIP');
    assert.deepEqual(cart!.ports, [
      { name: 'http', protocol: 'TCP', port: 80 },
      { name: 'grpc', protocol: 'TCP', port: 9090 },
    ]);
    for (const answer of plan.answers) {
      const conflict = conditionOf(answer.conditions, 'Conflict')!;
      assert.equal(conflict.status, 'True');
      assert.equal(conflict.reason, 'TypeConflict');
      assert.match(conflict.message, /cluster cluster-b exports a Headless service, cluster cluster-c \(older, kept\) a ClusterSetIP one/);
      assert.match(conflict.message, /sessionAffinity None/);
      assert.match(conflict.message, /port "http" TCP\/8080 conflicts with cluster cluster-c's "http" TCP\/80/);
      assert.equal(conditionOf(answer.conditions, 'Imported')!.status, 'True');
    }
  });

  it('merges ports by name, then by protocol and number (KEP-1645)', () => {
    const p = (name: string | undefined, port: number, protocol: OfferedServicePort['protocol'] = 'TCP'): OfferedServicePort => ({
      ...(name ? { name } : {}),
      protocol,
      port,
    });
    const merge = (...portLists: OfferedServicePort[][]) =>
      mergeExports(
        portLists.map((ports, i) =>
          checked(offer(i % 2 ? 'cluster-b' : 'cluster-c', { ports, exportCreated: `2026-01-0${i + 1}T00:00:00Z` })),
        ),
      );
    // The same port from two exports is one port; another name at another number is added.
    assert.deepEqual(merge([p('http', 80)], [p('http', 80), p('dns', 53, 'UDP')]).ports, [p('http', 80), p('dns', 53, 'UDP')]);
    // One number under two names: the older name is kept.
    const renamed = merge([p('http', 80)], [p('web', 80)]);
    assert.deepEqual(renamed.ports, [p('http', 80)]);
    assert.equal(renamed.conflicts[0]!.reason, 'PortConflict');
    // An unnamed port cannot stand beside another (core/v1: every port of several is named).
    const unnamed = merge([p(undefined, 80)], [p('metrics', 9090)]);
    assert.deepEqual(unnamed.ports, [p(undefined, 80)]);
    assert.equal(unnamed.conflicts.length, 1);
    // Same name and number, another protocol: a conflict too.
    assert.equal(merge([p('dns', 53, 'UDP')], [p('dns', 53, 'TCP')]).conflicts.length, 1);
  });

  const portArb = fc.record({
    name: fc.option(fc.constantFrom('http', 'grpc', 'dns', 'metrics'), { nil: undefined }),
    protocol: fc.constantFrom('TCP' as const, 'UDP' as const),
    port: fc.constantFrom(53, 80, 443, 9090),
  });
  const offerArb = fc.record({
    cluster: fc.constantFrom('cluster-a', 'cluster-b', 'cluster-c'),
    name: fc.constantFrom('cart', 'web'),
    day: fc.integer({ min: 1, max: 3 }),
    type: fc.constantFrom('ClusterSetIP' as const, 'Headless' as const),
    ports: fc.uniqueArray(portArb, { minLength: 1, maxLength: 3, selector: (p) => p.name ?? '' }),
    hosts: fc.uniqueArray(fc.integer({ min: 1, max: 250 }), { maxLength: 5 }),
  });
  const own = { 'cluster-a': '10.0.0.', 'cluster-b': '10.0.5.', 'cluster-c': '10.2.0.' };
  type OfferDraw = typeof offerArb extends fc.Arbitrary<infer T> ? T : never;
  const toSpec = (o: OfferDraw): ServiceOfferSpec =>
    offer(o.cluster, {
      name: o.name,
      type: o.type,
      exportCreated: `2026-01-0${o.day}T00:00:00Z`,
      ports: o.ports.length > 1 ? o.ports.map((p, i) => ({ ...p, name: p.name ?? `p${i}` })) : o.ports,
      endpointGroups: [{ ports: [], endpoints: o.hosts.map((h) => endpoint(`${own[o.cluster]}${h}`, h % 3 !== 0)) }],
    });
  const offersArb = fc
    .uniqueArray(offerArb, { maxLength: 6, selector: (o) => `${o.cluster}/${o.name}` })
    .map((offers) => offers.map(toSpec));

  it('does not depend on the order of the offers (property)', () => {
    fc.assert(
      fc.property(offersArb, fc.func(fc.integer()), (offers, order) => {
        const shuffled = [...offers].sort((a, b) => order(a.clusterId + a.name) - order(b.clusterId + b.name));
        const byCluster = (plan: ReturnType<typeof planServiceImports>) =>
          plan.imports.map((i) => ({ ...i, groups: [...i.groups].sort((a, b) => a.cluster.localeCompare(b.cluster)) }));
        assert.deepEqual(byCluster(planServiceImports(shuffled, context)), byCluster(planServiceImports(offers, context)));
      }),
    );
  });

  it('imports every endpoint once, in its exporter’s PodCIDR as seen here, with ports that never clash (property)', () => {
    fc.assert(
      fc.property(offersArb, (offers) => {
        const plan = planServiceImports(offers, context);
        for (const service of plan.imports) {
          const names = service.ports.map((p) => p.name ?? '');
          assert.equal(new Set(names).size, names.length);
          assert.equal(new Set(service.ports.map((p) => `${p.protocol}/${p.port}`)).size, service.ports.length);
          if (service.ports.length > 1) assert.ok(service.ports.every((p) => p.name !== undefined));
          for (const group of service.groups)
            for (const e of group.endpoints)
              assert.ok(
                translations.get(group.cluster)!.some((t) => containsIp(t.seen, parseIp('', e.address))),
                e.address,
              );
          const admitted = plan.answers.filter((a) => a.conditions.some((c) => c.type === 'Imported' && c.status === 'True'));
          const exported = offers.filter(
            (o) => o.name === service.name && admitted.some((a) => a.cluster === o.clusterId && a.name === o.name),
          );
          const count = (n: number, g: { endpoints: readonly unknown[] }) => n + g.endpoints.length;
          assert.equal(
            service.groups.reduce(count, 0),
            exported.reduce((n, o) => n + o.endpointGroups.reduce(count, 0), 0),
          );
          const oldest = [...exported].sort(
            (a, b) => a.exportCreated.localeCompare(b.exportCreated) || a.clusterId.localeCompare(b.clusterId),
          )[0]!;
          assert.equal(service.type, oldest.type);
          const conflicted = admitted
            .filter((a) => a.name === service.name)
            .map((a) => a.conditions.find((c) => c.type === 'Conflict')!.status);
          assert.ok(
            conflicted.every((s) => s === conflicted[0]),
            'every export of a service is told the same',
          );
        }
      }),
    );
  });
});
