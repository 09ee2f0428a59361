/**
 * Leader election against the lab's API server with the real client: one leader among electors, a
 * clean stop hands over within a retry period, a killed leader (no release) is replaced after the lease
 * runs out and not before, a leader cut off from the API server stops by its renewDeadline, and a write
 * on a Lease that changed since it was read is refused (409), never overwriting the other holder.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { LeaderElector } from '../../src/k8s/leader-elector';
import { startTestApiServer, type TestApiServer } from '../support/apiserver';
import { captureLog } from '../support/log-capture';
import { testLeaseTimings } from './lease-timings';

const namespace = 'kube-system';
const { leaseDuration, renewDeadline, retryPeriod } = testLeaseTimings;

/** What the electors did, in order, with when; `next` waits for an event (no sleeping). */
class Timeline {
  readonly events: { what: string; at: number }[] = [];
  private waiters: { what: string; resolve: (at: number) => void }[] = [];

  add(what: string): void {
    const at = Date.now();
    this.events.push({ what, at });
    for (const w of this.waiters.filter((w) => w.what === what)) w.resolve(at);
    this.waiters = this.waiters.filter((w) => w.what !== what);
  }

  /** The time of the first `what` from now on (or already there when `seen` is true). */
  next(what: string, ms = 10_000, seen = false): Promise<number> {
    const already = seen && this.events.find((e) => e.what === what);
    if (already) return Promise.resolve(already.at);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "${what}" within ${ms} ms; events: ${this.list().join(', ')}`)), ms);
      this.waiters.push({ what, resolve: (at) => resolve(clearTimeout(timer) ?? at) });
    });
  }

  list(): string[] {
    return this.events.map((e) => e.what);
  }
}

describe('leader election on a Lease, against the API server', function () {
  this.timeout(20_000);
  let api: TestApiServer;
  let coordination: CoordinationV1Api;
  const cleanups: (() => Promise<void> | void)[] = [];
  let leaseName: string;
  let n = 0;

  beforeEach(async () => {
    api = await startTestApiServer();
    coordination = api.kubeConfig.makeApiClient(CoordinationV1Api);
    leaseName = `strait-controller-${++n}`;
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await api.close();
  });

  /** `stopMs`: how long its work takes to stop once told to. */
  function elector(identity: string, timeline: Timeline, stopMs = 0): LeaderElector {
    const e = new LeaderElector({
      api: coordination,
      namespace,
      name: leaseName,
      identity,
      ...testLeaseTimings,
      onStartedLeading: () => timeline.add(`${identity} started`),
      onStoppedLeading: async () => {
        await new Promise((resolve) => setTimeout(resolve, stopMs));
        timeline.add(`${identity} stopped`);
      },
      log: captureLog().log,
    });
    cleanups.push(() => e.stop());
    return e;
  }

  const lease = async () => (await coordination.readNamespacedLease({ name: leaseName, namespace })).spec!;

  it('of three electors started together exactly one leads, and keeps leading while it renews', async () => {
    const timeline = new Timeline();
    const electors = ['a', 'b', 'c'].map((id) => elector(id, timeline));
    for (const e of electors) e.start();
    const leader = await Promise.race(['a', 'b', 'c'].map((id) => timeline.next(`${id} started`).then(() => id)));
    // Four renewals later (each a new resourceVersion), still the one leader.
    const versions = new Set<string>();
    while (versions.size < 5) {
      const read = await coordination.readNamespacedLease({ name: leaseName, namespace });
      versions.add(read.metadata!.resourceVersion!);
      assert.equal(read.spec!.holderIdentity, leader);
      await new Promise((resolve) => setTimeout(resolve, (retryPeriod * 1000) / 2));
    }
    assert.deepEqual(timeline.list(), [`${leader} started`]);
    assert.deepEqual(electors.map((e) => e.leading).filter(Boolean), [true]);
    const spec = await lease();
    assert.deepEqual([spec.holderIdentity, spec.leaseDurationSeconds, spec.leaseTransitions], [leader, 2, 0]);
    assert.match(String(spec.renewTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime on the wire (six fractional digits)');
  });

  it('a leader that stops cleanly stops its work, then releases the Lease: the standby leads within one retry period', async () => {
    const timeline = new Timeline();
    // Its work takes two retry periods to stop: the standby must not lead meanwhile.
    const a = elector('a', timeline, retryPeriod * 1000 * 2);
    a.start();
    await timeline.next('a started');
    const b = elector('b', timeline);
    b.start();
    // b has seen a's Lease at least once (a follower), then a stops.
    await new Promise((resolve) => setTimeout(resolve, retryPeriod * 1000 * 2));
    await a.stop();
    const stopped = Date.now();
    const took = (await timeline.next('b started', 5000)) - stopped;
    assert.deepEqual(timeline.list(), ['a started', 'a stopped', 'b started'], 'a stopped its work before b started');
    assert.ok(
      took <= retryPeriod * 1000 + 200,
      `b led ${took} ms after a stopped (one retry period is ${retryPeriod * 1000} ms, the lease ${leaseDuration * 1000} ms)`,
    );
    const spec = await lease();
    assert.deepEqual([spec.holderIdentity, spec.leaseTransitions, b.leading], ['b', 1, true]);
  });

  it('a killed leader (no release) is replaced only after the lease ran out: between leaseDuration − retryPeriod and leaseDuration + 2 retryPeriods after the kill', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strait-elector-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, api.kubeConfig.exportConfig(), { mode: 0o600 });
    const child: ChildProcess = spawn(process.execPath, [join(__dirname, 'leader-elector-child.js'), kubeconfig, 'a', leaseName], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanups.push(() => void child.kill('SIGKILL'));
    const timeline = new Timeline();
    child.stdout!.on('data', (data: Buffer) =>
      data
        .toString()
        .trim()
        .split('\n')
        .forEach((line) => timeline.add(`a ${line}`)),
    );
    await timeline.next('a started', 10_000);
    const b = elector('b', timeline);
    b.start();
    await new Promise((resolve) => setTimeout(resolve, retryPeriod * 1000 * 2));
    assert.equal(b.leading, false);
    const killed = Date.now();
    child.kill('SIGKILL');
    const took = (await timeline.next('b started', 10_000)) - killed;
    assert.ok(took >= (leaseDuration - retryPeriod) * 1000, `b led ${took} ms after the kill: before the lease ran out`);
    assert.ok(took <= (leaseDuration + 2 * retryPeriod) * 1000 + 200, `b led ${took} ms after the kill`);
    const spec = await lease();
    assert.deepEqual([spec.holderIdentity, spec.leaseTransitions], ['b', 1]);
  });

  it('a leader cut off from the API server stops leading by its renewDeadline, before a standby could take over', async () => {
    const timeline = new Timeline();
    const a = elector('a', timeline);
    a.start();
    await timeline.next('a started');
    const cut = Date.now();
    await api.stop();
    const took = (await timeline.next('a stopped', 5000)) - cut;
    // From its last renewal, which may have been answered while the server was closing; a standby takes
    // over leaseDuration − retryPeriod after that at the earliest (1750 ms).
    assert.ok(
      took <= renewDeadline * 1000 + 100,
      `stopped ${took} ms after the API server went (renewDeadline ${renewDeadline * 1000} ms)`,
    );
    assert.equal(a.leading, false);
  });

  it('a write on a Lease changed since it was read gets 409 and overwrites nothing; the elector then follows the new holder', async () => {
    // A released Lease: the elector decides to take it at once; between its read and its write, another takes it.
    await coordination.createNamespacedLease({
      namespace,
      body: { metadata: { name: leaseName, namespace }, spec: { holderIdentity: '', leaseTransitions: 3 } } as V1Lease,
    });
    let raced = false;
    const racing = new Proxy(coordination, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'readNamespacedLease' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const read = (await (value as (...a: unknown[]) => Promise<V1Lease>).apply(target, args)) as V1Lease;
          if (!raced) {
            raced = true;
            await coordination.replaceNamespacedLease({
              name: leaseName,
              namespace,
              body: { ...read, spec: { ...read.spec, holderIdentity: 'other', leaseDurationSeconds: 30, leaseTransitions: 4 } },
            });
          }
          return read;
        };
      },
    });
    const timeline = new Timeline();
    const captured = captureLog();
    const followed: string[] = [];
    const e = new LeaderElector({
      api: racing,
      namespace,
      name: leaseName,
      identity: 'me',
      ...testLeaseTimings,
      onStartedLeading: () => timeline.add('me started'),
      onStoppedLeading: () => timeline.add('me stopped'),
      onNewLeader: (holder) => followed.push(holder),
      log: captured.log,
    });
    cleanups.push(() => e.stop());
    e.start();
    await new Promise((resolve) => setTimeout(resolve, retryPeriod * 1000 * 3));
    assert.deepEqual([timeline.list(), e.leading, followed], [[], false, ['other']]);
    assert.deepEqual(
      captured.lines.filter((l) => l.msg === 'lease not acquired or renewed').map((l) => String(l.error).slice(0, 3)),
      ['409'],
    );
    const spec = await lease();
    assert.deepEqual([spec.holderIdentity, spec.leaseTransitions], ['other', 4]);
  });
});
