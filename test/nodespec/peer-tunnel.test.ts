import assert from 'node:assert/strict';
import fc from 'fast-check';
import { derivedMac, peeringVni, tunnelMac } from '../../src/nodespec/peer-tunnel';

describe('peering wire format (pure)', () => {
  it('is a contract between clusters: these values must never change (a gateway of another version would not accept the frames)', () => {
    assert.equal(peeringVni('cluster-a', 'cluster-b', 18952), 1829182);
    assert.equal(peeringVni('cluster-b', 'cluster-c', 18952), 8387962);
    assert.equal(tunnelMac('cluster-a', 'cluster-b'), '02:c3:8b:16:94:d6');
    assert.equal(tunnelMac('cluster-b', 'cluster-a'), '02:93:55:a1:01:47');
  });

  it('gives both ends the same VNI, never the overlay VNI, and each end its own locally administered unicast MAC', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 0xffffff }), (a, b, overlay) => {
        const vni = peeringVni(a, b, overlay);
        assert.equal(vni, peeringVni(b, a, overlay));
        assert.ok(vni >= 1 && vni <= 0xffffff && vni !== overlay);
        for (const mac of [tunnelMac(a, b), tunnelMac(b, a)]) assert.match(mac, /^02(:[0-9a-f]{2}){5}$/);
        if (a !== b) assert.notEqual(tunnelMac(a, b), tunnelMac(b, a));
      }),
    );
    assert.notEqual(derivedMac('tunnel', 'a', 'b'), derivedMac('overlay', 'a', 'b'));
  });
});
