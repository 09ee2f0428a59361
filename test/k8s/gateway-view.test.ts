import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { withGateways } from '../../src/k8s/gateway-view';

const gateways = (spec: unknown) => ({ metadata: { name: 'a' }, spec });
const ours = {
  activeGateway: { name: 'n3', underlayAddress: '192.0.2.13' },
  peers: [
    { clusterId: 'b', endpoint: { address: '203.0.113.2', port: 4789 } },
    { clusterId: 'z', endpoint: { address: '203.0.113.26', port: 4789 } },
  ],
};

describe('the gateways of a NodeDataplane on Kubernetes, from the StraitGateway (pure)', () => {
  it("sets the active gateway and each listed peer's endpoint, in place of what the object holds, and leaves a peer the StraitGateway does not list as it is", () => {
    const object = {
      metadata: { name: 'n1' },
      spec: {
        clusterId: 'a',
        node: { name: 'n1' },
        activeGateway: { name: 'stale', underlayAddress: '192.0.2.99' },
        peers: [{ clusterId: 'b', endpoint: { address: '192.0.2.98', port: 1 } }, { clusterId: 'c' }],
      },
    };
    assert.deepEqual(withGateways(object, gateways(ours)).spec, {
      clusterId: 'a',
      node: { name: 'n1' },
      activeGateway: { name: 'n3', underlayAddress: '192.0.2.13' },
      standbyGateways: [],
      peers: [{ clusterId: 'b', endpoint: { address: '203.0.113.2', port: 4789 } }, { clusterId: 'c' }],
    });
    assert.equal(object.spec.activeGateway.name, 'stale', 'the object given is not changed');
  });

  it('leaves the object as it is without a StraitGateway (its reader says what is missing)', () => {
    const object = { metadata: { name: 'n1' }, spec: { clusterId: 'a' } };
    assert.equal(withGateways(object, undefined), object);
  });

  it('refuses a StraitGateway that is not one, naming it, the field and the value', () => {
    const bad: [unknown, RegExp][] = [
      [
        { ...ours, activeGateway: { name: 'n3', underlayAddress: '192.0.2.300' } },
        /^StraitGateway a: spec\.activeGateway\.underlayAddress: .*192\.0\.2\.300/,
      ],
      [{ peers: [] }, /^StraitGateway a: spec\.activeGateway: is missing/],
      [{ ...ours, peers: [{ clusterId: 'b' }] }, /^StraitGateway a: spec\.peers\[0\]\.endpoint: is missing/],
      [undefined, /^StraitGateway a: spec: expected an object/],
    ];
    for (const [spec, message] of bad)
      assert.throws(
        () => withGateways({ metadata: { name: 'n1' }, spec: { clusterId: 'a', peers: [] } }, gateways(spec)),
        (err: unknown) => err instanceof InputError && message.test(err.message),
        JSON.stringify(spec),
      );
  });
});
