/** The agent's status on the lab API server through the real client: when it writes, and what (a server-side apply by strait-agent). */
import assert from 'node:assert/strict';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { KubernetesStatusSink } from '../../src/agent/kubernetes/status-sink';
import type { NodeDataplaneStatus } from '../../src/api/node-dataplane';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { nodeObject, nodeSpecDocument } from '../support/node-specs';

const strait = { group: 'strait.io', version: 'v1alpha1', plural: 'nodedataplanes' };

describe('agent: status on the API server (KubernetesStatusSink)', function () {
  this.timeout(20_000);
  let api: TestApiServer;
  let requests: CapturedLog;
  let sinkLog: CapturedLog;
  let custom: CustomObjectsApi;
  let clock: number;
  let sink: KubernetesStatusSink;

  beforeEach(async () => {
    requests = captureLog();
    sinkLog = captureLog();
    api = await startTestApiServer({ logger: requests.log });
    custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createClusterCustomObject({ ...strait, body: nodeObject(nodeSpecDocument()) });
    clock = 0;
    sink = new KubernetesStatusSink({ api: custom, nodeName: 'n1', refreshMs: 30_000, log: sinkLog.log, now: () => clock });
  });
  afterEach(() => api.close());

  let second = 0;
  const beat = (over: Partial<NodeDataplaneStatus> = {}): NodeDataplaneStatus => ({
    ready: true,
    time: `2026-01-01T00:00:${String(second++ % 60).padStart(2, '0')}.000Z`,
    dataplane: 'ebpf',
    specGeneration: 1,
    ...over,
  });
  const statusWrites = () =>
    requests.lines.filter(
      (l) => l.msg === 'request' && l.method === 'PATCH' && l.path === '/apis/strait.io/v1alpha1/nodedataplanes/n1/status',
    ).length;
  const stored = async () => ((await custom.getClusterCustomObject({ ...strait, name: 'n1' })) as { status?: NodeDataplaneStatus }).status;
  const messages = () => sinkLog.lines.map((l) => l.msg);

  it('writes when something other than the time changed, an unchanged status only after the refresh period, and deletes fields no longer reported', async () => {
    const first = beat({ error: 'spec rejected: spec.podCIDR: bad (got "x")' });
    sink.write(first);
    await sink.flushed();
    assert.equal(statusWrites(), 1);
    assert.deepEqual(await stored(), first);

    for (let i = 0; i < 5; i++) sink.write(beat({ error: first.error! }));
    clock = 29_999;
    sink.write(beat({ error: first.error! }));
    await sink.flushed();
    assert.equal(statusWrites(), 1, 'only the time changed, within the refresh period');

    clock = 30_000;
    const refreshed = beat({ error: first.error! });
    sink.write(refreshed);
    await sink.flushed();
    assert.equal(statusWrites(), 2, 'the refresh');
    assert.deepEqual(await stored(), refreshed);

    const fixed = beat({ appliedSpec: 'e6b714edfe2924f1' });
    sink.write(fixed);
    await sink.flushed();
    assert.equal(statusWrites(), 3);
    assert.deepEqual(await stored(), fixed, 'error is gone from the object, appliedSpec is there');
    // A server-side apply of the status by its own manager: what it stops reporting goes, nobody else's fields do.
    const { metadata } = (await custom.getClusterCustomObject({ ...strait, name: 'n1' })) as {
      metadata: { managedFields: { manager: string; operation: string; subresource?: string }[] };
    };
    assert.ok(
      metadata.managedFields.some((m) => m.manager === 'strait-agent' && m.operation === 'Apply' && m.subresource === 'status'),
      JSON.stringify(metadata.managedFields),
    );
  });

  it('keeps one write in flight: of the statuses reported meanwhile only the newest goes out', async () => {
    const [a, b, c] = [beat({ specGeneration: 1 }), beat({ specGeneration: 2 }), beat({ specGeneration: 3 })];
    sink.write(a);
    sink.write(b);
    sink.write(c);
    await sink.flushed();
    assert.equal(statusWrites(), 2);
    assert.deepEqual(await stored(), c);
  });

  it('logs a failed write once, retries it with every report, and says when it is written again', async () => {
    await custom.deleteClusterCustomObject({ ...strait, name: 'n1' });
    const status = beat({ specGeneration: 4 });
    for (let i = 0; i < 3; i++) {
      sink.write({ ...status, time: beat().time });
      await sink.flushed();
    }
    assert.equal(statusWrites(), 3, 'each report retried the unchanged status');
    const failures = sinkLog.lines.filter((l) => l.msg === 'cannot write the status; retrying with the next report');
    assert.equal(failures.length, 1, messages().join('\n'));
    assert.match(String(failures[0]!.error), /^404 /);

    await custom.createClusterCustomObject({ ...strait, body: nodeObject(nodeSpecDocument()) });
    const last = { ...status, time: beat().time };
    sink.write(last);
    await sink.flushed();
    assert.deepEqual(await stored(), last);
    assert.equal(messages().filter((m) => m === 'status written again').length, 1);
    sink.write({ ...status, time: beat().time });
    await sink.flushed();
    assert.equal(statusWrites(), 4, 'written: nothing more until something changes');
  });
});
