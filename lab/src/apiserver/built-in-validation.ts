/**
 * kube-apiserver's own validation of built-in kinds, rule by rule, where Strait, helm or kubectl could send
 * what the real server refuses; each rule names its source in kubernetes/kubernetes (release-1.31).
 */
import { type KubeObject, isRecord } from './kube-object';
import type { StatusCause } from './status';
import { invalidValue } from './validation';

/**
 * A core/v1 Event (pkg/apis/core/validation/events.go, legacyValidateEvent): its involvedObject's
 * namespace must be its own; an Event about a cluster-scoped object (no namespace) lives in `default` (or
 * with no namespace), and, when it has an eventTime (a new-style Event), in `default` or `kube-system`.
 */
export function validateEvent(event: KubeObject): StatusCause[] {
  const involved = isRecord(event.involvedObject) ? event.involvedObject : {};
  const involvedNamespace = typeof involved.namespace === 'string' ? involved.namespace : '';
  const namespace = event.metadata.namespace ?? '';
  const allowed = involvedNamespace !== '' ? [involvedNamespace] : event.eventTime ? ['default', 'kube-system'] : ['', 'default'];
  return allowed.includes(namespace) ? [] : [invalidValue('involvedObject.namespace', involvedNamespace, 'does not match event.namespace')];
}
