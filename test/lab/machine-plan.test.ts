import assert from 'node:assert/strict';
import { join } from 'node:path';
import { InputError } from '../../src/errors';
import { machinePlan } from '../../lab/src/machine-plan';
import { defaultTopologyPath } from '../../lab/src/names';
import { loadTopology, parseTopology } from '../../lab/src/topology';

describe('lab machine plan', () => {
  it('gives the two-clusters topology three machines: MACs by machine and NIC, addresses as the netns lab derives them, a controller on each first node', () => {
    assert.deepEqual(machinePlan(loadTopology(join(defaultTopologyPath, '..', 'two-clusters.yaml'))), {
      mtu: 1500,
      networks: [
        { name: 'public', cidr: '203.0.113.0/24' },
        { name: 'underlay-cluster-a', cidr: '192.168.1.0/24' },
        { name: 'underlay-cluster-b', cidr: '192.168.2.0/24' },
      ],
      machines: [
        {
          name: 'a-gw',
          cluster: 'cluster-a',
          controller: true,
          nics: [
            { name: 'ul0', network: 'underlay-cluster-a', mac: '52:54:00:5a:01:00', address: '192.168.1.1/24' },
            { name: 'pub0', network: 'public', mac: '52:54:00:5a:01:01', address: '203.0.113.11/24' },
          ],
        },
        {
          name: 'a-w1',
          cluster: 'cluster-a',
          controller: false,
          nics: [
            { name: 'ul0', network: 'underlay-cluster-a', mac: '52:54:00:5a:02:00', address: '192.168.1.2/24' },
            { name: 'pub0', network: 'public', mac: '52:54:00:5a:02:01', address: '203.0.113.12/24' },
          ],
        },
        {
          name: 'b-gw',
          cluster: 'cluster-b',
          controller: true,
          nics: [
            { name: 'ul0', network: 'underlay-cluster-b', mac: '52:54:00:5a:03:00', address: '192.168.2.1/24' },
            { name: 'pub0', network: 'public', mac: '52:54:00:5a:03:01', address: '203.0.113.21/24' },
          ],
        },
      ],
    });
  });

  it("numbers machines across clusters in hex in the MAC, keeps each network's prefix length, and refuses more machines than a MAC byte holds", () => {
    // Clusters of 9 nodes (the most a cluster may have), then one of `last`.
    const cluster = (k: number, n: number) => ({
      id: `c${k}`,
      podCIDR: `10.${k}.0.0/16`,
      externalCIDR: `172.16.${k}.0/24`,
      underlay: k === 0 ? '192.168.0.0/16' : `192.${k}.0.0/28`,
      nodes: Array.from({ length: n }, (_, i) => ({ name: `n${k}-${i}`, podCIDR: `10.${k}.${i}.0/24` })),
    });
    const doc = (last: number) => ({
      public: '198.18.0.0/15',
      clusters: [...Array.from({ length: 28 }, (_, k) => cluster(k, 9)), cluster(28, last)],
    });
    const plan = machinePlan(parseTopology(doc(1)));
    assert.deepEqual(
      plan.machines[8]!.nics.map((n) => [n.mac, n.address]),
      [
        ['52:54:00:5a:09:00', '192.168.0.9/16'],
        ['52:54:00:5a:09:01', '198.18.0.19/15'],
      ],
    );
    assert.deepEqual(
      plan.machines[9]!.nics.map((n) => [n.mac, n.address]),
      [
        ['52:54:00:5a:0a:00', '192.1.0.1/28'],
        ['52:54:00:5a:0a:01', '198.18.0.21/15'],
      ],
    );
    assert.deepEqual(
      plan.machines[252]!.nics.map((n) => [n.name, n.mac, n.address]),
      [
        ['ul0', '52:54:00:5a:fd:00', '192.28.0.1/28'],
        ['pub0', '52:54:00:5a:fd:01', '198.18.1.35/15'],
      ],
    );
    assert.equal(machinePlan(parseTopology(doc(3))).machines.at(-1)!.nics[1].mac, '52:54:00:5a:ff:01');
    assert.throws(
      () => machinePlan(parseTopology(doc(4))),
      (e: unknown) =>
        e instanceof InputError && e.field === 'clusters' && e.value === '256 nodes' && /at most 255 machines/.test(e.message),
    );
  });

  it("refuses a cluster of more than 9 nodes (their public addresses would run into the next cluster's)", () => {
    const nodes = Array.from({ length: 10 }, (_, i) => ({ name: `n${i}`, podCIDR: `10.0.${i}.0/24` }));
    assert.throws(
      () =>
        parseTopology({
          public: '203.0.113.0/24',
          clusters: [{ id: 'big', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', underlay: '192.168.1.0/24', nodes }],
        }),
      (e: unknown) => e instanceof InputError && /clusters\/0\/nodes|clusters\[0\]\.nodes/.test(e.field) && /9/.test(e.message),
    );
  });
});
