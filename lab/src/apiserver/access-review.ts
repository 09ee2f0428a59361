/**
 * SelfSubjectAccessReview (`POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`), what
 * `kubectl auth can-i` asks: may the requesting user do this? Answered from the same authorization every
 * request gets, as kube-apiserver answers it (201, the review with its status: allowed, and the reason),
 * and never stored.
 */
import type { UserInfo } from './authentication';
import { isRecord } from './kube-object';
import type { Decision } from './rbac';
import type { RequestInfo } from './request-info';
import { type ApiError, badRequest, invalid } from './status';

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

function spec(body: unknown): { resource?: Record<string, unknown>; nonResource?: Record<string, unknown> } {
  if (!isRecord(body)) throw badRequest('the body of the request is not a SelfSubjectAccessReview object');
  const given = isRecord(body.spec) ? body.spec : {};
  const resource = isRecord(given.resourceAttributes) ? given.resourceAttributes : undefined;
  const nonResource = isRecord(given.nonResourceAttributes) ? given.nonResourceAttributes : undefined;
  const refuse = (field: string, value: unknown, why: string): ApiError =>
    invalid('SelfSubjectAccessReview', 'authorization.k8s.io', '', [
      { reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(JSON.stringify(value ?? null))}: ${why}`, field },
    ]);
  if (resource && nonResource)
    throw refuse('spec.nonResourceAttributes', nonResource, 'cannot be specified in combination with resourceAttributes');
  if (!resource && !nonResource)
    throw refuse('spec.resourceAttributes', nonResource, 'exactly one of nonResourceAttributes or resourceAttributes must be specified');
  return { resource, nonResource };
}

/** The review `body` answered for `user` by `authorize`. */
export function selfSubjectAccessReview(
  body: unknown,
  user: UserInfo,
  authorize: (user: UserInfo, request: RequestInfo) => Decision,
): Record<string, unknown> {
  const { resource, nonResource } = spec(body);
  const request: RequestInfo = resource
    ? {
        resourceRequest: true,
        verb: text(resource.verb),
        group: text(resource.group),
        version: text(resource.version),
        namespace: text(resource.namespace),
        resource: text(resource.resource),
        subresource: text(resource.subresource),
        name: text(resource.name),
        path: '',
      }
    : { resourceRequest: false, verb: text(nonResource!.verb), path: text(nonResource!.path) };
  const decision = authorize(user, request);
  const given = body as Record<string, unknown>;
  return {
    kind: 'SelfSubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { ...(isRecord(given.metadata) ? given.metadata : {}), creationTimestamp: null },
    spec: given.spec,
    status: { allowed: decision.allowed, ...(decision.reason ? { reason: decision.reason } : {}) },
  };
}
