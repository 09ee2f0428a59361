import { type NodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../src/api/node-dataplane';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';

/** Hub B as the planner plans it (test/nodespec/plan.test.ts): A remapped, C remapped, one NatMapping. */
export const hubSpecDocument = (): NodeDataplaneSpecDocument => ({
  clusterId: 'cluster-b',
  podCIDR: '10.0.0.0/16',
  externalCIDR: '10.50.0.0/24',
  transitAddress: '10.50.0.254',
  node: { name: 'b-gw', role: 'gateway', underlayAddress: '192.0.2.11' },
  activeGateway: { name: 'b-gw', underlayAddress: '192.0.2.11' },
  overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' },
  peers: [
    { clusterId: 'cluster-a', peerId: 7, remotePodCIDR: '10.1.0.0/16', remoteExternalCIDR: '10.60.0.0/24', localNATPodCIDR: '172.16.0.0/16', localNATExternalCIDR: '172.17.0.0/24', endpoint: { address: '203.0.113.1', port: 4789 }, transport: 'vxlan' },
    { clusterId: 'cluster-c', peerId: 9, remotePodCIDR: '10.2.0.0/20', remoteExternalCIDR: '10.70.0.0/24', localNATPodCIDR: '192.168.0.0/16', localNATExternalCIDR: '10.90.0.0/24', endpoint: { address: '203.0.113.3', port: 4789 }, transport: 'vxlan' },
  ],
  natMappings: [{ externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5' }],
  nodes: [
    { name: 'b-gw', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24'] },
    { name: 'b-worker', underlayAddress: '192.0.2.12', podCIDRs: ['10.0.1.0/24'] },
  ],
});

/** The same, typed (through the document's own reader). */
export const hubSpec = (): NodeDataplaneSpec => readNodeDataplaneSpec(hubSpecDocument());

/** The hub's spec with `edit` made to its document, typed through the reader. */
export function hubSpecWith(edit: (doc: NodeDataplaneSpecDocument) => void): NodeDataplaneSpec {
  const doc = hubSpecDocument();
  edit(doc);
  return readNodeDataplaneSpec(doc);
}
