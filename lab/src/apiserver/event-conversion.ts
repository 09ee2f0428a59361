/**
 * events.k8s.io/v1 Events and core/v1 Events are one resource in kube-apiserver: stored once (in
 * core's form) and converted for each request, so an Event written through either API is read, listed
 * and watched through both, and `kubectl describe` lists what a controller wrote with events.k8s.io/v1.
 * The field mapping of pkg/apis/events/v1/conversion.go (Convert_v1_Event_To_core_Event and back):
 * regarding is involvedObject, note is message, reportingController is reportingComponent, the
 * deprecated* fields are core's source, firstTimestamp, lastTimestamp and count; the rest keeps its name.
 */
import type { KubeObject } from './kube-object';
import type { ResourceView } from './viewing-store';

/** events.k8s.io/v1 field → core/v1 field, where the names differ. */
const renamed: readonly [string, string][] = [
  ['regarding', 'involvedObject'],
  ['note', 'message'],
  ['reportingController', 'reportingComponent'],
  ['deprecatedSource', 'source'],
  ['deprecatedFirstTimestamp', 'firstTimestamp'],
  ['deprecatedLastTimestamp', 'lastTimestamp'],
  ['deprecatedCount', 'count'],
];

const toCore = new Map(renamed);
const toV1 = new Map(renamed.map(([v1, core]) => [core, v1]));

function convert(object: KubeObject, apiVersion: string, names: ReadonlyMap<string, string>): KubeObject {
  const { apiVersion: _apiVersion, kind, metadata, ...rest } = object;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(rest)) out[names.get(field) ?? field] = value;
  return { apiVersion, kind, metadata, ...out };
}

export const eventsV1View: ResourceView = {
  resource: 'events.events.k8s.io',
  storage: 'events',
  fromStorage: (core) => convert(core, 'events.k8s.io/v1', toV1),
  toStorage: (v1) => convert(v1, 'v1', toCore),
};
