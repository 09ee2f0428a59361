/**
 * The lab's service proxy (kube-proxy's nftables shape): each ClusterSetIP and port DNATed at random to a
 * ready endpoint of its family on the port of the same name, a hairpin masqueraded, a port with no ready
 * endpoint rejected; the ruleset is one nft can load (checked by nft itself in a namespace of the test).
 */
import assert from 'node:assert/strict';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import { nft } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { serviceProxyRules } from '../../lab/src/service-proxy';
import { requireRoot, uniqueName } from '../support/kernel';

const endpoint = (address: string, ready = true) => ({ address, ready, serving: ready, terminating: false });
const cart: ServiceImportDocument = {
  namespace: 'default',
  name: 'cart',
  type: 'ClusterSetIP',
  ips: ['10.96.0.3', 'fd96::3'],
  ports: [
    { name: 'http', protocol: 'TCP', port: 80 },
    { name: 'dns', protocol: 'UDP', port: 53 },
  ],
  sessionAffinity: 'None',
  clusters: ['cluster-b', 'cluster-c'],
  endpointSlices: [
    {
      name: 'imported-cart-cluster-b-0',
      cluster: 'cluster-b',
      addressType: 'IPv4',
      ports: [
        { name: 'http', protocol: 'TCP', port: 8080 },
        { name: 'dns', protocol: 'UDP', port: 5353 },
      ],
      endpoints: [endpoint('10.1.1.10'), endpoint('10.1.1.11', false)],
    },
    {
      name: 'imported-cart-cluster-c-0',
      cluster: 'cluster-c',
      addressType: 'IPv4',
      ports: [{ name: 'http', protocol: 'TCP', port: 8081 }],
      endpoints: [endpoint('172.20.1.10')],
    },
    {
      name: 'imported-cart-cluster-c-1',
      cluster: 'cluster-c',
      addressType: 'IPv6',
      ports: [{ name: 'http', protocol: 'TCP', port: 8081 }],
      endpoints: [endpoint('fd00:c::10')],
    },
  ],
};

describe('lab: the service proxy’s rules', function () {
  requireRoot(this);
  const rules = serviceProxyRules([cart, { ...cart, name: 'headless', type: 'Headless', ips: [] }]);

  it('DNATs each ClusterSetIP and port to its ready endpoints of its family, on their port of the same name', () => {
    const lines = rules.split('\n').map((l) => l.trim());
    assert.deepEqual(
      lines.filter((l) => l.includes('daddr')),
      [
        'ip daddr 10.96.0.3 tcp dport 80 goto svc-0',
        'ip daddr 10.96.0.3 udp dport 53 goto svc-1',
        'ip6 daddr fd96::3 tcp dport 80 goto svc-2',
        // No IPv6 endpoint has a port named dns: refused, as kube-proxy does.
        'ip6 daddr fd96::3 udp dport 53 reject',
      ],
    );
    assert.deepEqual(
      lines.filter((l) => l.includes('dnat')),
      [
        'meta l4proto tcp dnat ip to 10.1.1.10:8080',
        'meta l4proto tcp dnat ip to 172.20.1.10:8081',
        'meta l4proto udp dnat ip to 10.1.1.10:5353',
        'meta l4proto tcp dnat ip6 to [fd00:c::10]:8081',
      ],
      'the unready endpoint is in no rotation; a headless service has no address to DNAT',
    );
    assert.ok(lines.includes('numgen random mod 2 vmap { 0 : goto svc-0-0, 1 : goto svc-0-1 }'));
    assert.ok(lines.includes('ip saddr 10.1.1.10 meta mark set meta mark | 0x4000'), 'a pod reaching itself is masqueraded');
  });

  it('is a ruleset nft loads', () => {
    const ns = uniqueName('strait-test-proxy');
    createNetns(ns);
    try {
      nft(`${rules}\n`, ns);
      assert.match(nft('list table inet strait-lab-proxy\n', ns), /numgen random mod 2/);
    } finally {
      deleteNetns(ns);
    }
  });
});
