/**
 * What a request asks to do, in the terms authorization speaks, derived from its method, path and query
 * exactly as kube-apiserver's RequestInfoFactory does: a resource request under /api/v1 or
 * /apis/<group>/<version> has a verb (GET of one object get, of a collection list, or watch with
 * `?watch` or a `/watch/` path; POST create; PUT update; PATCH patch; DELETE delete, of a collection
 * deletecollection), a resource, maybe a subresource, namespace and name; a list or watch whose query
 * decodes and whose field selector requires `metadata.name=<name>` names that object (selectedName).
 * Anything else is a non-resource request (`/version`, `/apis`) with the method, lowercased, as its verb.
 */
import type { RequestInfo } from './request-attributes';
import { pathSegments } from './request-target';
import { fieldTerms, labelSelector } from './selectors';

export type { RequestInfo } from './request-attributes';

/**
 * The query's watch parameter as Kubernetes decodes a bool (runtime.Convert_Slice_string_To_bool): present
 * and neither `0` nor `false` in any case (`f` is true).
 */
export function watchRequested(query: URLSearchParams): boolean {
  const value = query.get('watch');
  return value !== null && value !== '0' && value.toLowerCase() !== 'false';
}

const namespaceSubresources = ['status', 'finalize'];

/** Whether strconv.ParseInt(text, 10, 64) takes it (runtime.Convert_Slice_string_To_int64). */
const isInt64 = (text: string) => /^[+-]?\d+$/.test(text) && BigInt(text) >= -(2n ** 63n) && BigInt(text) < 2n ** 63n;

/** Whether the query decodes as ListOptions (ParameterCodec.DecodeParameters): its selectors parse, its integers are int64s. */
function decodesAsListOptions(query: URLSearchParams): boolean {
  try {
    if (query.has('labelSelector')) labelSelector(query.get('labelSelector'));
    if (query.has('fieldSelector')) fieldTerms(query.get('fieldSelector')!);
  } catch {
    return false;
  }
  return ['limit', 'timeoutSeconds'].every((p) => !query.has(p) || isInt64(query.get(p)!));
}

/**
 * The object a list or watch (by its query, not a /watch/ path) names, as kube-apiserver's
 * RequestInfoFactory finds it (k8s.io/apiserver pkg/endpoints/request/requestinfo.go, since 1.11): the
 * query decoded as ListOptions, none if that fails; else the value of the first `metadata.name` term with
 * `=` or `==` of the sorted field selector (fields.Selector.RequiresExactMatch), unless it could not be a
 * path segment (path.IsValidPathSegmentName: `.`, `..`, or containing `/` or `%`). RBAC then matches it
 * against resourceNames as a get's name.
 */
function selectedName(query: URLSearchParams): string {
  const text = query.get('fieldSelector');
  if (text === null || !decodesAsListOptions(query)) return '';
  const term = fieldTerms(text).find((t) => t.field === 'metadata.name' && t.equal);
  if (!term || term.value === '.' || term.value === '..' || /[/%]/.test(term.value)) return '';
  return term.value;
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
    named = selectedName(query);
  }
  if (named === '' && verb === 'delete') verb = 'deletecollection';
  return { resourceRequest: true, verb, group, version, namespace, resource, subresource, name: named, path };
}
