/**
 * The API server's errors as Kubernetes reports them: a meta/v1 Status with the HTTP code, the reason
 * clients switch on (NotFound, AlreadyExists, Conflict, Invalid, Expired...) and the message the real
 * server writes, so a client's error handling tested here is the one a real cluster needs.
 */
import type { RequestInfo } from './request-attributes';

export interface StatusCause {
  /** Absent in an admission policy's denial (its one cause is the message). */
  reason?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  /** The resource (plural) for most errors; the kind for Invalid, as the real server does. */
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A Status's list metadata: the continue token a 410 for a compacted continue gives back. */
export interface StatusListMeta {
  continue?: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
    readonly listMeta: StatusListMeta = {},
  ) {
    super(message);
  }

  status(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: this.listMeta,
      status: 'Failure',
      message: this.message,
      // An error that is no Status (StatusReasonUnknown) has none, and Go omits it.
      ...(this.reason ? { reason: this.reason } : {}),
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** What an error names: `nodedataplanes.strait.io "n1"`, `nodes "n1"`. */
export interface Named {
  /** `nodedataplanes.strait.io`, `nodes`. */
  groupResource: string;
  group: string;
  plural: string;
  name: string;
}

export const badRequest = (message: string) => new ApiError(400, 'BadRequest', message);

export const notFound = (what: Named) =>
  new ApiError(404, 'NotFound', `${what.groupResource} "${what.name}" not found`, {
    name: what.name,
    group: what.group,
    kind: what.plural,
  });

/** go-restful's 404 for a path no route has, as kube-apiserver writes it (empty details). */
export const noSuchPath = () => new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});

export const alreadyExists = (what: Named) =>
  new ApiError(409, 'AlreadyExists', `${what.groupResource} "${what.name}" already exists`, {
    name: what.name,
    group: what.group,
    kind: what.plural,
  });

export const conflict = (what: Named, why: string) =>
  new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${what.groupResource} "${what.name}": ${why}`, {
    name: what.name,
    group: what.group,
    kind: what.plural,
  });

export const staleResourceVersion = 'the object has been modified; please apply your changes to the latest version and try again';

/** `NodeDataplane.strait.io "n1" is invalid: spec.podCIDR: Invalid value: ...` (several causes in brackets). */
export function invalid(kind: string, group: string, name: string, causes: StatusCause[]): ApiError {
  const listed = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const what = listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${what}`, { name, group, kind, causes });
}

/** The watch answer that makes an informer relist; a list's at a compacted version (with a token to go on from, for a continue). */
export const expired = (message: string, listMeta?: StatusListMeta) => new ApiError(410, 'Expired', message, undefined, listMeta);

/**
 * storage.NewTooLargeResourceVersionError: a read for a version the watch cache has not reached within
 * its wait, a 504 the client retries after a second.
 */
export const tooLargeResourceVersion = (wanted: number, current: number) =>
  new ApiError(504, 'Timeout', `Timeout: Too large resource version: ${wanted}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });

export const unauthorized = () => new ApiError(401, 'Unauthorized', 'Unauthorized');

/**
 * What kube-apiserver answers a request authorization refused: `nodedataplanes.strait.io "n1" is
 * forbidden: User "u" cannot patch resource "nodedataplanes/status" in API group "strait.io" at the
 * cluster scope` (`in the namespace "ns"` for a namespaced one; `forbidden: User "u" cannot get path
 * "/x"` for a non-resource URL), then the authorizer's reason, if any.
 */
export function forbidden(user: string, request: RequestInfo, reason: string): ApiError {
  const why = reason ? `: ${reason}` : '';
  if (!request.resourceRequest)
    return new ApiError(
      403,
      'Forbidden',
      `forbidden: User ${JSON.stringify(user)} cannot ${request.verb} path ${JSON.stringify(request.path)}${why}`,
      {},
    );
  const { verb, group, resource, subresource, namespace, name } = request;
  const scope = namespace ? `in the namespace ${JSON.stringify(namespace)}` : 'at the cluster scope';
  const cannot = `User ${JSON.stringify(user)} cannot ${verb} resource ${JSON.stringify(subresource ? `${resource}/${subresource}` : resource)} in API group ${JSON.stringify(group)} ${scope}`;
  const groupResource = group ? `${resource}.${group}` : resource;
  const what = name ? `${groupResource} ${JSON.stringify(name)}` : groupResource;
  return new ApiError(403, 'Forbidden', `${what} is forbidden: ${cannot}${why}`, {
    ...(name ? { name } : {}),
    ...(group ? { group } : {}),
    kind: resource,
  });
}

/** go-restful's 405 as kube-apiserver writes it (server/handler.go serviceErrorHandler → NewGenericServerResponse: empty details). */
export const methodNotAllowed = () =>
  new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
