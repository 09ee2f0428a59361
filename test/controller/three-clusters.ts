/**
 * Three clusters' controller configurations: A and B share PodCIDR and ExternalCIDR (both remapped on
 * both sides), C has a /20 PodCIDR and a /25 ExternalCIDR. Peerings A-B and B-C; B reflects a pod of C
 * into A.
 */
export const threeClusters: Record<string, Record<string, unknown>> = {
  'cluster-a': {
    clusterId: 'cluster-a',
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.200.0.0/24',
    peers: ['cluster-b'],
    nodes: [
      { name: 'a-gw', underlayAddress: '192.168.1.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.1' },
      { name: 'a-w1', underlayAddress: '192.168.1.2', podCIDRs: ['10.0.1.0/24'] },
    ],
  },
  'cluster-b': {
    clusterId: 'cluster-b',
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.200.0.0/24',
    peers: ['cluster-a', 'cluster-c'],
    reflections: [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '10.2.1.10' }],
    nodes: [
      { name: 'b-gw', underlayAddress: '192.168.2.1', podCIDRs: ['10.0.0.0/24'], publicAddress: '203.0.113.2' },
      { name: 'b-w1', underlayAddress: '192.168.2.2', podCIDRs: ['10.0.1.0/24'], publicAddress: '203.0.113.3' },
    ],
  },
  'cluster-c': {
    clusterId: 'cluster-c',
    podCIDR: '10.2.0.0/20',
    externalCIDR: '10.201.0.0/25',
    peers: ['cluster-b'],
    nodes: [
      { name: 'c-w1', underlayAddress: '192.168.3.2', podCIDRs: ['10.2.1.0/24'] },
      { name: 'c-gw', underlayAddress: '192.168.3.1', podCIDRs: ['10.2.0.0/24'] },
    ],
  },
};
