import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import { withNodeListFrom } from '../../src/k8s/node-list';

function node(name: string, internalIP: string | undefined, podCIDRs: string[]): V1Node {
  return { metadata: { name }, spec: { podCIDRs }, status: { addresses: internalIP ? [{ type: 'InternalIP', address: internalIP }] : [] } };
}

const nodes = [
  node('w2', '192.168.1.2', ['10.0.2.0/24', 'fd00:0:0:2::/64']),
  node('w1', '192.168.1.1', ['10.0.1.0/24']),
  node('no-address', undefined, ['10.0.3.0/24']),
  node('outside', '192.168.1.4', ['10.9.0.0/24']),
];

describe('the node list of a NodeDataplane on Kubernetes, from the Node objects (pure)', () => {
  it("lists the Nodes the controller reads, by name, in the family of the object's PodCIDR, in place of any list the object holds", () => {
    const object = {
      metadata: { name: 'w1' },
      spec: { podCIDR: '10.0.0.0/16', nodes: [{ name: 'stale', underlayAddress: '192.0.2.1', podCIDRs: [] }] },
    };
    assert.deepEqual(withNodeListFrom(object, nodes).spec, {
      podCIDR: '10.0.0.0/16',
      nodes: [
        { name: 'w1', underlayAddress: '192.168.1.1', podCIDRs: ['10.0.1.0/24'] },
        { name: 'w2', underlayAddress: '192.168.1.2', podCIDRs: ['10.0.2.0/24'] },
      ],
    });
    assert.equal(object.spec.nodes[0]!.name, 'stale', 'the object given is not changed');
  });

  it('leaves an object whose PodCIDR is missing or no CIDR as it is, for its reader to refuse', () => {
    for (const spec of [{}, { podCIDR: '10.0.0.1/16' }, { podCIDR: 16 }]) {
      const object = { metadata: { name: 'w1' }, spec };
      assert.equal(withNodeListFrom(object, nodes), object);
    }
  });
});
