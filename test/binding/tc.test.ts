import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  BpfObject,
  BpfProgram,
  attachClsact,
  attachTc,
  attachTcx,
  detachClsact,
  detachTc,
  detachTcx,
  ifIndex,
  interfaces,
  queryClsact,
  queryTcx,
  removeClsact,
  replaceTcxProgram,
  u32,
} from '../../src/native';
import { ip } from '../../src/kernel/command';
import { netnsPath } from '../../src/kernel/netns';
import { ping, requireRoot, tempPinDir, testObject, vethPair } from '../support/kernel';

const TC_ACT_SHOT = 2;
const slot = { priority: 7, handle: 0x57 };
/** What ping says of 3 echo requests when the program passes them, and when it drops them. */
const passed = { transmitted: 3, received: 3 };
const dropped = { transmitted: 3, received: 0 };

/** The binding's test program returning `retval`: TC_ACT_SHOT drops every packet, so pings tell. */
const program = (retval: number) => BpfObject.load(testObject('binding_test'), {}, (o) => o.setGlobal('test_retval', u32, retval));

describe('TC attachments (real kernel, real packets)', function () {
  requireRoot(this);
  let net: ReturnType<typeof vethPair>;
  let pins: ReturnType<typeof tempPinDir>;
  let target: { ifindex: number; direction: 'ingress'; netns: string };
  beforeEach(() => {
    net = vethPair();
    pins = tempPinDir();
    target = { ifindex: ifIndex('veth1', netnsPath(net.right)), direction: 'ingress', netns: netnsPath(net.right) };
    // Static neighbours, so a ping tells only what the program did: a program that dropped ARP leaves
    // the resolution failing for seconds after it is gone (INCOMPLETE, then FAILED until the next
    // packet), and a ping then would measure ARP's retry timer (seen: 0 of 3 right after a detach).
    const mac = (ns: string, dev: string) => (JSON.parse(ip(['-j', 'link', 'show', dev], ns)) as { address: string }[])[0]!.address;
    ip(['neigh', 'replace', '10.213.0.2', 'lladdr', mac(net.right, 'veth1'), 'dev', 'veth0', 'nud', 'permanent'], net.left);
    ip(['neigh', 'replace', '10.213.0.1', 'lladdr', mac(net.left, 'veth0'), 'dev', 'veth1', 'nud', 'permanent'], net.right);
  });
  afterEach(() => {
    net.cleanup();
    pins.cleanup();
  });

  it('clsact: attaches, drops real packets, is found after its object is closed, replaces and detaches', async () => {
    assert.deepEqual(ping(net.left, '10.213.0.2'), passed, 'the veth pair works before any program');
    const drop = await program(TC_ACT_SHOT);
    const dropId = drop.program('test_prog').info().id;
    attachClsact(target, drop.program('test_prog'), slot);
    drop.close(); // the attachment outlives the process's fds, as after an agent restart
    assert.equal(queryClsact(target, slot), dropId);
    assert.equal(queryClsact(target, { ...slot, handle: slot.handle + 1 }), undefined);
    assert.deepEqual(ping(net.left, '10.213.0.2'), dropped, 'the program drops packets');

    const pass = await program(0);
    try {
      attachClsact(target, pass.program('test_prog'), slot, true);
      assert.equal(queryClsact(target, slot), pass.program('test_prog').info().id);
      assert.deepEqual(ping(net.left, '10.213.0.2'), passed, 'the replacement passes packets');
    } finally {
      pass.close();
    }
    assert.equal(detachClsact(target, slot), true);
    assert.equal(detachClsact(target, slot), false);
    assert.equal(queryClsact(target, slot), undefined);
    assert.equal(removeClsact(target), true, 'the clsact qdisc was there');
    assert.equal(removeClsact(target), false);
  });

  it('tcx: a pinned link drops real packets, survives its fds, swaps programs atomically and detaches', async () => {
    const linkPath = join(pins.dir, 'veth1_ingress');
    const drop = await program(TC_ACT_SHOT);
    const link = attachTcx(target, drop.program('test_prog'), linkPath);
    const dropId = drop.program('test_prog').info().id;
    drop.close();
    assert.equal(link.type, 11);
    assert.equal(link.ifindex, target.ifindex);
    assert.equal(queryTcx(linkPath)?.progId, dropId);
    assert.deepEqual(ping(net.left, '10.213.0.2'), dropped);
    const pass = await program(0);
    try {
      assert.equal(replaceTcxProgram(linkPath, pass.program('test_prog')), true);
      assert.equal(queryTcx(linkPath)?.progId, pass.program('test_prog').info().id);
      assert.equal(queryTcx(linkPath)?.id, link.id, 'the same link');
      assert.deepEqual(ping(net.left, '10.213.0.2'), passed);
    } finally {
      pass.close();
    }
    assert.equal(detachTcx(linkPath), true);
    assert.equal(queryTcx(linkPath), undefined);
    assert.equal(detachTcx(linkPath), false);
  });

  it('attachTc: auto prefers tcx, keeps the mechanism on re-attach, and detachTc removes either', async () => {
    const options = { pinPath: join(pins.dir, 'link'), slot };
    const drop = await program(TC_ACT_SHOT);
    try {
      const first = attachTc(target, drop.program('test_prog'), { ...options, mode: 'auto' });
      assert.equal(first.kind, 'tcx');
      const again = attachTc(target, drop.program('test_prog'), { ...options, mode: 'auto' });
      assert.equal(again.kind, 'tcx');
      assert.equal(again.kind === 'tcx' && first.kind === 'tcx' && again.linkId === first.linkId, true, 're-attach reuses the link');
      assert.deepEqual(ping(net.left, '10.213.0.2'), dropped);
      assert.equal(detachTc(target, options), true);
      assert.deepEqual(ping(net.left, '10.213.0.2'), passed);

      const forced = attachTc(target, drop.program('test_prog'), { ...options, mode: 'clsact' });
      assert.equal(forced.kind, 'clsact');
      assert.equal(
        attachTc(target, drop.program('test_prog'), { ...options, mode: 'auto' }).kind,
        'clsact',
        'auto keeps an existing clsact attachment',
      );
      assert.deepEqual(ping(net.left, '10.213.0.2'), dropped);
      assert.equal(detachTc(target, options), true);
      assert.equal(detachTc(target, options), false);
      assert.deepEqual(ping(net.left, '10.213.0.2'), passed);
    } finally {
      drop.close();
    }
  });

  it('fails with the errno and the place when the interface does not exist', async () => {
    const prog = await program(0);
    try {
      assert.throws(
        () => attachClsact({ ...target, ifindex: 9999 }, prog.program('test_prog'), slot),
        (e: Error & { code?: string }) => e.name === 'BpfError' && e.code === 'ENODEV' && /ingress of ifindex 9999/.test(e.message),
      );
      assert.throws(
        () => ifIndex('nope0', target.netns),
        (e: Error & { code?: string }) => e.code === 'ENODEV' && /nope0/.test(e.message),
      );
      assert.deepEqual(
        interfaces(target.netns)
          .map((i) => i.name)
          .sort(),
        ['lo', 'veth1'],
      );
      assert.equal(interfaces(target.netns).find((i) => i.name === 'veth1')?.index, target.ifindex);
      assert.equal(BpfProgram.infoById(prog.program('test_prog').info().id).name, 'test_prog');
    } finally {
      prog.close();
    }
  });
});
