import assert from 'node:assert/strict';
import { desiredRoutes, reconcileOverlayRoutes as reconcileRoutes } from '../../../src/dataplane/ebpf/overlay-routes';
import { mainRoutes as readMainRoutes } from '../../support/routes';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import { requireRoot, uniqueName } from '../../support/kernel';
import { nodeSpec, peerB, peerC } from '../../support/node-specs';

describe('agent routes (pure)', () => {
  it('wants both remote prefixes of every peer, canonical and sorted', () => {
    assert.deepEqual(desiredRoutes(nodeSpec([peerC, peerB])), ['10.1.0.0/16', '10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/26']);
    assert.deepEqual(desiredRoutes(nodeSpec([])), []);
  });
});

describe('agent routes (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-routes');
    createNetns(ns);
    // Any device named like the overlay device will do for routes.
    ip(['link', 'add', 'strait0', 'type', 'veth', 'peer', 'name', 'other0'], ns);
    for (const dev of ['strait0', 'other0']) ip(['link', 'set', dev, 'up'], ns);
  });
  afterEach(() => deleteNetns(ns));

  const table = () =>
    readMainRoutes(ns)
      .map((r) => `${r.dst} ${r.dev} ${r.protocol ?? 'boot'}`)
      .sort();

  it('adds the routes once, puts back one deleted by hand, removes its own, and never touches a foreign route', () => {
    ip(['route', 'add', '10.8.0.0/16', 'dev', 'strait0', 'proto', 'static'], ns);
    ip(['route', 'add', '10.60.0.0/24', 'dev', 'other0', 'proto', 'static'], ns);
    ip(['route', 'add', '10.70.0.0/26', 'dev', 'other0', 'proto', 'static', 'metric', '100'], ns); // another metric: no clash
    const wanted = desiredRoutes(nodeSpec([peerB, peerC]));

    assert.deepEqual(reconcileRoutes(wanted, 'strait0', ns), {
      added: ['10.1.0.0/16', '10.2.0.0/20', '10.70.0.0/26'],
      removed: [],
      conflicts: ['10.60.0.0/24'],
    });
    const expected = [
      '10.1.0.0/16 strait0 252',
      '10.2.0.0/20 strait0 252',
      '10.60.0.0/24 other0 static',
      '10.70.0.0/26 other0 static',
      '10.70.0.0/26 strait0 252',
      '10.8.0.0/16 strait0 static',
    ];
    assert.deepEqual(table(), expected);

    assert.deepEqual(reconcileRoutes(wanted, 'strait0', ns), { added: [], removed: [], conflicts: ['10.60.0.0/24'] }, 'idempotent');

    ip(['route', 'del', '10.2.0.0/20', 'dev', 'strait0'], ns);
    assert.deepEqual(reconcileRoutes(wanted, 'strait0', ns).added, ['10.2.0.0/20']);
    assert.deepEqual(table(), expected);

    assert.deepEqual(reconcileRoutes(desiredRoutes(nodeSpec([peerB])), 'strait0', ns), {
      added: [],
      removed: ['10.2.0.0/20', '10.70.0.0/26'],
      conflicts: ['10.60.0.0/24'],
    });
    assert.deepEqual(reconcileRoutes([], 'strait0', ns), { added: [], removed: ['10.1.0.0/16'], conflicts: [] });
    assert.deepEqual(table(), ['10.60.0.0/24 other0 static', '10.70.0.0/26 other0 static', '10.8.0.0/16 strait0 static']);
  });

  it('removes nothing and fails nothing when the overlay device is gone', () => {
    ip(['link', 'del', 'strait0'], ns);
    assert.deepEqual(reconcileRoutes([], 'strait0', ns), { added: [], removed: [], conflicts: [] });
  });
});
