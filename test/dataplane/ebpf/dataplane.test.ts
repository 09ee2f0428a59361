import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureBpffs, queryTcx } from '../../../src/native';
import { ebpfDataplane, summarizeChanges } from '../../../src/dataplane/ebpf/dataplane';
import * as layout from '../../../src/dataplane/ebpf/layout';
import { type NodeApplyResult, NodeDatapath, cleanupNode } from '../../../src/dataplane/ebpf/node-datapath';
import { unchangedApply as unchanged } from '../../support/node-apply';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../../src/kernel/netns';
import { hubSpec, hubSpecWith } from '../../support/node-specs';
import { requireRoot, uniqueName } from '../../support/kernel';
import { recordKernelLooks } from '../../support/kernel-looks';
import { recordMapWrites } from '../../support/map-writes';
import { mainRoutes } from '../../support/routes';
import { liveAttachments, withMap } from '../../agent/node-view';

/** A change source the test drives: reports a change once after `changed = true`. */
function drivenChanges() {
  const source = {
    changed: false,
    takeChanged: () => {
      const c = source.changed;
      source.changed = false;
      return c;
    },
    close: () => {},
  };
  return source;
}

describe('eBPF dataplane: change summary (what a reconcile logs)', () => {
  it('is undefined when nothing changed, and lists only what changed', () => {
    const routes = { added: [], removed: [], conflicts: ['10.9.0.0/16'] };
    assert.equal(summarizeChanges(unchanged, routes), undefined);
    const changed: NodeApplyResult = {
      ...unchanged,
      maps: { ...unchanged.maps, peers: { written: 1, deleted: 0 } },
      attachments: [
        ...unchanged.attachments,
        { interface: 'p-x', direction: 'ingress', program: 'strait_from_pod', change: 'attached', kind: 'tcx' },
      ],
    };
    assert.deepEqual(summarizeChanges(changed, { ...routes, added: ['10.1.0.0/16'] }), {
      maps: { peers: { written: 1, deleted: 0 } },
      attachments: ['p-x:strait_from_pod:attached:tcx'],
      routesAdded: ['10.1.0.0/16'],
    });
  });
});

