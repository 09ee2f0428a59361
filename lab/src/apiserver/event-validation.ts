/**
 * kube-apiserver's validation of Events (pkg/apis/core/validation/events.go, release-1.31), of both
 * APIs that serve them: core/v1 Events get legacyValidateEvent only (backwards compatibility), while
 * events.k8s.io/v1 Events get it and the strict rules of ValidateEventCreate and ValidateEventUpdate.
 * The real server validates the internal Event both are converted to (pkg/apis/events/v1/conversion.go),
 * so its causes name the internal fields: `involvedObject` for `regarding`, `message` for `note`,
 * `count` for `deprecatedCount`; these do the same.
 */
import { type KubeObject, isRecord } from './kube-object';
import { qualifiedNameProblems } from './object-meta-validation';
import type { StatusCause } from './status';
import { invalidValue, required, validateNameFormat } from './validation';

/** The internal Event's fields the rules read. */
interface InternalEvent {
  namespace: string;
  involvedObject: Record<string, unknown>;
  eventTime: unknown;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  message: string;
  type: unknown;
  series: unknown;
  related: unknown;
  firstTimestamp: unknown;
  lastTimestamp: unknown;
  count: unknown;
  source: Record<string, unknown>;
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');
const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
/** Go's len() of a string: its UTF-8 bytes. */
const bytes = (value: string) => Buffer.byteLength(value);

/** Length limits of events.go. */
const reportingInstanceLimit = 128;
const actionLimit = 128;
const reasonLimit = 128;
const noteLimit = 1024;

const fromCoreV1 = (event: KubeObject): InternalEvent => ({
  namespace: event.metadata.namespace ?? '',
  involvedObject: record(event.involvedObject),
  eventTime: event.eventTime,
  reportingController: text(event.reportingComponent),
  reportingInstance: text(event.reportingInstance),
  action: text(event.action),
  reason: text(event.reason),
  message: text(event.message),
  type: event.type,
  series: event.series,
  related: event.related,
  firstTimestamp: event.firstTimestamp,
  lastTimestamp: event.lastTimestamp,
  count: event.count,
  source: record(event.source),
});

/** pkg/apis/events/v1/conversion.go: regarding, note and the deprecated fields to the internal names. */
const fromEventsV1 = (event: KubeObject): InternalEvent => ({
  namespace: event.metadata.namespace ?? '',
  involvedObject: record(event.regarding),
  eventTime: event.eventTime,
  reportingController: text(event.reportingController),
  reportingInstance: text(event.reportingInstance),
  action: text(event.action),
  reason: text(event.reason),
  message: text(event.note),
  type: event.type,
  series: event.series,
  related: event.related,
  firstTimestamp: event.deprecatedFirstTimestamp,
  lastTimestamp: event.deprecatedLastTimestamp,
  count: event.deprecatedCount,
  source: record(event.deprecatedSource),
});

const unset = (value: unknown) => value === undefined || value === null || value === '' || value === 0;
const tooLong = (field: string, limit: number) => invalidValue(field, '', `can have at most ${limit} characters`);

/**
 * legacyValidateEvent: the Event's namespace agrees with its object's; a new-style Event (one with an
 * eventTime) names its reporting controller (a qualified name) and instance, an action and a reason, each
 * within its limit, and a note of at most 1 kB; the namespace is a DNS subdomain.
 */
function legacyCauses(event: InternalEvent): StatusCause[] {
  const causes: StatusCause[] = [];
  const involvedNamespace = text(event.involvedObject.namespace);
  const mismatch = () => invalidValue('involvedObject.namespace', involvedNamespace, 'does not match event.namespace');
  if (unset(event.eventTime)) {
    if (involvedNamespace === '' ? !['', 'default'].includes(event.namespace) : event.namespace !== involvedNamespace)
      causes.push(mismatch());
  } else {
    if (involvedNamespace === '' && !['default', 'kube-system'].includes(event.namespace)) causes.push(mismatch());
    if (event.reportingController === '') causes.push(required('reportingController'));
    for (const problem of qualifiedNameProblems(event.reportingController))
      causes.push(invalidValue('reportingController', event.reportingController, problem));
    if (event.reportingInstance === '') causes.push(required('reportingInstance'));
    if (bytes(event.reportingInstance) > reportingInstanceLimit) causes.push(tooLong('reportingInstance', reportingInstanceLimit));
    if (event.action === '') causes.push(required('action'));
    if (bytes(event.action) > actionLimit) causes.push(tooLong('action', actionLimit));
    if (event.reason === '') causes.push(required('reason'));
    if (bytes(event.reason) > reasonLimit) causes.push(tooLong('reason', reasonLimit));
    if (bytes(event.message) > noteLimit) causes.push(tooLong('message', noteLimit));
  }
  if (event.namespace !== '') causes.push(...validateNameFormat(event.namespace, 'subdomain', 'namespace'));
  return causes;
}

/** validateV1EventSeries: a series counts at least 2 and says when it was last seen. */
function seriesCauses(series: unknown): StatusCause[] {
  if (!isRecord(series)) return [];
  const causes: StatusCause[] = [];
  if (typeof series.count !== 'number' || series.count < 2) causes.push(invalidValue('series.count', '', 'should be at least 2'));
  if (unset(series.lastObservedTime)) causes.push(required('series.lastObservedTime'));
  return causes;
}

/** A core/v1 Event, created or updated: legacyValidateEvent only. */
export const validateCoreEvent = (event: KubeObject): StatusCause[] => legacyCauses(fromCoreV1(event));

/**
 * ValidateEventCreate for events.k8s.io/v1: the legacy rules, then an eventTime, a series that makes
 * sense, a type of Normal or Warning, and none of the deprecated fields (only core/v1 writers set them).
 */
export function validateEventsV1Create(object: KubeObject): StatusCause[] {
  const event = fromEventsV1(object);
  const causes = [...legacyCauses(event), ...seriesCauses(event.series)];
  if (unset(event.eventTime)) causes.push(required('eventTime'));
  if (event.type !== 'Normal' && event.type !== 'Warning') causes.push(invalidValue('type', '', `has invalid value: ${text(event.type)}`));
  for (const field of ['firstTimestamp', 'lastTimestamp', 'count'] as const)
    if (!unset(event[field])) causes.push(invalidValue(field, '', 'needs to be unset'));
  if (!unset(event.source.component) || !unset(event.source.host)) causes.push(invalidValue('source', '', 'needs to be unset'));
  return causes;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The fields ValidateEventUpdate keeps immutable, by their internal names. */
const immutableFields = [
  'involvedObject',
  'reason',
  'message',
  'source',
  'firstTimestamp',
  'lastTimestamp',
  'count',
  'type',
  'eventTime',
  'action',
  'related',
  'reportingController',
  'reportingInstance',
] as const;

/**
 * ValidateEventUpdate for events.k8s.io/v1: nothing of the occurrence changes. Its check of a changed
 * series is validateEventsV1Create's, which the registry runs on every update too: an unchanged series
 * passed it when created, so the answers are the real server's.
 */
export function validateEventsV1Update(nextObject: KubeObject, currentObject: KubeObject): StatusCause[] {
  const next = fromEventsV1(nextObject);
  const current = fromEventsV1(currentObject);
  return immutableFields
    .filter((field) => !same(next[field], current[field]))
    .map((field) => invalidValue(field, next[field], 'field is immutable'));
}
