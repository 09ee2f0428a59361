/**
 * What a request asks to do, in the terms authorization speaks, derived from its method, path and query
 * exactly as kube-apiserver's RequestInfoFactory does: a resource request under /api/v1 or
 * /apis/<group>/<version> has a verb (GET of one object get, of a collection list, or watch with
 * `?watch` or a `/watch/` path; POST create; PUT update; PATCH patch; DELETE delete, of a collection
 * deletecollection), a resource, maybe a subresource, namespace and name; a list or watch with the
 * field selector `metadata.name=<name>` names that object. Anything else is a non-resource request
 * (`/version`, `/apis`) with the method, lowercased, as its verb.
 */
import { pathSegments } from './request-target';

export type RequestInfo =
  | {
      resourceRequest: true;
      verb: string;
      group: string;
      version: string;
      /** '' for a cluster-scoped request (also a list across all namespaces). */
      namespace: string;
      resource: string;
      subresource: string;
      /** '' when the request names no object. */
      name: string;
      path: string;
    }
  | { resourceRequest: false; verb: string; path: string };

/** The query's watch parameter as Kubernetes decodes a bool: present and not `0`, `f` or `false`. */
export function watchRequested(query: URLSearchParams): boolean {
  const value = query.get('watch');
  return value !== null && !['0', 'f', 'false'].includes(value.toLowerCase());
}

const namespaceSubresources = ['status', 'finalize'];

/** The name a field selector requires with `metadata.name=` or `==` (one of its comma-separated terms). */
function selectedName(fieldSelector: string | null): string | undefined {
  for (const term of (fieldSelector ?? '').split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term);
    // path.IsValidPathSegmentName: a name that could not be a path segment names nothing.
    if (m && m[1] !== '.' && m[1] !== '..' && !/[/%]/.test(m[1]!)) return m[1];
  }
  return undefined;
}

/** The request's verb and resource from its method and its target's path (unescaped: request-target.ts) and query. */
export function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const nonResource: RequestInfo = { resourceRequest: false, verb: method.toLowerCase(), path };
  let parts = pathSegments(path);
  if (parts.length < 3 || (parts[0] !== 'api' && parts[0] !== 'apis')) return nonResource;
  let group = '';
  if (parts[0] === 'apis') {
    if (parts.length < 4) return nonResource;
    group = parts[1]!;
    parts = parts.slice(2);
  } else {
    parts = parts.slice(1);
  }
  const version = parts[0]!;
  parts = parts.slice(1);

  let verb: string;
  if (parts[0] === 'watch' && parts.length >= 2) {
    verb = 'watch';
    parts = parts.slice(1);
  } else {
    verb = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? '';
  }
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1]!;
    if (parts.length > 2 && !namespaceSubresources.includes(parts[2]!)) parts = parts.slice(2);
  }
  const [resource = '', name = '', subresource = ''] = parts;
  let named = name;
  if (named === '' && verb === 'get') {
    verb = watchRequested(query) ? 'watch' : 'list';
    named = selectedName(query.get('fieldSelector')) ?? '';
  }
  if (named === '' && verb === 'delete') verb = 'deletecollection';
  return { resourceRequest: true, verb, group, version, namespace, resource, subresource, name: named, path };
}
