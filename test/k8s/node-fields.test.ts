/** What Strait's caches keep of a Node: what cluster-nodes.ts reads, so reading the kept Node gives the same nodes. */
import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import { clusterNodes, gatewayCandidateLabel, publicAddressAnnotation } from '../../src/k8s/cluster-nodes';
import { nodeReadFields } from '../../src/k8s/node-fields';
import { parseCidr } from '../../src/net/cidr';

const node = (name: string, heartbeat: string): V1Node => ({
  metadata: {
    name,
    uid: `uid-${name}`,
    resourceVersion: '12',
    labels: { [gatewayCandidateLabel]: 'true', 'kubernetes.io/os': 'linux' },
    annotations: { [publicAddressAnnotation]: '203.0.113.7', 'node.alpha.kubernetes.io/ttl': '0' },
    managedFields: [{ manager: 'kubelet', operation: 'Update' }],
  },
  spec: { podCIDR: '10.0.1.0/24', podCIDRs: ['10.0.1.0/24'], providerID: 'kind://x' },
  status: {
    addresses: [
      { type: 'InternalIP', address: '172.18.0.2' },
      { type: 'Hostname', address: name },
    ],
    conditions: [
      { type: 'MemoryPressure', status: 'False', lastHeartbeatTime: new Date(heartbeat) },
      { type: 'Ready', status: 'True', lastHeartbeatTime: new Date(heartbeat), reason: 'KubeletReady' },
    ],
    images: [{ names: ['registry.k8s.io/pause:3.9'], sizeBytes: 300_000 }],
    capacity: { cpu: '2' },
  },
});

describe('node fields kept', () => {
  it('keeps what clusterNodes reads: the nodes read from the kept Node are the same', () => {
    const full = [node('n1', '2026-01-01T00:00:00Z'), node('n2', '2026-01-01T00:00:00Z')];
    const cidr = parseCidr('podCIDR', '10.0.0.0/16');
    assert.deepEqual(clusterNodes(full.map(nodeReadFields), [cidr]), clusterNodes(full, [cidr]));
  });

  it('drops what Strait never reads, and the heartbeat times, so a status report changes nothing kept', () => {
    const kept = nodeReadFields(node('n1', '2026-01-01T00:00:00Z'));
    assert.deepEqual(kept, {
      metadata: {
        name: 'n1',
        uid: 'uid-n1',
        resourceVersion: '12',
        labels: { [gatewayCandidateLabel]: 'true', 'kubernetes.io/os': 'linux' },
        annotations: { [publicAddressAnnotation]: '203.0.113.7' },
      },
      spec: { podCIDR: '10.0.1.0/24', podCIDRs: ['10.0.1.0/24'] },
      status: {
        addresses: [
          { type: 'InternalIP', address: '172.18.0.2' },
          { type: 'Hostname', address: 'n1' },
        ],
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    });
    assert.deepEqual(nodeReadFields(node('n1', '2026-01-01T00:05:00Z')), kept);
  });
});
