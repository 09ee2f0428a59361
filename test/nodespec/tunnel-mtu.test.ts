import assert from 'node:assert/strict';
import { clampedMss, tunnelMtu } from '../../src/nodespec/tunnel-mtu';

describe('tunnel MTU', () => {
  it('is the underlay MTU less 50 for VXLAN over IPv4 (20 IP, 8 UDP, 8 VXLAN, 14 inner Ethernet)', () => {
    assert.equal(tunnelMtu('vxlan', 1500), 1450);
    assert.equal(tunnelMtu('vxlan', 9000), 8950);
    assert.equal(tunnelMtu('vxlan', 1460), 1410);
  });

  it('is the underlay MTU less 80 for an encrypted peering: 1420 on a 1500-byte underlay, as before', () => {
    assert.equal(tunnelMtu('ipsec', 1500), 1420);
    assert.equal(tunnelMtu('ipsec', 9000), 8920);
  });

  it('takes the override for VXLAN whatever the underlay, and 30 less for an encrypted peering', () => {
    assert.equal(tunnelMtu('vxlan', 9000, 1400), 1400);
    assert.equal(tunnelMtu('vxlan', 1500, 1400), 1400);
    assert.equal(tunnelMtu('ipsec', 9000, 1400), 1370);
  });

  it('over an IPv6 underlay, 20 more for the outer header: VXLAN less 70, an encrypted peering less 100; the override still names VXLAN', () => {
    assert.equal(tunnelMtu('vxlan', 1500, undefined, 6), 1430);
    assert.equal(tunnelMtu('ipsec', 1500, undefined, 6), 1400);
    assert.equal(tunnelMtu('vxlan', 9000, 1400, 6), 1400);
    assert.equal(tunnelMtu('ipsec', 9000, 1400, 6), 1370);
  });

  it('clamps TCP to the MTU less 40 (IPv4 and TCP headers)', () => {
    assert.equal(clampedMss(1450), 1410);
    assert.equal(clampedMss(8950), 8910);
    assert.equal(clampedMss(1450, 6), 1390, "IPv6's header is 20 bytes longer");
  });
});
