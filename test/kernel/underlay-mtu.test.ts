/**
 * The underlay MTU read from the kernel (addresses and links through rtnetlink), in a throwaway
 * namespace: the device holding an address and its MTU, the one of the smallest MTU when several do.
 */
import assert from 'node:assert/strict';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { nodeTunnelMtus, underlayDeviceOf } from '../../src/kernel/underlay-mtu';
import { nodeSpecDocument, specWith } from '../support/node-specs';
import { requireRoot, uniqueName } from '../support/kernel';

describe('underlay MTU (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-mtu');
    createNetns(ns);
    ip(['link', 'add', 'veth0', 'mtu', '1400', 'type', 'veth', 'peer', 'name', 'veth1', 'mtu', '1300'], ns);
    ip(['addr', 'add', '10.213.0.1/24', 'dev', 'veth0'], ns);
    ip(['addr', 'add', '10.213.1.1/24', 'dev', 'veth1'], ns);
    ip(['addr', 'add', 'fd00::1/64', 'dev', 'veth1', 'nodad'], ns);
  });
  afterEach(() => deleteNetns(ns));

  it('is the device holding the address, the one of the smallest MTU of several, and undefined when none holds it', () => {
    assert.deepEqual(underlayDeviceOf(['10.213.0.1'], ns), { name: 'veth0', mtu: 1400 });
    assert.deepEqual(underlayDeviceOf(['10.213.0.1', '10.213.1.1'], ns), { name: 'veth1', mtu: 1300 });
    assert.deepEqual(underlayDeviceOf(['fd00::1'], ns), { name: 'veth1', mtu: 1300 });
    assert.equal(underlayDeviceOf(['10.9.9.9'], ns), undefined);
    assert.equal(underlayDeviceOf(['10.213.0.2'], ns), undefined, 'an address of the subnet is not the device address');
  });

  it("gives a node's tunnels the underlay device's MTU less the overhead over its underlay's family", () => {
    const node = (underlayAddress: string) => specWith(nodeSpecDocument(), (d) => void (d.node.underlayAddress = underlayAddress));
    assert.deepEqual(nodeTunnelMtus(node('10.213.0.1'), ns), { vxlan: 1350, ipsec: 1320, underlay: { name: 'veth0', mtu: 1400 } });
    assert.deepEqual(nodeTunnelMtus(node('fd00::1'), ns), { vxlan: 1230, ipsec: 1200, underlay: { name: 'veth1', mtu: 1300 } });
  });
});
