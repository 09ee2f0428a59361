import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  BpfMap,
  BpfProgram,
  MapType,
  ProgType,
  attachClsact,
  bytes,
  ensureBpffs,
  ifIndex,
  perCpu,
  queryClsact,
  queryTcx,
  struct,
  u32,
  u64,
} from '../../../src/native';
import * as layout from '../../../src/dataplane/ebpf/layout';
import { NodeDatapath, cleanupNode } from '../../../src/dataplane/ebpf/node-datapath';
import { findAttachments, straitSlot } from '../../../src/dataplane/ebpf/attachments';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../../src/kernel/netns';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { requireRoot, uniqueName } from '../../support/kernel';
import { nodeSpecDocument, specWith } from '../../support/node-specs';

/** Node n1 of the shared fixture, with one peer, no NatMapping and a second node, n2, as gateway or worker. */
const spec = (role: 'gateway' | 'worker'): NodeDataplaneSpec =>
  specWith(nodeSpecDocument(), (d) => {
    d.node.role = role;
    if (role === 'worker') d.activeGateway = { name: 'n2', underlayAddress: '192.0.2.12' };
    d.natMappings = [];
    d.nodes = [...(d.nodes ?? []), { name: 'n2', underlayAddress: '192.0.2.12', podCIDRs: ['10.0.1.0/24'] }];
  });

