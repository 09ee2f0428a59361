import assert from 'node:assert/strict';
import { kernelDataplane } from '../../../src/dataplane/kernel/dataplane';
import { KernelDatapath, type KernelApplyResult, cleanupKernelNode } from '../../../src/dataplane/kernel/kernel-datapath';
import { ip } from '../../../src/kernel/command';
import { KernelChangeMonitor } from '../../../src/kernel/change-monitor';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { hubSpec } from '../../support/node-specs';
import { requireRoot, uniqueName } from '../../support/kernel';

const quiet: KernelApplyResult = {
  devices: { created: [], recreated: [], deleted: [], mtuChanged: [] },
  fdb: 0,
  neighbours: 0,
  routes: 0,
  rules: 0,
  natChanged: false,
  flowsForgotten: 0,
  ipsec: { added: 0, updated: 0, removed: 0 },
  blocked: [],
  failed: [],
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('kernel dataplane: reconciles only when something may have changed', () => {
  it('skips while spec, secrets and kernel are unchanged, and applies on any of them or after the resync period', () => {
    let applies = 0;
    let version = 'v1';
    let result = quiet;
    let changed = false;
    let clock = 0;
    const dataplane = kernelDataplane(
      { validate: () => {}, apply: () => (applies++, result), inputsVersion: () => version },
      {
        takeChanged: () => {
          const c = changed;
          changed = false;
          return c;
        },
        close: () => {},
      },
      10_000,
      () => clock,
    );
    const spec = hubSpec();
    const tick = (s: NodeDataplaneSpec = spec) => dataplane.apply(s);
    assert.equal(tick().readAll, true, "an apply reads the node's whole state");
    assert.equal(tick().readAll, undefined, 'a skipped one nothing');
    assert.equal(applies, 1, 'nothing changed: skipped');
    changed = true;
    tick();
    assert.equal(applies, 2, 'a kernel change event');
    const newer = { ...spec, natMappings: [] };
    tick(newer);
    assert.equal(applies, 3, 'a new spec');
    tick(newer);
    assert.equal(applies, 3, 'the same spec object again: skipped');
    version = 'v2';
    tick(newer);
    assert.equal(applies, 4, 'a secret file changed');
    clock += 10_000;
    tick(newer);
    assert.equal(applies, 5, 'the resync period');
    result = { ...quiet, blocked: ['peer cluster-a: no secret'] };
    clock += 10_000;
    assert.throws(() => tick(newer), /blocked peer cluster-a: no secret/);
    assert.throws(() => tick(newer), /blocked/, 'a failed apply is tried again at the next tick');
    assert.equal(applies, 7);
  });
});

describe('kernel dataplane with the kernel change monitor (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-kmon');
    createNetns(ns);
    ip(['link', 'set', 'lo', 'up'], ns);
  });
  afterEach(() => deleteNetns(ns));

  it('goes quiet after applying, and repairs a route deleted by hand at the next tick', async () => {
    let applies = 0;
    const datapath = new KernelDatapath(ns);
    const monitor = new KernelChangeMonitor(ns);
    const dataplane = kernelDataplane(
      {
        validate: (s) => datapath.validate(s),
        apply: (s) => (applies++, datapath.apply(s)),
        inputsVersion: (s) => datapath.inputsVersion(s),
      },
      monitor,
    );
    const spec = hubSpec(); // one object, as the agent hands over until its spec file changes
    try {
      // (an apply, then ticks every 150 ms as in the lab)
      const tickFor = async (ms: number) => {
        for (const end = Date.now() + ms; Date.now() < end;) {
          dataplane.apply(spec);
          await sleep(150);
        }
      };
      // Our own writes are events, and so is the IPv6 link-local address each new device gets after
      // duplicate address detection (about a second later): a few reconciles find nothing to do...
      await tickFor(4000);
      const settled = applies;
      assert.ok(settled >= 2 && settled <= 8, `a few reconciles while the new devices settle, not one per tick: ${settled}`);
      // ...then nothing more runs.
      await tickFor(1500);
      assert.equal(applies, settled, 'quiet: no reconcile while nothing changes');
      ip(['route', 'del', '10.2.0.0/20', 'metric', '0', 'table', '18952'], ns);
      await sleep(300);
      dataplane.apply(spec);
      assert.equal(applies, settled + 1, 'the deletion is an event: the next tick reconciles');
      assert.match(ip(['route', 'show', 'table', '18952', '10.2.0.0/20'], ns), /via 203\.0\.113\.3 dev stp00000009/);
    } finally {
      dataplane.close();
      cleanupKernelNode(ns);
    }
  });
});
