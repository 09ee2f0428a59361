/**
 * kube-apiserver's validation of events.k8s.io/v1 Events, as the lab API server applies it, driven by
 * client-node's EventsV1Api: each rule of pkg/apis/core/validation/events.go (release-1.31) is refused
 * with the real cause (422, the internal field name the real server reports) and the mended Event accepted.
 */
import assert from 'node:assert/strict';
import { type EventsV1Event, EventsV1Api, PatchStrategy, V1MicroTime, setHeaderOptions } from '@kubernetes/client-node';
import { type TestApiServer, apiFailure, startTestApiServer } from '../../support/apiserver';

describe('lab API server: events.k8s.io/v1 Events validated as kube-apiserver validates them', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let events: EventsV1Api;
  before(async () => {
    t = await startTestApiServer();
    events = t.kubeConfig.makeApiClient(EventsV1Api);
  });
  after(async () => t.close());

  let n = 0;
  /** A valid Event about a Node, with `change` applied (undefined removes a field). */
  const event = (change: Record<string, unknown> = {}): EventsV1Event => {
    const valid: Record<string, unknown> = {
      metadata: { name: `node-a.${(++n).toString(16)}`, namespace: 'default' },
      eventTime: new V1MicroTime(),
      reportingController: 'strait.io/controller',
      reportingInstance: 'strait-controller-0',
      action: 'ReadNode',
      reason: 'NodeNotUsable',
      note: 'node-a has no PodCIDR',
      type: 'Warning',
      regarding: { apiVersion: 'v1', kind: 'Node', name: 'node-a' },
    };
    for (const [key, value] of Object.entries(change)) {
      if (value === undefined) delete valid[key];
      else valid[key] = value;
    }
    return valid as unknown as EventsV1Event;
  };
  /** The causes a create of `body` is refused with. */
  const refusal = async (body: EventsV1Event, namespace = 'default') => {
    const failure = await apiFailure(events.createNamespacedEvent({ namespace, body }));
    assert.equal(failure.code, 422);
    assert.equal(failure.status.reason, 'Invalid');
    return failure.status.details.causes as { reason: string; message: string; field: string }[];
  };
  const cause = (reason: string, field: string, message: string) => ({ reason, field, message });

  it('accepts a complete Event', async () => {
    const created = await events.createNamespacedEvent({ namespace: 'default', body: event() });
    assert.equal(created.reportingController, 'strait.io/controller');
  });

  // ValidateEventCreate: `if event.EventTime.Time == zeroTime { field.Required("eventTime") }`.
  it('requires eventTime', async () => {
    assert.deepEqual(await refusal(event({ eventTime: undefined })), [cause('FieldValueRequired', 'eventTime', 'Required value')]);
  });

  // legacyValidateEvent: `len(event.ReportingController) == 0` → Required; IsQualifiedName.
  it('requires reportingController, a qualified name', async () => {
    assert.deepEqual(await refusal(event({ reportingController: undefined })), [
      cause('FieldValueRequired', 'reportingController', 'Required value'),
      cause('FieldValueInvalid', 'reportingController', 'Invalid value: "": name part must be non-empty'),
    ]);
    const [bad] = await refusal(event({ reportingController: 'strait.io/a/b' }));
    assert.equal(bad!.field, 'reportingController');
    assert.match(bad!.message, /^Invalid value: "strait.io\/a\/b": a qualified name must consist of/);
  });

  // legacyValidateEvent: reportingInstance required, at most ReportingInstanceLengthLimit (128).
  it('requires reportingInstance of at most 128 characters', async () => {
    assert.deepEqual(await refusal(event({ reportingInstance: undefined })), [
      cause('FieldValueRequired', 'reportingInstance', 'Required value'),
    ]);
    assert.deepEqual(await refusal(event({ reportingInstance: 'i'.repeat(129) })), [
      cause('FieldValueInvalid', 'reportingInstance', 'Invalid value: "": can have at most 128 characters'),
    ]);
    await events.createNamespacedEvent({ namespace: 'default', body: event({ reportingInstance: 'i'.repeat(128) }) });
  });

  // legacyValidateEvent: action and reason required, each at most 128 (ActionLengthLimit, ReasonLengthLimit).
  it('requires action and reason of at most 128 characters', async () => {
    assert.deepEqual(await refusal(event({ action: undefined })), [cause('FieldValueRequired', 'action', 'Required value')]);
    assert.deepEqual(await refusal(event({ action: 'A'.repeat(129) })), [
      cause('FieldValueInvalid', 'action', 'Invalid value: "": can have at most 128 characters'),
    ]);
    assert.deepEqual(await refusal(event({ reason: undefined })), [cause('FieldValueRequired', 'reason', 'Required value')]);
    assert.deepEqual(await refusal(event({ reason: 'R'.repeat(129) })), [
      cause('FieldValueInvalid', 'reason', 'Invalid value: "": can have at most 128 characters'),
    ]);
  });

  // legacyValidateEvent: `len(event.Message) > NoteLengthLimit` (1024 bytes: Go's len); the note is `message` inside.
  it('refuses a note over 1 kB, counted in bytes, naming the internal field message', async () => {
    assert.deepEqual(await refusal(event({ note: 'é'.repeat(513) })), [
      cause('FieldValueInvalid', 'message', 'Invalid value: "": can have at most 1024 characters'),
    ]);
    await events.createNamespacedEvent({ namespace: 'default', body: event({ note: 'é'.repeat(512) }) });
  });

  // ValidateEventCreate: `event.Type != Normal && != Warning` → Invalid "has invalid value: <type>".
  it('accepts only the types Normal and Warning', async () => {
    assert.deepEqual(await refusal(event({ type: 'Error' })), [
      cause('FieldValueInvalid', 'type', 'Invalid value: "": has invalid value: Error'),
    ]);
    await events.createNamespacedEvent({ namespace: 'default', body: event({ type: 'Normal' }) });
  });

  // legacyValidateEvent with an eventTime: an Event about an object without a namespace (regarding a
  // Node) lives in `default` or `kube-system`; one about a namespaced object in that object's namespace.
  it("puts an Event about a cluster-scoped object in default or kube-system, and one about a namespaced object in the object's", async () => {
    await t.kubeConfig
      .makeApiClient((await import('@kubernetes/client-node')).CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'strait-system' } } });
    assert.deepEqual(await refusal(event({ metadata: { name: 'x.1', namespace: 'strait-system' } }), 'strait-system'), [
      cause('FieldValueInvalid', 'involvedObject.namespace', 'Invalid value: "": does not match event.namespace'),
    ]);
    await events.createNamespacedEvent({ namespace: 'kube-system', body: event({ metadata: { name: 'x.2', namespace: 'kube-system' } }) });
    const pod = { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'strait-system' };
    await events.createNamespacedEvent({
      namespace: 'strait-system',
      body: event({ metadata: { name: 'x.3', namespace: 'strait-system' }, regarding: pod }),
    });
  });

  // ValidateEventCreate: deprecatedFirstTimestamp, deprecatedLastTimestamp, deprecatedCount and
  // deprecatedSource "need to be unset" (their internal names firstTimestamp, lastTimestamp, count, source).
  it('refuses the deprecated core/v1 fields', async () => {
    const now = new Date();
    assert.deepEqual(
      await refusal(
        event({ deprecatedFirstTimestamp: now, deprecatedLastTimestamp: now, deprecatedCount: 3, deprecatedSource: { component: 'x' } }),
      ),
      ['firstTimestamp', 'lastTimestamp', 'count', 'source'].map((field) =>
        cause('FieldValueInvalid', field, 'Invalid value: "": needs to be unset'),
      ),
    );
  });

  // validateV1EventSeries: series.count at least 2, series.lastObservedTime required; on update only when the series changes.
  it('validates a series on create and on a patch that changes it', async () => {
    assert.deepEqual(await refusal(event({ series: { count: 1, lastObservedTime: new V1MicroTime() } })), [
      cause('FieldValueInvalid', 'series.count', 'Invalid value: "": should be at least 2'),
    ]);
    const created = await events.createNamespacedEvent({ namespace: 'default', body: event() });
    const name = created.metadata!.name!;
    const patch = (body: object) =>
      events.patchNamespacedEvent({ name, namespace: 'default', body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    const refused = await apiFailure(patch({ series: { count: 1 } }));
    assert.equal(refused.code, 422);
    assert.deepEqual(refused.status.details.causes, [
      cause('FieldValueInvalid', 'series.count', 'Invalid value: "": should be at least 2'),
      cause('FieldValueRequired', 'series.lastObservedTime', 'Required value'),
    ]);
    const patched = await patch({ series: { count: 2, lastObservedTime: new V1MicroTime().toISOString() } });
    assert.equal(patched.series?.count, 2);
  });

  // ValidateEventUpdate: the occurrence is immutable (here its note, the internal message, and its action).
  it('keeps an Event’s note and action immutable', async () => {
    const created = await events.createNamespacedEvent({ namespace: 'default', body: event() });
    const refused = await apiFailure(
      events.patchNamespacedEvent(
        { name: created.metadata!.name!, namespace: 'default', body: { note: 'other', action: 'Other' } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    assert.equal(refused.code, 422);
    assert.deepEqual(
      refused.status.details.causes.map((c: { field: string }) => c.field),
      ['message', 'action'],
    );
  });
});