describe('eBPF dataplane: incremental reconcile (real kernel)', function () {
  requireRoot(this);
  let node: string;
  let pinRoot: string;
  let datapath: NodeDatapath | undefined;

  beforeEach(() => {
    ensureBpffs();
    node = uniqueName('strait-test-incr');
    pinRoot = join('/sys/fs/bpf', uniqueName('strait-test'));
    createNetns(node);
    ip(['link', 'add', 'pod-a', 'type', 'veth', 'peer', 'name', 'pod-a-peer'], node);
  });
  afterEach(() => {
    try {
      datapath?.close();
      cleanupNode({ pinRoot, netns: netnsPath(node) });
    } finally {
      deleteNetns(node);
    }
  });

  const natmapEntry = (addr: string) => withMap(pinRoot, layout.maps.natmap, (m) => m.lookup(addr));
  const overlayRoutes = () =>
    mainRoutes(node)
      .filter((r) => r.dev === 'strait0')
      .map((r) => r.dst)
      .sort();
  /** The writes of `apply` as "op map key", the NAT maps' keys as addresses. */
  const writesOf = (apply: () => void) => recordMapWrites(apply).map(({ map, op, key }) => `${op} ${map} ${key.join('.')}`);

  it('repairs changes by hand that no event reports only at the resync, and looks at the kernel objects only on an event', async () => {
    datapath = await NodeDatapath.load({ pinRoot, netns: netnsPath(node), podInterfaces: /^pod-a$/ });
    const changes = drivenChanges();
    let clock = 0;
    const dataplane = ebpfDataplane(datapath, node, undefined, changes, 60_000, () => clock);
    const spec = hubSpec(); // one object, as the agent hands over until its spec changes
    dataplane.apply(spec);
    const attached = ['pod-a:strait_from_pod', 'strait0:strait_from_overlay', 'strait0:strait_to_overlay'];
    assert.deepEqual(liveAttachments(pinRoot, node), attached);

    // By hand: a wrong NatMapping, a tcx link detached (bpftool link detach), an overlay route deleted.
    withMap(pinRoot, layout.maps.natmap, (m) => m.update('10.50.0.1', '10.9.9.9'));
    const link = queryTcx(join(pinRoot, 'links', 'ingress_pod-a'))!;
    const detach = spawnSync('bpftool', ['link', 'detach', 'id', String(link.id)], { encoding: 'utf8' });
    assert.equal(detach.status, 0, detach.stderr);
    ip(['route', 'del', '10.1.0.0/16', 'dev', 'strait0'], node);

    clock += 59_999;
    const looks = recordKernelLooks(() =>
      assert.deepEqual(
        writesOf(() => assert.deepEqual(dataplane.apply(spec), { conflicts: [] })),
        [],
        'no event, no resync due: nothing written',
      ),
    );
    assert.deepEqual(looks, [], 'and nothing of the kernel looked at');
    assert.equal(natmapEntry('10.50.0.1'), '10.9.9.9', 'the map was not read');
    assert.deepEqual(
      liveAttachments(pinRoot, node),
      ['strait0:strait_from_overlay', 'strait0:strait_to_overlay'],
      'no interface looked at',
    );
    assert.deepEqual(overlayRoutes(), ['10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/24'], 'no route looked at');

    changes.changed = true;
    let onEventResult: ReturnType<typeof dataplane.apply> | undefined;
    const onEvent = recordKernelLooks(() => (onEventResult = dataplane.apply(spec)));
    assert.ok(
      ['rtnlLinkDump', 'rtnlRouteDump', 'interfaces'].every((call) => onEvent.includes(call)),
      `an event: the links, routes and interfaces are read (${onEvent.join()})`,
    );
    assert.deepEqual(liveAttachments(pinRoot, node), attached, 'an event: the attachments are looked at');
    assert.deepEqual(overlayRoutes(), ['10.1.0.0/16', '10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/24'], 'and the routes');
    assert.equal(natmapEntry('10.50.0.1'), '10.9.9.9', 'but the maps are not read: no event tells of their changes');
    assert.equal(onEventResult?.readAll, undefined, 'nor is the apply said to have read everything');

    clock += 1;
    const resync = dataplane.apply(spec);
    assert.equal(natmapEntry('10.50.0.1'), '10.2.0.5', 'the resync repaired the map');
    assert.deepEqual((resync.changes as { maps: unknown }).maps, { natmap: { written: 1, deleted: 0 } });
    assert.equal(resync.readAll, true, 'the resync read everything');
  });

  it('writes only what a new spec changes, without reading the maps or looking at anything else', async () => {
    datapath = await NodeDatapath.load({ pinRoot, netns: netnsPath(node), podInterfaces: /^pod-a$/ });
    const dataplane = ebpfDataplane(datapath, node, undefined, drivenChanges(), 60_000, () => 0);
    dataplane.apply(hubSpec());
    // A wrong entry the new spec does not touch stays: proof that the maps were not read.
    withMap(pinRoot, layout.maps.natmap, (m) => m.update('10.50.0.99', '10.9.9.9'));
    const next = hubSpecWith((s) => {
      s.natMappings = [
        { externalAddress: '10.50.0.2', endpointAddress: '10.2.0.5' },
        { externalAddress: '10.50.0.3', endpointAddress: '10.2.0.6' },
      ];
    });
    let writes: string[] = [];
    const looks = recordKernelLooks(() => (writes = writesOf(() => dataplane.apply(next))));
    assert.deepEqual(looks, [], 'a change of NatMappings only: no device, route or interface looked at');
    assert.deepEqual(writes.sort(), [
      'delete strait_natmap 10.50.0.1',
      'update strait_natmap 10.50.0.2',
      'update strait_natmap 10.50.0.3',
      'update strait_natmap_r 10.2.0.5',
      'update strait_natmap_r 10.2.0.6',
    ]);
    assert.equal(natmapEntry('10.50.0.99'), '10.9.9.9');
  });
});
