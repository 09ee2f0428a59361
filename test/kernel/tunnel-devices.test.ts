import assert from 'node:assert/strict';
import { isFallbackDevice } from '../../src/dataplane/kernel/identities';
import { type UnicastVxlanDevice, reconcileTunnelDevices } from '../../src/kernel/tunnel-devices';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { requireRoot, uniqueName } from '../support/kernel';

const overlay: UnicastVxlanDevice = { name: 'strait.vxlan', vni: 18952, port: 4789, mac: '02:aa:00:00:00:01', local: '127.0.0.1' };
const tunnel: UnicastVxlanDevice = { name: 'stp00000007', vni: 4242, port: 4789, mac: '02:bb:00:00:00:07', remote: '203.0.113.1' };

describe('tunnel devices (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-dev');
    createNetns(ns);
  });
  afterEach(() => deleteNetns(ns));

  const details = () =>
    (
      JSON.parse(ip(['-j', '-d', 'link', 'show'], ns)) as {
        ifname: string;
        address: string;
        flags: string[];
        linkinfo?: { info_data?: Record<string, unknown> };
      }[]
    )
      .filter((l) => l.ifname !== 'lo')
      .map((l) => [
        l.ifname,
        l.address,
        l.flags.includes('UP'),
        l.linkinfo?.info_data?.id,
        // iproute2 names an IPv6 end remote6 or local6.
        ['remote', 'remote6', 'local', 'local6'].map((k) => l.linkinfo?.info_data?.[k]).find((v) => v !== undefined),
        l.linkinfo?.info_data?.learning,
      ]);

  it('creates, keeps, recreates what differs, deletes what is no longer wanted, and leaves foreign devices alone', () => {
    ip(['link', 'add', 'vx-foreign', 'type', 'vxlan', 'id', '7', 'dstport', '4790'], ns);
    assert.deepEqual(reconcileTunnelDevices([overlay, tunnel], isFallbackDevice, ns), {
      created: ['strait.vxlan', 'stp00000007'],
      recreated: [],
      deleted: [],
      mtuChanged: [],
    });
    assert.deepEqual(
      details()
        .filter(([n]) => n !== 'vx-foreign')
        .sort(),
      [
        ['stp00000007', '02:bb:00:00:00:07', true, 4242, '203.0.113.1', false],
        ['strait.vxlan', '02:aa:00:00:00:01', true, 18952, '127.0.0.1', false],
      ],
    );
    assert.deepEqual(
      reconcileTunnelDevices([overlay, tunnel], isFallbackDevice, ns),
      { created: [], recreated: [], deleted: [], mtuChanged: [] },
      'a second run changes nothing',
    );
    assert.deepEqual(reconcileTunnelDevices([overlay, { ...tunnel, remote: '203.0.113.9' }], isFallbackDevice, ns), {
      created: [],
      recreated: ['stp00000007'],
      deleted: [],
      mtuChanged: [],
    });
    assert.deepEqual(reconcileTunnelDevices([overlay], isFallbackDevice, ns), {
      created: [],
      recreated: [],
      deleted: ['stp00000007'],
      mtuChanged: [],
    });
    assert.deepEqual(
      details()
        .map(([n]) => n)
        .sort(),
      ['strait.vxlan', 'vx-foreign'],
    );
    assert.deepEqual(reconcileTunnelDevices([], isFallbackDevice, ns).deleted, ['strait.vxlan']);
    assert.deepEqual(
      details().map(([n]) => n),
      ['vx-foreign'],
    );
  });

  it('creates VXLAN devices between IPv6 ends (an IPv6 underlay), and keeps them as they are on a second run', () => {
    const overlay6 = { ...overlay, local: '::1' };
    const tunnel6 = { ...tunnel, remote: '2001:db8::1' };
    assert.deepEqual(reconcileTunnelDevices([overlay6, tunnel6], isFallbackDevice, ns).created, ['strait.vxlan', 'stp00000007']);
    assert.deepEqual(details().sort(), [
      ['stp00000007', '02:bb:00:00:00:07', true, 4242, '2001:db8::1', false],
      ['strait.vxlan', '02:aa:00:00:00:01', true, 18952, '::1', false],
    ]);
    assert.deepEqual(reconcileTunnelDevices([overlay6, tunnel6], isFallbackDevice, ns), {
      created: [],
      recreated: [],
      deleted: [],
      mtuChanged: [],
    });
    // Moved to the other family: recreated.
    assert.deepEqual(reconcileTunnelDevices([overlay6, tunnel], isFallbackDevice, ns).recreated, ['stp00000007']);
  });

  it('creates a VXLAN device with its MTU, and sets a new MTU in place (same device, same ifindex)', () => {
    const link = (name: string) => (JSON.parse(ip(['-j', 'link', 'show', name], ns)) as { ifindex: number; mtu: number }[])[0]!;
    assert.deepEqual(reconcileTunnelDevices([{ ...overlay, mtu: 1450 }], isFallbackDevice, ns).created, ['strait.vxlan']);
    const before = link('strait.vxlan');
    assert.equal(before.mtu, 1450);
    assert.deepEqual(reconcileTunnelDevices([{ ...overlay, mtu: 1450 }], isFallbackDevice, ns), {
      created: [],
      recreated: [],
      deleted: [],
      mtuChanged: [],
    });
    assert.deepEqual(reconcileTunnelDevices([{ ...overlay, mtu: 8950 }], isFallbackDevice, ns), {
      created: [],
      recreated: [],
      deleted: [],
      mtuChanged: ['strait.vxlan'],
    });
    assert.deepEqual(link('strait.vxlan'), { ...before, mtu: 8950 });
  });
});