describe('NodeDatapath (real kernel)', function () {
  requireRoot(this);
  let node: string;
  let pod: string;
  let pinRoot: string;
  let options: { pinRoot: string; netns: string; podInterfaces: RegExp };
  beforeEach(() => {
    ensureBpffs();
    node = uniqueName('strait-test-node');
    pod = uniqueName('strait-test-pod');
    pinRoot = join('/sys/fs/bpf', uniqueName('strait-test'));
    options = { pinRoot, netns: netnsPath(node), podInterfaces: /^pod-/ };
    createNetns(node);
    createNetns(pod);
    ip(['link', 'add', 'pod-a', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod], node);
    ip(['link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink-peer'], node);
  });
  afterEach(() => {
    try {
      cleanupNode(options);
    } finally {
      deleteNetns(node);
      deleteNetns(pod);
    }
  });

  const summary = (r: { attachments: { interface: string; program: string; change: string }[] }) =>
    r.attachments.map((a) => `${a.interface}:${a.program}:${a.change}`).sort();

  it('programs a node, changes nothing the second time, and a restart adopts maps and attachments', async () => {
    const first = await NodeDatapath.load(options);
    const applied = first.apply(spec('gateway'));
    assert.equal(applied.overlayDeviceChanged, true);
    assert.deepEqual(summary(applied), [
      'pod-a:strait_from_pod:attached',
      'strait0:strait_from_overlay:attached',
      'strait0:strait_to_overlay:attached',
    ]);
    assert.ok(applied.attachments.every((a) => 'kind' in a && a.kind === 'tcx'));
    assert.equal(
      first.maps.config.lookup(layout.CONFIG_KEY)?.overlayIfindex,
      Number(JSON.parse(ip(['-j', 'link', 'show', 'strait0'], node))[0].ifindex),
    );
    assert.ok(!findAttachments(pinRoot, options.netns).some((a) => a.interface === 'uplink'), 'other interfaces are left alone');

    const again = first.apply(spec('gateway'));
    assert.equal(again.overlayDeviceChanged, false);
    assert.deepEqual(summary(again), [
      'pod-a:strait_from_pod:unchanged',
      'strait0:strait_from_overlay:unchanged',
      'strait0:strait_to_overlay:unchanged',
    ]);
    assert.ok(Object.values(again.maps).every((m) => m.written === 0 && m.deleted === 0));
    const linkBefore = queryTcx(join(pinRoot, 'links', 'ingress_pod-a'))!;
    // The tail-called program's slot: this load's strait_transit6, from its first apply on.
    const transitSlot = () => {
      const progs = BpfMap.openPinned(join(pinRoot, layout.maps.progs.name), u32, u32);
      try {
        return progs.lookup(layout.TailCall.Transit6);
      } finally {
        progs.close();
      }
    };
    const firstTransit = transitSlot();
    assert.equal(firstTransit !== undefined && BpfProgram.infoById(firstTransit).name, 'strait_transit6');
    first.close();

    // A new agent: the maps it finds pinned hold the last run's state before it writes anything.
    const second = await NodeDatapath.load(options);
    try {
      assert.equal(second.maps.peers.lookup(5)?.endpoint, '203.0.113.2');
      assert.equal(transitSlot(), firstTransit, "a load leaves the slot to the running programs' transit6");
      const restarted = second.apply(spec('gateway'));
      const secondTransit = transitSlot();
      assert.ok(secondTransit !== undefined && secondTransit !== firstTransit, 'its apply puts its own in, with its entry programs');
      assert.equal(BpfProgram.infoById(secondTransit).name, 'strait_transit6');
      assert.deepEqual(summary(restarted), [
        'pod-a:strait_from_pod:replaced',
        'strait0:strait_from_overlay:replaced',
        'strait0:strait_to_overlay:replaced',
      ]);
      // strait_liveness names the load (its generation, in seconds): one write when the restart crossed a second.
      const { liveness, ...specMaps } = restarted.maps;
      assert.ok(
        Object.values(specMaps).every((m) => m.written === 0 && m.deleted === 0),
        'the adopted maps needed no write',
      );
      assert.ok(liveness.written <= 1 && liveness.deleted === 0);
      const linkAfter = queryTcx(join(pinRoot, 'links', 'ingress_pod-a'))!;
      assert.equal(linkAfter.id, linkBefore.id, 'the same link: the program was swapped in place');
      assert.notEqual(linkAfter.progId, linkBefore.progId);

      // A role change is a map update; a pod that is gone loses its attachment.
      ip(['link', 'del', 'pod-a'], node);
      const after = second.apply(spec('worker'));
      assert.deepEqual(summary(after), [
        'pod-a:strait_from_pod:detached',
        'strait0:strait_from_overlay:unchanged',
        'strait0:strait_to_overlay:unchanged',
      ]);
      assert.equal(second.maps.config.lookup(layout.CONFIG_KEY)?.flags, 0);
      assert.equal(second.maps.config.lookup(layout.CONFIG_KEY)?.gatewayAddr, '192.0.2.12');
    } finally {
      second.close();
    }
  });

  it('attaches the pod program to one new pod interface on demand, only after the first apply and only to pod interfaces', async () => {
    const datapath = await NodeDatapath.load(options);
    try {
      ip(['link', 'add', 'pod-b', 'type', 'veth', 'peer', 'name', 'eth1', 'netns', pod], node);
      assert.equal(datapath.attachPodInterface('pod-b'), undefined, 'before the first apply: its maps may not be filled yet');
      assert.equal(queryTcx(join(pinRoot, 'links', 'ingress_pod-b')), undefined);
      datapath.apply(spec('worker'));
      ip(['link', 'add', 'pod-c', 'type', 'veth', 'peer', 'name', 'eth2', 'netns', pod], node);
      assert.deepEqual(datapath.attachPodInterface('pod-c'), {
        interface: 'pod-c',
        direction: 'ingress',
        program: 'strait_from_pod',
        change: 'attached',
        kind: 'tcx',
      });
      assert.deepEqual(datapath.attachPodInterface('pod-c'), {
        interface: 'pod-c',
        direction: 'ingress',
        program: 'strait_from_pod',
        change: 'unchanged',
      });
      assert.equal(datapath.attachPodInterface('uplink'), undefined);
      assert.deepEqual(
        findAttachments(pinRoot, netnsPath(node))
          .map((a) => `${a.interface}:${a.program}`)
          .sort(),
        [
          'pod-a:strait_from_pod',
          'pod-b:strait_from_pod',
          'pod-c:strait_from_pod',
          'strait0:strait_from_overlay',
          'strait0:strait_to_overlay',
        ],
      );
    } finally {
      datapath.close();
    }
  });

  it('falls back to clsact when told, finds those attachments again, and cleanup removes everything it owns', async () => {
    const dp = await NodeDatapath.load({ ...options, attachMode: 'clsact' });
    try {
      const applied = dp.apply(spec('worker'));
      assert.ok(applied.attachments.every((a) => a.kind === 'clsact'));
    } finally {
      dp.close();
    }
    assert.deepEqual(
      findAttachments(pinRoot, options.netns)
        .map((a) => `${a.interface}:${a.program}:${a.kind}`)
        .sort(),
      ['pod-a:strait_from_pod:clsact', 'strait0:strait_from_overlay:clsact', 'strait0:strait_to_overlay:clsact'],
    );
    const cleaned = cleanupNode(options);
    assert.equal(cleaned.detached.length, 3);
    assert.equal(cleaned.overlayDeviceRemoved, true);
    assert.deepEqual(findAttachments(pinRoot, options.netns), []);
    assert.equal(existsSync(pinRoot), false);
    assert.deepEqual(
      JSON.parse(ip(['-j', 'link', 'show'], node))
        .map((l: { ifname: string }) => l.ifname)
        .sort(),
      ['lo', 'pod-a', 'uplink', 'uplink-peer'],
    );
    assert.deepEqual(cleanupNode(options), { detached: [], overlayDeviceRemoved: false });
  });

  it('pins the programs it loads by name and id, and unpins those of an earlier load once no attachment runs them', async () => {
    const pinnedPrograms = () => readdirSync(join(pinRoot, 'programs')).sort();
    const first = await NodeDatapath.load(options);
    first.apply(spec('gateway'));
    const firstPins = pinnedPrograms();
    assert.deepEqual(
      firstPins.map((p) => p.replace(/@\d+$/, '')),
      ['strait_from_overlay', 'strait_from_pod', 'strait_liveness_reply', 'strait_to_overlay'],
    );
    first.close();

    const second = await NodeDatapath.load(options);
    try {
      assert.equal(pinnedPrograms().length, 8, "the first load's programs still run, so they stay pinned");
      second.apply(spec('gateway'));
      const secondPins = pinnedPrograms();
      assert.equal(secondPins.length, 4);
      assert.deepEqual(
        secondPins.filter((p) => firstPins.includes(p)),
        [],
        'only the second load is pinned',
      );
      // The attachments are named from the pins: the program each runs, by its id (no device here holds the
      // node's underlay address, so the probe responder runs nowhere).
      assert.deepEqual(
        findAttachments(pinRoot, options.netns)
          .map((a) => `${a.program}@${a.progId}`)
          .sort(),
        secondPins.filter((p) => !p.startsWith(layout.Program.Liveness)),
      );
    } finally {
      second.close();
    }
  });

  it('an upgrade over an earlier layout: strait_config pinned as a 1-entry hash is replaced by the array, and the node is programmed', async () => {
    const old = BpfMap.create({ type: MapType.Hash, name: 'strait_config', key: u32, value: layout.config, maxEntries: 1 });
    const peers = BpfMap.create({ type: MapType.Hash, name: 'strait_peers', key: u32, value: layout.peer, maxEntries: 256 });
    try {
      old.pin(join(pinRoot, 'strait_config'));
      peers.pin(join(pinRoot, 'strait_peers'));
    } finally {
      old.close();
      peers.close();
    }
    const dp = await NodeDatapath.load(options);
    try {
      assert.deepEqual(dp.replacedMaps, ['strait_config'], 'only the map of another layout');
      assert.equal(dp.maps.config.type, MapType.Array);
      assert.equal(dp.maps.peers.info.name, 'strait_peers');
      dp.apply(spec('gateway'));
      assert.equal(dp.maps.config.lookup(layout.CONFIG_KEY)?.transitAddr, '10.50.0.254');
      const pinned = BpfMap.openPinned(join(pinRoot, 'strait_config'), u32, layout.config);
      try {
        assert.equal(pinned.type, MapType.Array, 'the pin is the new map');
        assert.equal(pinned.lookup(layout.CONFIG_KEY)?.transitAddr, '10.50.0.254');
      } finally {
        pinned.close();
      }
    } finally {
      dp.close();
    }
  });

  it("an upgrade (or a downgrade) over maps of another layout carries the datapath's state over: values that grew are zero-extended, values that shrank cut (per CPU too), an interrupted upgrade's set-aside map is carried without overwriting, and no set-aside pin stays", async () => {
    const flowKey = layout.structs.strait_flow_key;
    const key = Buffer.from(flowKey.size === 16 ? '0a0000050a3c00090400005006000000' : '', 'hex');
    assert.equal(key.length, flowKey.size, 'struct strait_flow_key is 16 bytes');
    // An older build's strait_snat, without closed_ns (16 bytes, not 24: an upgrade), and a newer build's
    // counters, with a field appended (40 bytes, not 32: a downgrade).
    const oldSnat = BpfMap.create({ type: MapType.LruHash, name: 'strait_snat', key: bytes(16), value: bytes(16), maxEntries: 64 });
    const oldCounters = BpfMap.create({
      type: MapType.PercpuHash,
      name: 'strait_peer_counters',
      key: u32,
      value: perCpu(struct({ txPackets: u64, txBytes: u64, rxPackets: u64, rxBytes: u64, appended: u64 })),
      maxEntries: 256,
    });
    // An upgrade interrupted after it set strait_drops aside and its new map counted some drops already.
    const leftDrops = BpfMap.create({ type: MapType.PercpuArray, name: 'strait_drops', key: u32, value: perCpu(u64), maxEntries: 8 });
    // The new map is this build's; the set-aside one an older build's, with fewer reasons.
    const newDrops = BpfMap.create({
      type: MapType.PercpuArray,
      name: 'strait_drops',
      key: u32,
      value: perCpu(u64),
      maxEntries: layout.DROP_REASON_COUNT,
    });
    const cpus = oldCounters.value.size / 40;
    try {
      // addr 10.200.0.254, port 40000, flags 3 (both FINs seen), padding.
      oldSnat.update(key, Buffer.from('0ac800fe9c400300' + '00000000' + '00000000', 'hex'));
      oldCounters.update(
        5,
        Array.from({ length: cpus }, (_, i) => ({
          txPackets: BigInt(10 + i),
          txBytes: BigInt(1000 + i),
          rxPackets: BigInt(20 + i),
          rxBytes: BigInt(2000 + i),
          appended: 99n,
        })),
      );
      leftDrops.update(
        layout.DropReason.NoPeer,
        Array.from({ length: cpus }, () => 7n),
      );
      leftDrops.update(
        layout.DropReason.Malformed,
        Array.from({ length: cpus }, () => 2n),
      );
      newDrops.update(
        layout.DropReason.NoPeer,
        Array.from({ length: cpus }, () => 9n),
      );
      newDrops.pin(join(pinRoot, 'strait_drops'));
      oldSnat.pin(join(pinRoot, 'strait_snat'));
      oldCounters.pin(join(pinRoot, 'strait_peer_counters'));
      leftDrops.pin(join(pinRoot, 'strait_drops:pending'));
    } finally {
      oldSnat.close();
      oldCounters.close();
      leftDrops.close();
      newDrops.close();
    }
    const dp = await NodeDatapath.load(options);
    try {
      assert.deepEqual([...dp.replacedMaps].sort(), ['strait_drops', 'strait_peer_counters', 'strait_snat']);
      assert.deepEqual(
        [...dp.carriedState].sort((a, b) => a.map.localeCompare(b.map)),
        [
          { map: 'strait_drops', entries: 1 },
          { map: 'strait_peer_counters', entries: 1 },
          { map: 'strait_snat', entries: 1 },
        ],
        'a drop reason the new map counts already is left as it is, and a zero one has nothing to carry',
      );
      assert.deepEqual(dp.maps.snat.lookup(flowKey.decode(key, 0)), { addr: '10.200.0.254', port: 40000, flags: 3, closedNs: 0n });
      assert.deepEqual(
        dp.maps.peerCounters.lookup(5),
        Array.from({ length: cpus }, (_, i) => ({
          txPackets: BigInt(10 + i),
          txBytes: BigInt(1000 + i),
          rxPackets: BigInt(20 + i),
          rxBytes: BigInt(2000 + i),
        })),
        'the field this build does not know is dropped, slot by slot',
      );
      assert.deepEqual(
        dp.maps.drops.lookup(layout.DropReason.NoPeer),
        Array.from({ length: cpus }, () => 9n),
        'the newer count stays',
      );
      assert.deepEqual(
        dp.maps.drops.lookup(layout.DropReason.Malformed),
        Array.from({ length: cpus }, () => 2n),
        'the older one is carried',
      );
      assert.deepEqual(
        readdirSync(pinRoot).filter((f) => f.endsWith(':pending')),
        [],
        'the set-aside maps are unpinned once carried (the programs still attached hold them)',
      );
      dp.apply(spec('gateway'));
      assert.equal(dp.maps.snat.lookup(flowKey.decode(key, 0))?.port, 40000, 'an apply leaves the carried state alone');
    } finally {
      dp.close();
    }
  });

  it('carries strait_snat6 over an upgrade as strait_snat: an older layout (no closed_ns) zero-extended, the flow kept', async () => {
    const flowKey = layout.structs.strait_flow6_key;
    // fd10:32::5 → fd17:16::9, ports 40001 → 53, UDP.
    const key = Buffer.from('fd100032000000000000000000000005' + 'fd170016000000000000000000000009' + '9c410035' + '11000000', 'hex');
    assert.equal(key.length, flowKey.size, 'struct strait_flow6_key is 40 bytes');
    const oldSnat6 = BpfMap.create({ type: MapType.LruHash, name: 'strait_snat6', key: bytes(40), value: bytes(24), maxEntries: 64 });
    try {
      // addr fd00:e:0:5ff::fa, port 40000, flags 0, padding: 24 bytes, not 32.
      oldSnat6.update(key, Buffer.from('fd00000e000005ff00000000000000fa' + '9c400000' + '00000000', 'hex'));
      oldSnat6.pin(join(pinRoot, 'strait_snat6'));
    } finally {
      oldSnat6.close();
    }
    const dp = await NodeDatapath.load(options);
    try {
      assert.deepEqual([...dp.replacedMaps], ['strait_snat6']);
      assert.deepEqual([...dp.carriedState], [{ map: 'strait_snat6', entries: 1 }]);
      assert.deepEqual(dp.maps.snat6.lookup(flowKey.decode(key, 0) as never), {
        addr: 'fd00:e:0:5ff::fa',
        port: 40000,
        flags: 0,
        closedNs: 0n,
      });
      assert.deepEqual(
        readdirSync(pinRoot).filter((f) => f.endsWith(':pending')),
        [],
      );
    } finally {
      dp.close();
    }
  });

  it('leaves alone a clsact filter at its slot that runs a program it did not load', async () => {
    const foreign = BpfProgram.fromInstructions(ProgType.SchedCls, Buffer.from('b700000000000000' + '9500000000000000', 'hex'));
    const target = { ifindex: ifIndex('uplink', options.netns), direction: 'ingress' as const, netns: options.netns };
    try {
      attachClsact(target, foreign, straitSlot);
      const dp = await NodeDatapath.load({ ...options, attachMode: 'clsact' });
      try {
        dp.apply(spec('worker'));
      } finally {
        dp.close();
      }
      assert.deepEqual(
        findAttachments(pinRoot, options.netns)
          .map((a) => a.interface)
          .sort(),
        ['pod-a', 'strait0', 'strait0'],
      );
      cleanupNode(options);
      assert.equal(queryClsact(target, straitSlot), foreign.info().id, 'still attached after the cleanup');
    } finally {
      foreign.close();
    }
  });

  it('pins links of interfaces whose names bpffs would refuse (a dot) under an escaped name', async () => {
    ip(['link', 'add', 'pod-b.5', 'type', 'veth', 'peer', 'name', 'eth1', 'netns', pod], node);
    const dp = await NodeDatapath.load(options);
    try {
      dp.apply(spec('worker'));
    } finally {
      dp.close();
    }
    assert.deepEqual(
      findAttachments(pinRoot, options.netns)
        .map((a) => `${a.interface}:${a.kind}`)
        .sort(),
      ['pod-a:tcx', 'pod-b.5:tcx', 'strait0:tcx', 'strait0:tcx'],
    );
  });
});
