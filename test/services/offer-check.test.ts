/**
 * An importer's checks of a peer's ServiceOffer: endpoints translated into the importer's view (the
 * remapped PodCIDR of an overlapping peer, the same address of a distinct one, per family), and every
 * refusal naming the field and the value, so no part of a bad offer is imported.
 */
import assert from 'node:assert/strict';
import { readServiceOfferSpec } from '../../src/api/service-offer';
import { InputError } from '../../src/errors';
import { checkOffer } from '../../src/services/offer-check';
import { endpoint, offer, translations } from './offers';

const http = [{ name: 'http', protocol: 'TCP' as const, port: 8080 }];
const refusal = (field: string, value: unknown, reason: RegExp) => (err: unknown) =>
  err instanceof InputError && err.field === field && err.value === value && reason.test(err.reason);

describe('services: an offer checked by its importer', () => {
  it('translates an overlapping peer into its remapped PodCIDR, host bits kept, and splits the families', () => {
    const checked = checkOffer(
      offer('cluster-b', { endpointGroups: [{ ports: http, endpoints: [endpoint('10.0.1.10'), endpoint('fd00:b::1:10', false)] }] }),
      translations.get('cluster-b')!,
    );
    assert.deepEqual(
      checked.groups.map((g) => [g.addressType, g.endpoints.map((e) => [e.address, e.ready])]),
      [
        ['IPv4', [['10.71.1.10', true]]],
        ['IPv6', [['fd00:71::1:10', false]]],
      ],
    );
    assert.equal(checked.cluster, 'cluster-b');
  });

  it('keeps the address of a peer whose PodCIDR is distinct', () => {
    const checked = checkOffer(
      offer('cluster-c', { endpointGroups: [{ ports: http, endpoints: [endpoint('10.2.0.7')] }] }),
      translations.get('cluster-c')!,
    );
    assert.deepEqual(checked.groups[0]!.endpoints[0]!.address, '10.2.0.7');
  });

  it('merges two groups of the same ports (in another order) and refuses an address listed twice in them', () => {
    const two = [
      { name: 'a', protocol: 'TCP' as const, port: 1 },
      { name: 'b', protocol: 'UDP' as const, port: 2 },
    ];
    const spec = offer('cluster-c', {
      endpointGroups: [
        { ports: two, endpoints: [endpoint('10.2.0.1')] },
        { ports: [...two].reverse(), endpoints: [endpoint('10.2.0.2')] },
      ],
    });
    assert.equal(checkOffer(spec, translations.get('cluster-c')!).groups.length, 1);
    // The same ports with their fields in another order are the same group too.
    const reordered = offer('cluster-c', {
      endpointGroups: [
        { ports: [{ name: 'a', protocol: 'TCP', port: 1 }], endpoints: [endpoint('10.2.0.1')] },
        { ports: [{ port: 1, protocol: 'TCP', name: 'a' }], endpoints: [endpoint('10.2.0.1')] },
      ],
    });
    assert.throws(
      () => checkOffer(reordered, translations.get('cluster-c')!),
      refusal('spec.endpointGroups[1].endpoints[0].address', '10.2.0.1', /listed twice/),
    );
    spec.endpointGroups[1]!.endpoints.push(endpoint('10.2.0.1'));
    assert.throws(
      () => checkOffer(spec, translations.get('cluster-c')!),
      refusal('spec.endpointGroups[1].endpoints[1].address', '10.2.0.1', /listed twice/),
    );
  });

  const refused: [string, Parameters<typeof offer>[1], string, unknown, RegExp][] = [
    [
      'an endpoint outside the peer’s PodCIDRs (its node, or a pod of another cluster)',
      { endpointGroups: [{ ports: http, endpoints: [endpoint('10.0.1.10'), endpoint('192.168.1.5')] }] },
      'spec.endpointGroups[0].endpoints[1].address',
      '192.168.1.5',
      /not a pod address of cluster cluster-b/,
    ],
    [
      'an IPv6 endpoint of a peer with no IPv6 PodCIDR known here',
      { clusterId: 'cluster-c', endpointGroups: [{ ports: http, endpoints: [endpoint('fd00:c::1')] }] },
      'spec.endpointGroups[0].endpoints[0].address',
      'fd00:c::1',
      /not a pod address/,
    ],
    [
      'an unnamed port beside another',
      {
        ports: [
          { name: 'http', protocol: 'TCP', port: 80 },
          { protocol: 'TCP', port: 81 },
        ],
      },
      'spec.ports[1].name',
      undefined,
      /required where a service has more than one port/,
    ],
    [
      'two ports of one name',
      {
        ports: [
          { name: 'http', protocol: 'TCP', port: 80 },
          { name: 'http', protocol: 'UDP', port: 80 },
        ],
      },
      'spec.ports[1].name',
      'http',
      /also the name of spec.ports\[0\]/,
    ],
    [
      'two ports of one protocol and number',
      {
        ports: [
          { name: 'a', protocol: 'TCP', port: 80 },
          { name: 'b', protocol: 'TCP', port: 80 },
        ],
      },
      'spec.ports[1]',
      'TCP/80',
      /also spec.ports\[0\]/,
    ],
    ['a ClusterSetIP service without ports', { ports: [] }, 'spec.ports', undefined, /at least one port/],
    [
      'a ClientIP timeout without ClientIP affinity',
      { sessionAffinityTimeoutSeconds: 30 },
      'spec.sessionAffinityTimeoutSeconds',
      30,
      /ClientIP only/,
    ],
  ];
  for (const [what, overrides, field, value, reason] of refused)
    it(`refuses ${what}, naming the field`, () => {
      const spec = offer('cluster-b', overrides);
      assert.throws(
        () => checkOffer(spec, translations.get(spec.clusterId)!),
        (err: unknown) =>
          err instanceof InputError && err.field === field && (value === undefined || err.value === value) && reason.test(err.reason),
      );
    });

  it(`refuses more endpoints than an offer carries`, () => {
    const many = Array.from({ length: 10_001 }, (_, i) => endpoint(`10.0.${i >> 8}.${i & 255}`));
    const spec = offer('cluster-b', {
      endpointGroups: [
        { ports: http, endpoints: many.slice(0, 6000) },
        { ports: [], endpoints: many.slice(6000) },
      ],
    });
    assert.throws(
      () => checkOffer(spec, translations.get('cluster-b')!),
      refusal('spec.endpointGroups', 10_001, /at most 10000 endpoints/),
    );
  });

  it('is refused by its schema where a field is malformed, the field named', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: 'Cart' }, /spec\.name/],
      [{ name: '1cart' }, /spec\.name/],
      [{ namespace: 'a.b' }, /spec\.namespace/],
      [{ type: 'LoadBalancer' }, /spec\.type/],
      [{ exportCreated: 'yesterday' }, /spec\.exportCreated/],
      [
        { endpointGroups: [{ ports: [], endpoints: [{ address: '10.0.0.1', ready: true, serving: true, terminating: false, extra: 1 }] }] },
        /extra/,
      ],
      [{ ports: [{ name: 'http', protocol: 'ICMP', port: 80 }] }, /spec\.ports\/0\/protocol|spec\.ports\[0\]\.protocol/],
    ];
    for (const [overrides, field] of cases)
      assert.throws(
        () => readServiceOfferSpec({ ...offer('cluster-b'), ...overrides }),
        (err: unknown) => err instanceof InputError && field.test(err.message),
        JSON.stringify(overrides),
      );
    assert.deepEqual(readServiceOfferSpec(offer('cluster-b')), offer('cluster-b'));
  });
});
