/**
 * The controller's Event recorder against the lab API server (which validates events.k8s.io/v1 as
 * kube-apiserver does): Events the strict API accepts, repeats aggregated into one Event's series as
 * client-go's recorder does, and a flapping object's writes limited.
 */
import assert from 'node:assert/strict';
import { EventsV1Api } from '@kubernetes/client-node';
import { EventRecorder, eventRate } from '../../../src/controller/kubernetes/events';
import { seriesFinishMs } from '../../../src/k8s/event-series';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { captureLog } from '../../support/log-capture';

describe('controller Events (events.k8s.io/v1)', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let api: EventsV1Api;
  let clock: number;
  const recorder = () => {
    const captured = captureLog();
    const events = new EventRecorder({
      api,
      reportingController: 'strait.io/controller',
      reportingInstance: 'strait-controller-0',
      log: captured.log,
      now: () => new Date(clock),
    });
    return { events, captured };
  };
  const stored = async () => (await api.listNamespacedEvent({ namespace: 'default' })).items;
  beforeEach(async () => {
    t = await startTestApiServer();
    api = t.kubeConfig.makeApiClient(EventsV1Api);
    clock = Date.parse('2026-01-01T00:00:00Z');
  });
  afterEach(async () => t.close());

  it('records N repeats as one Event whose series counts N, as client-go does', async () => {
    const { events, captured } = recorder();
    const node = { kind: 'Node', name: 'node-a', apiVersion: 'v1', uid: 'uid-a' };
    for (let i = 0; i < 7; i++) {
      events.record(node, { type: 'Warning', reason: 'NodeNotUsable', action: 'ReadNode', note: `try ${i}` });
      await events.settled();
      clock += 1000;
    }
    const first = await stored();
    assert.equal(first.length, 1);
    let [event] = first;
    assert.deepEqual({ ...event!.regarding }, { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-a' });
    assert.deepEqual(
      [event!.reportingController, event!.reportingInstance, event!.action, event!.reason, event!.type, event!.note],
      ['strait.io/controller', 'strait-controller-0', 'ReadNode', 'NodeNotUsable', 'Warning', 'try 0'],
    );
    assert.equal(event!.series?.count, 2, 'the first repeat is written at once, later ones when the series is refreshed or ends');
    events.refreshSeries();
    await events.settled();
    [event] = await stored();
    assert.equal(event!.series?.count, 7);
    clock += seriesFinishMs;
    events.record(node, { type: 'Warning', reason: 'NodeNotUsable', action: 'ReadNode', note: 'again' });
    await events.settled();
    assert.equal((await stored()).length, 1, 'still the same series');
    clock += seriesFinishMs + 1;
    events.finishSeries();
    await events.settled();
    [event] = await stored();
    assert.equal(event!.series?.count, 8, 'the final count is written as the series ends');
    events.record(node, { type: 'Warning', reason: 'NodeNotUsable', action: 'ReadNode', note: 'later' });
    await events.settled();
    assert.equal((await stored()).length, 2, 'after the series ended, an occurrence is a new Event');
    assert.deepEqual(
      captured.lines.filter((l) => l.level !== 20),
      [],
    );
  });

  it('recreates a series whose Event is gone (deleted or expired)', async () => {
    const { events } = recorder();
    const subject = { kind: 'TunnelEndpoint', name: 'cluster-b' };
    const occurrence = { type: 'Normal', reason: 'PeerReady', action: 'Peer', note: 'ready' } as const;
    events.record(subject, occurrence);
    await events.settled();
    const [first] = await stored();
    await api.deleteNamespacedEvent({ name: first!.metadata!.name!, namespace: 'default' });
    events.record(subject, occurrence);
    await events.settled();
    const [again] = await stored();
    assert.equal(again!.series?.count, 2);
  });

  it("limits a flapping object's writes to client-go's spam filter burst, and leaves other objects alone", async () => {
    const { events } = recorder();
    for (let i = 0; i < eventRate.burst + 10; i++)
      events.record(
        { kind: 'Node', name: 'flapping', apiVersion: 'v1' },
        { type: 'Warning', reason: `Flap${i}`, action: 'ReadNode', note: 'x' },
      );
    events.record({ kind: 'Node', name: 'calm', apiVersion: 'v1' }, { type: 'Normal', reason: 'Calm', action: 'ReadNode', note: 'x' });
    await events.settled();
    const names = (await stored()).map((e) => e.regarding!.name);
    assert.equal(names.filter((n) => n === 'flapping').length, eventRate.burst);
    assert.equal(names.filter((n) => n === 'calm').length, 1);
    clock += 300_000;
    events.record(
      { kind: 'Node', name: 'flapping', apiVersion: 'v1' },
      { type: 'Warning', reason: 'FlapLater', action: 'ReadNode', note: 'x' },
    );
    await events.settled();
    assert.equal((await stored()).filter((e) => e.regarding!.name === 'flapping').length, eventRate.burst + 1, 'a token every 5 minutes');
  });

  it('cuts a note to the 1 kB the server accepts', async () => {
    const { events } = recorder();
    events.record(
      { kind: 'Node', name: 'n', apiVersion: 'v1' },
      { type: 'Warning', reason: 'Long', action: 'ReadNode', note: 'é'.repeat(2000) },
    );
    await events.settled();
    const [event] = await stored();
    assert.ok(Buffer.byteLength(event!.note!) <= 1024 && event!.note!.endsWith('...'));
  });
});
