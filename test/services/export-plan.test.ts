/**
 * The exporter's plan: a ServiceExport's offer from its Service and EndpointSlices (KEP-1645: a missing or
 * ExternalName Service is not exportable; a headless one exports Headless; host-network endpoints, which
 * no peer reaches, are left out and named), and its conditions from the peers' answers.
 */
import assert from 'node:assert/strict';
import { readServiceOfferSpec } from '../../src/api/service-offer';
import { parseCidr } from '../../src/net/cidr';
import { type LocalEndpointSlice, type PeerAnswer, exportConditions, planExport } from '../../src/services/export-plan';

const exported = { namespace: 'shop', name: 'cart', created: '2026-11-01T10:00:00Z' };
const podCIDRs = [parseCidr('pod', '10.0.0.0/16'), parseCidr('pod', 'fd00:b::/64')];
const service = { type: 'ClusterIP', clusterIP: '10.96.0.20', ports: [{ name: 'http', protocol: 'TCP', port: 80 }] };
const slice = (addressType: string, endpoints: LocalEndpointSlice['endpoints'], port = 8080): LocalEndpointSlice => ({
  addressType,
  ports: [{ name: 'http', protocol: 'TCP', port }],
  endpoints,
});

describe('services: the exporter’s plan', () => {
  it('offers the Service’s ports and ready endpoints as kube-proxy reads them, valid to its own schema', () => {
    const plan = planExport(
      exported,
      { ...service, sessionAffinity: 'ClientIP', sessionAffinityTimeoutSeconds: 600 },
      [
        slice('IPv4', [
          { addresses: ['10.0.1.5'], conditions: { ready: true } },
          { addresses: ['10.0.1.6'], conditions: { ready: false, terminating: true } },
          { addresses: ['10.0.1.7'] },
        ]),
        slice('IPv6', [{ addresses: ['fd00:b:0:0::9'], conditions: { ready: true } }]),
        // The same address in a second slice while the EndpointSlice controller moves it: once, ready.
        slice('IPv4', [{ addresses: ['10.0.1.6'], conditions: { ready: true } }]),
        slice('FQDN', [{ addresses: ['example.com'] }]),
      ],
      podCIDRs,
    );
    assert.equal(plan.valid.status, 'True');
    const offer = plan.offer!;
    assert.equal(offer.type, 'ClusterSetIP');
    assert.equal(offer.sessionAffinityTimeoutSeconds, 600);
    assert.deepEqual(offer.endpointGroups, [
      {
        ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
        endpoints: [
          { address: '10.0.1.5', ready: true, serving: true, terminating: false },
          { address: '10.0.1.6', ready: true, serving: true, terminating: false },
          { address: '10.0.1.7', ready: true, serving: true, terminating: false },
          { address: 'fd00:b::9', ready: true, serving: true, terminating: false },
        ],
      },
    ]);
    readServiceOfferSpec({ ...offer, clusterId: 'cluster-b', remoteClusterId: 'cluster-a' });
  });

  it('exports a headless Service as Headless and leaves out endpoints outside the PodCIDRs, or no address at all', () => {
    const plan = planExport(
      exported,
      { ...service, clusterIP: 'None' },
      [slice('IPv4', [{ addresses: ['10.0.1.5'], hostname: 'cart-0' }, { addresses: ['192.168.10.4'] }, { addresses: ['10.0.0.01'] }])],
      podCIDRs,
    );
    assert.equal(plan.offer!.type, 'Headless');
    assert.deepEqual(plan.leftOut, ['"10.0.0.01" (no IP address)', '192.168.10.4']);
    assert.equal(plan.offer!.endpointGroups[0]!.endpoints[0]!.hostname, 'cart-0');
    assert.match(
      exportConditions(plan, [])[1]!.message,
      /not offered \(no pod addresses\): "10\.0\.0\.01" \(no IP address\), 192\.168\.10\.4/,
    );
  });

  it('is not valid without a Service, or for an ExternalName one, and offers nothing', () => {
    for (const [svc, reason] of [
      [undefined, 'NoService'],
      [{ type: 'ExternalName' }, 'InvalidServiceType'],
    ] as const) {
      const plan = planExport(exported, svc, [], podCIDRs);
      assert.equal(plan.offer, undefined);
      assert.deepEqual(
        exportConditions(plan, []).map((c) => `${c.type}=${c.status}/${c.reason}`),
        [`Valid=False/${reason}`, 'Ready=False/Failed'],
      );
    }
  });

  it('is Ready once every peer imported the offer, Pending while one never answered, and tells what they found', () => {
    const plan = planExport(exported, service, [], podCIDRs);
    const answer = (peer: string, imported: [string, string, string], conflict?: [string, string]): PeerAnswer => ({
      peer,
      conditions: [
        { type: 'Imported', status: imported[0] as 'True', reason: imported[1], message: imported[2] },
        ...(conflict ? [{ type: 'Conflict', status: conflict[0] as 'True', reason: conflict[1], message: 'ports differ' }] : []),
      ],
    });
    const summary = (answers: PeerAnswer[]) => exportConditions(plan, answers).map((c) => `${c.type}=${c.status}/${c.reason}`);
    const ok = answer('cluster-a', ['True', 'Imported', 'imported'], ['False', 'NoConflict']);
    assert.deepEqual(summary([ok]), ['Valid=True/Valid', 'Ready=True/Exported', 'Conflict=False/NoConflict']);
    assert.match(exportConditions(plan, [ok])[1]!.message, /imported by cluster-a/);
    // A peer that never answered.
    assert.deepEqual(summary([ok, { peer: 'cluster-c' }]).slice(1), ['Ready=Unknown/Pending', 'Conflict=False/NoConflict']);
    const refused = answer('cluster-c', ['False', 'NamespaceMissing', 'namespace shop does not exist here']);
    const conditions = exportConditions(plan, [ok, refused, answer('cluster-d', ['True', 'Imported', 'x'], ['True', 'PortConflict'])]);
    assert.match(conditions[1]!.message, /cluster-c: NamespaceMissing: namespace shop does not exist here/);
    assert.equal(conditions[1]!.reason, 'Failed');
    assert.deepEqual(
      [conditions[2]!.status, conditions[2]!.reason, conditions[2]!.message],
      ['True', 'PortConflict', 'cluster-d: ports differ'],
    );
  });
});
