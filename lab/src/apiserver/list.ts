/**
 * A list request as kube-apiserver 1.31 answers it. Its options are checked first (ValidateListOptions:
 * 422). Then, as the cacher's shouldDelegateList decides, it is served either from the watch cache —
 * resourceVersion unset (the newest state), "0" (any state: `limit` is ignored) or N with NotOlderThan
 * (after waiting for N, freshness.ts) — or from etcd: a `continue` token, resourceVersionMatch=Exact, or
 * a `limit` with a resourceVersion and no match (the legacy exact read) list the state AT a version, so
 * the pages of one list are a consistent snapshot. A version the store has compacted is a 410 Expired
 * (with a token to go on inconsistently, for a continue); one it has not reached is etcd's future
 * revision error. A page ends at `limit`; its continue token is the real one (`{"v":"meta.k8s.io/v1",
 * "rv":<version>,"start":<key after the last item>}`, base64url), and remainingItemCount is given when no
 * selector filters the list (etcd counts keys, not matches).
 */
import type { KubeObject } from './kube-object';
import { ApiError, type StatusCause, badRequest, expired, invalid } from './status';
import type { Store } from './store';
import type { Selector } from './selectors';

export interface ListOptions {
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

export interface ListPage {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

/** What the list covers: a resource, in one namespace or all, the objects `matches` selects. */
export interface ListScope {
  resource: string;
  namespace: string | undefined;
  matches: Selector;
  /** A label or field selector was given (SelectionPredicate.Empty is false). */
  selected: boolean;
}

const supportedMatches = ['Exact', 'NotOlderThan', ''];

/** ValidateListOptions (apimachinery pkg/apis/meta/internalversion/validation): the 422 of a list or watch. */
export function validateListOptions(options: ListOptions, watch: boolean): void {
  const match = options.resourceVersionMatch;
  const causes: StatusCause[] = [];
  const forbid = (message: string) =>
    causes.push({ reason: 'FieldValueForbidden', message: `Forbidden: ${message}`, field: 'resourceVersionMatch' });
  if (match && watch) forbid('resourceVersionMatch is forbidden for watch');
  else if (match) {
    if (!options.resourceVersion) forbid('resourceVersionMatch is forbidden unless resourceVersion is provided');
    if (options.continue) forbid('resourceVersionMatch is forbidden when continue is provided');
    if (!supportedMatches.includes(match)) {
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: ${JSON.stringify(match)}: supported values: ${supportedMatches.map((m) => JSON.stringify(m)).join(', ')}`,
        field: 'resourceVersionMatch',
      });
    }
    if (match === 'Exact' && options.resourceVersion === '0') forbid('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  }
  if (causes.length > 0) throw invalid('ListOptions', 'meta.k8s.io', '', causes);
}

/** A resourceVersion parameter as a number (0 for unset and "0"), or the 400 of one that is none. */
export function parseResourceVersion(text: string | undefined): number {
  if (!text) return 0;
  if (!/^\d+$/.test(text)) throw badRequest(`invalid resource version: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Whether etcd serves the list rather than the watch cache (cacher.go shouldDelegateList, 1.31). */
function fromStorage(options: ListOptions): boolean {
  const { limit, resourceVersion, resourceVersionMatch: match } = options;
  const legacyExact = (limit ?? 0) > 0 && !match && !!resourceVersion && resourceVersion !== '0';
  return !!options.continue || (!!match && match !== 'NotOlderThan') || legacyExact;
}

/** The version a list from the watch cache must wait for (waitUntilFreshAndBlock), 0 for none. */
export function awaitedResourceVersion(options: ListOptions): number {
  return fromStorage(options) ? 0 : parseResourceVersion(options.resourceVersion);
}

interface ContinueToken {
  /** The version the first page was read at; -1: the newest (a token given with a 410). */
  rv: number;
  /** The key (relative to the list's prefix) the next page starts at. */
  start: string;
}

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: token.rv, start: token.start })).toString('base64url');
}

/** What Go's encoding/json calls a JSON value's type in an UnmarshalTypeError. */
const jsonType = (value: unknown) =>
  Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value === 'boolean' ? 'bool' : typeof value;

/** The fields of storage's continueToken and their Go types. */
const tokenFields = { v: 'string', rv: 'int64', start: 'string' } as const;

/** Go's encoding/json decoding a token into continueToken: its first type error, if any. */
function unmarshalError(token: unknown): string | undefined {
  if (token === null) return undefined;
  if (typeof token !== 'object' || Array.isArray(token))
    return `json: cannot unmarshal ${jsonType(token)} into Go value of type storage.continueToken`;
  for (const [field, goType] of Object.entries(tokenFields)) {
    const value = (token as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    const fits = goType === 'string' ? typeof value === 'string' : typeof value === 'number' && Number.isSafeInteger(value);
    const what = typeof value === 'number' ? `number ${value}` : jsonType(value);
    if (!fits) return `json: cannot unmarshal ${what} into Go struct field continueToken.${field} of type ${goType}`;
  }
  return undefined;
}

/** path.Clean would leave `/key` as it is: no empty, `.` or `..` segment, no trailing slash. */
const isClean = (key: string) =>
  key === '/' ||
  key
    .slice(1)
    .split('/')
    .every((segment) => !['', '.', '..'].includes(segment));

/**
 * storage.DecodeContinue, or the 400 etcd3's GetList answers a token it cannot read with. Go's JSON
 * syntax errors are not reproduced word for word (the text after `continue key is not valid: ` differs).
 */
function decodeContinue(text: string): ContinueToken {
  const refuse = (why: string) => badRequest(`invalid continue token: continue key is not valid${why}`);
  const illegal = /[^A-Za-z0-9_-]/.exec(text);
  if (illegal) throw refuse(`: illegal base64 data at input byte ${illegal.index}`);
  let token: unknown;
  try {
    token = JSON.parse(Buffer.from(text, 'base64url').toString());
  } catch (err) {
    throw refuse(`: ${(err as Error).message}`);
  }
  const typeError = unmarshalError(token);
  if (typeError) throw refuse(`: ${typeError}`);
  const { v = '', rv = 0, start = '' } = (token ?? {}) as { v?: string; rv?: number; start?: string };
  if (v !== 'meta.k8s.io/v1') throw refuse(`: server does not recognize this encoded version ${v}`);
  if (rv === 0) throw refuse(': incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (start === '') throw refuse(': encoded start key empty (version meta.k8s.io/v1)');
  // A start key that would climb out of the list's prefix is refused (path.Clean changes it).
  const key = start.startsWith('/') ? start : `/${start}`;
  if (!isClean(key)) throw refuse(`: ${start}`);
  return { rv, start: key.slice(1) };
}

/** An object's key under the list's prefix, as etcd orders them: `name` in one namespace (or cluster-scoped), else `namespace/name`. */
const keyIn = (scope: ListScope) => (o: KubeObject) =>
  scope.namespace === undefined && o.metadata.namespace !== undefined ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

/** The page of `scope` the options ask for, from a store at least as new as awaitedResourceVersion (the router waited). */
export async function listPage(store: Store, scope: ListScope, options: ListOptions): Promise<ListPage> {
  const current = store.resourceVersion;
  if (!fromStorage(options)) {
    // The watch cache holds the newest state; it ignores a limit with resourceVersion "0" (computeListLimit).
    const limit = options.resourceVersion === '0' ? undefined : options.limit;
    return page(scope, store.list(scope.resource, scope.namespace), current, limit, '');
  }
  let at = parseResourceVersion(options.resourceVersion);
  let start = '';
  if (options.continue) {
    const token = decodeContinue(options.continue);
    if (at > 0) throw badRequest('specifying resource version is not allowed when using continue');
    at = token.rv < 0 ? current : token.rv;
    start = token.start;
  }
  if (at > current) throw futureRevision();
  const objects = await store.listAt(scope.resource, scope.namespace, at);
  if (!objects) {
    if (!options.continue) throw expired('The resourceVersion for the provided list is too old.');
    throw expiredContinue(encodeContinue({ rv: -1, start }));
  }
  return page(scope, objects, at, options.limit, start);
}

/** etcd3's store GetList over `objects` read at `at`: from the start key, up to `limit` selected ones. */
function page(scope: ListScope, objects: KubeObject[], at: number, limit: number | undefined, start: string): ListPage {
  const key = keyIn(scope);
  const rest = start ? objects.filter((o) => key(o) >= start) : objects;
  const resourceVersion = String(at);
  const items: KubeObject[] = [];
  for (const [i, object] of rest.entries()) {
    if (!scope.matches(object)) continue;
    items.push(object);
    if (limit && items.length === limit) {
      // More keys follow (selected or not): the client asks on from after this one.
      if (i === rest.length - 1) break;
      return {
        items,
        resourceVersion,
        continue: encodeContinue({ rv: at, start: `${key(object)}\u0000` }),
        ...(scope.selected ? {} : { remainingItemCount: rest.length - limit }),
      };
    }
  }
  return { items, resourceVersion };
}

/**
 * etcd3 errors.go handleCompactedErrorForPaging: a continue token of a compacted version is a 410 with a
 * token that goes on from the same key at the newest version (an inconsistent list).
 */
function expiredContinue(token: string): ApiError {
  return expired(
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without ' +
      'the continue parameter, or use the continue token in this response to retrieve the remainder of the results. ' +
      'Continuing with the provided token results in an inconsistent list - objects that were created, modified, or ' +
      'deleted between the time the first chunk was returned and now may show up in the list.',
    { continue: token },
  );
}

/**
 * etcd's answer to a read at a revision it has not reached (ErrFutureRev), which kube-apiserver passes
 * on as an error that is no Status: 500 without a reason (responsewriters ErrorToAPIStatus).
 */
const futureRevision = () => new ApiError(500, '', 'etcdserver: mvcc: required revision is a future revision');
