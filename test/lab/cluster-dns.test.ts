/**
 * The lab's clusterset DNS (the stand-in for CoreDNS's multicluster plugin): KEP-1645's names answered
 * from a cluster's imports, in both families, for ClusterSetIP and Headless services; NXDOMAIN, NODATA and
 * REFUSED where a server authoritative for clusterset.local alone answers so; real DNS packets.
 */
import assert from 'node:assert/strict';
import dnsPacket from 'dns-packet';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import { answerQuestion, respond } from '../../lab/src/cluster-dns';

const endpoint = (address: string, ready = true, hostname?: string) => ({
  address,
  ready,
  serving: ready,
  terminating: false,
  ...(hostname ? { hostname } : {}),
});
const slice = (cluster: string, addressType: 'IPv4' | 'IPv6', endpoints: ReturnType<typeof endpoint>[]) => ({
  name: `imported-${cluster}-${addressType}`,
  cluster,
  addressType,
  ports: [],
  endpoints,
});
const imports: ServiceImportDocument[] = [
  {
    namespace: 'default',
    name: 'cart',
    type: 'ClusterSetIP',
    ips: ['10.96.0.3', 'fd96::3'],
    ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
    sessionAffinity: 'None',
    clusters: ['cluster-b'],
    endpointSlices: [slice('cluster-b', 'IPv4', [endpoint('10.1.1.10')])],
  },
  {
    namespace: 'db',
    name: 'pg',
    type: 'Headless',
    ips: [],
    ports: [],
    sessionAffinity: 'None',
    clusters: ['cluster-b', 'cluster-c'],
    endpointSlices: [
      slice('cluster-b', 'IPv4', [endpoint('10.1.1.10', true, 'pg-0'), endpoint('10.1.1.11', false, 'pg-1')]),
      slice('cluster-c', 'IPv4', [endpoint('172.20.1.10', true, 'pg-0')]),
      slice('cluster-c', 'IPv6', [endpoint('fd00:c::10', true, 'pg-0')]),
    ],
  },
];

describe('lab: the clusterset DNS', () => {
  const ask = (name: string, type: string) => answerQuestion(imports, name, type);

  it("answers a ClusterSetIP service's name with its ClusterSetIP of the family asked", () => {
    assert.deepEqual(ask('cart.default.svc.clusterset.local', 'A'), { rcode: 0, addresses: ['10.96.0.3'] });
    assert.deepEqual(ask('Cart.Default.svc.clusterset.local.', 'AAAA'), { rcode: 0, addresses: ['fd96::3'] });
    assert.deepEqual(ask('cart.default.svc.clusterset.local', 'TXT'), { rcode: 0, addresses: [] }, 'NODATA');
  });

  it("answers a Headless service's name with its ready endpoints, and each endpoint's own name (KEP-1645)", () => {
    assert.deepEqual(ask('pg.db.svc.clusterset.local', 'A').addresses, ['10.1.1.10', '172.20.1.10']);
    assert.deepEqual(ask('pg.db.svc.clusterset.local', 'AAAA').addresses, ['fd00:c::10']);
    assert.deepEqual(ask('pg-0.cluster-c.pg.db.svc.clusterset.local', 'A').addresses, ['172.20.1.10']);
    assert.deepEqual(ask('pg-1.cluster-b.pg.db.svc.clusterset.local', 'A'), { rcode: 0, addresses: [] }, 'unready: no address');
  });

  it('says NXDOMAIN for what is not imported here, REFUSED outside clusterset.local', () => {
    for (const name of [
      'web.default.svc.clusterset.local',
      'cart.shop.svc.clusterset.local',
      'pg-0.cluster-b.cart.default.svc.clusterset.local',
      'pg-9.cluster-b.pg.db.svc.clusterset.local',
      'x.cart.default.svc.clusterset.local',
    ])
      assert.equal(ask(name, 'A').rcode, 3, name);
    for (const name of ['example.com', 'cart.default.svc.cluster.local', 'svc.clusterset.local'])
      assert.equal(ask(name, 'A').rcode, 5, name);
  });

  it('speaks DNS: a response to each query packet, authoritative, with its id and question; nothing for garbage', () => {
    const query = dnsPacket.encode({ type: 'query', id: 4242, questions: [{ type: 'A', name: 'cart.default.svc.clusterset.local' }] });
    const response = dnsPacket.decode(respond(imports, query)!);
    assert.equal(response.id, 4242);
    assert.equal(response.flag_aa, true);
    assert.deepEqual(
      response.answers?.map((a) => [a.type, 'data' in a ? a.data : undefined]),
      [['A', '10.96.0.3']],
    );
    const missing = dnsPacket.decode(
      respond(imports, dnsPacket.encode({ type: 'query', id: 1, questions: [{ type: 'A', name: 'nope.default.svc.clusterset.local' }] }))!,
    );
    assert.equal((missing as unknown as { rcode: string }).rcode, 'NXDOMAIN');
    assert.equal(respond(imports, Buffer.from('not dns')), undefined);
  });
});
