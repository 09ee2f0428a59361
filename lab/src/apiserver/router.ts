/**
 * HTTP routing: a request's path names a group version, maybe a namespace, a resource, maybe an object
 * and its status (`/apis/strait.io/v1alpha1/nodedataplanes/n1/status`); its method and query say the
 * verb (list, watch, get, create, update, patch, delete, deletecollection; a watch also as the path
 * `/api/v1/watch/...`). The answer is JSON, or a meta.k8s.io Table when the client asks for one
 * (kubectl get). Requests come here authenticated and authorized.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { selfSubjectAccessReview } from './access-review';
import type { UserInfo } from './authentication';
import {
  aggregatedDiscovery,
  aggregatedDiscoveryType,
  apiGroupList,
  apiResourceList,
  apiVersions,
  serverVersion,
  wantsAggregated,
} from './discovery';
import { waitUntilFresh } from './freshness';
import { type KubeObject, isRecord } from './kube-object';
import { type ListOptions, awaitedResourceVersion, listPage, parseResourceVersion, validateListOptions } from './list';
import { openApiDocument, openApiRoot } from './openapi';
import type { PatchType } from './patch';
import type { RbacAuthorizer } from './rbac';
import { type FieldValidation, type Registry, type WriteOptions } from './registry';
import { watchRequested } from './request-info';
import { type RequestTarget, pathSegments } from './request-target';
import { type ResourceType, apiVersionOf, deleteAnswersWithObject, groupResource } from './resource-types';
import type { ServedTypes } from './served-types';
import type { ServiceAccountTokens } from './service-account-tokens';
import { type Selector, fieldSelector, labelSelector } from './selectors';
import { bodyFormat, decodeDeleteOptions, decodeObject, decodePatch, patchTypeOf } from './request-body';
import { decodeApplyPatch } from './apply-patch';
import { writeManager } from './write-manager';
import { badRequest, methodNotAllowed, noSuchPath } from './status';
import { type IncludeObject, toTable } from './table';
import type { Watches } from './watch';

export interface Answer {
  code: number;
  body: unknown;
  contentType?: string;
  warnings?: string[];
}

/** What the router needs: the registry, the watches, the resources served and authorization (for reviews). */
export interface Routes {
  registry: Registry;
  watches: Watches;
  types: ServedTypes;
  authorizer: RbacAuthorizer;
  tokens: ServiceAccountTokens;
}

interface Target {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  /** `token`: a ServiceAccount's TokenRequest (service-account-tokens.ts). */
  subresource: 'status' | 'token' | undefined;
  /** A `/watch/` path: a watch of the collection (or of the one object named). */
  watchPath: boolean;
}

/** The patch types served, in kube-apiserver's order: a custom resource takes no strategic merge patch (it has no Go type to merge by). */
const builtInPatches: PatchType[] = ['json', 'merge', 'strategic', 'apply'];
const customResourcePatches: PatchType[] = ['json', 'merge', 'apply'];

/** Whether the Accept header asks for a meta.k8s.io Table (kubectl get's server-side printing). */
function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((range) => {
    const params = range.split(';').map((p) => p.trim());
    return params.includes('as=Table') && params.includes('g=meta.k8s.io');
  });
}

/** Resolves `/api/v1/...` and `/apis/<group>/<version>/...` (past the version) to a resource (and object), or 404. */
function resolve(types: ServedTypes, group: string, version: string, rest: string[]): Target {
  const watchPath = rest[0] === 'watch' && rest.length >= 2;
  if (watchPath) rest = rest.slice(1);
  let namespace: string | undefined;
  // `/api/v1/namespaces/<name>/status` is a Namespace's status, `/api/v1/namespaces/<ns>/<resource>` a namespaced resource.
  if (rest[0] === 'namespaces' && rest.length >= 3 && !(group === '' && rest.length === 3 && rest[2] === 'status')) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [plural, name, subresource, ...extra] = rest;
  const type = types.find(group, version, plural);
  const served =
    subresource === undefined ||
    (subresource === 'status' && type?.statusSubresource) ||
    (subresource === 'token' && type?.group === '' && type.kind === 'ServiceAccount');
  if (!type || extra.length > 0 || !served) throw noSuchPath();
  if (namespace !== undefined && !type.namespaced) throw noSuchPath();
  if (type.namespaced && namespace === undefined && name !== undefined) throw noSuchPath();
  if (watchPath && subresource !== undefined) throw noSuchPath();
  return { type, namespace, name, subresource: subresource as Target['subresource'], watchPath };
}

function fieldValidation(query: URLSearchParams): FieldValidation {
  const value = query.get('fieldValidation') ?? 'Warn';
  if (value !== 'Ignore' && value !== 'Warn' && value !== 'Strict') {
    throw badRequest(`fieldValidation: Unsupported value: "${value}": supported values: "Ignore", "Warn", "Strict"`);
  }
  return value;
}

/** The options of `user`'s write (whom admission asks about). */
function writeOptions(query: URLSearchParams, user: UserInfo): WriteOptions {
  const dryRun = query.getAll('dryRun');
  if (dryRun.some((d) => d !== 'All'))
    throw badRequest(`dryRun: Unsupported value: "${dryRun.find((d) => d !== 'All')}": supported values: "All"`);
  return { dryRun: dryRun.length > 0, fieldValidation: fieldValidation(query), user };
}

/** DeleteOptions from the body, with a gracePeriodSeconds given as a query parameter (kubectl and client-node send either). */
function deleteOptionsOf(body: unknown, query: URLSearchParams): unknown {
  const grace = query.get('gracePeriodSeconds');
  if (grace === null) return body;
  if (!/^-?\d+$/.test(grace)) throw badRequest(`gracePeriodSeconds: Invalid value: "${grace}"`);
  return { ...(isRecord(body) ? body : {}), gracePeriodSeconds: Number(grace) };
}

function includeObject(query: URLSearchParams): IncludeObject {
  const value = query.get('includeObject') ?? 'Metadata';
  if (value !== 'None' && value !== 'Metadata' && value !== 'Object') throw badRequest(`includeObject: Unsupported value: "${value}"`);
  return value;
}

function positive(query: URLSearchParams, name: string): number | undefined {
  const text = query.get(name);
  if (text === null || text === '') return undefined;
  if (!/^\d+$/.test(text)) throw badRequest(`${name}: Invalid value: ${JSON.stringify(text)}: must be a non-negative integer`);
  return Number(text);
}

/** A list's or watch's options, refused with 422 as ValidateListOptions refuses them. */
function listOptions(query: URLSearchParams, watch: boolean): ListOptions {
  const options = {
    limit: positive(query, 'limit'),
    continue: query.get('continue') || undefined,
    resourceVersion: query.get('resourceVersion') || undefined,
    resourceVersionMatch: query.get('resourceVersionMatch') || undefined,
  };
  validateListOptions(options, watch);
  return options;
}

/** The status a DELETE of a built-in without a returned object answers with. */
function deleted(type: ResourceType, object: KubeObject) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name: object.metadata.name, ...(type.group ? { group: type.group } : {}), kind: type.plural, uid: object.metadata.uid },
  };
}

export class Router {
  constructor(private readonly routes: Routes) {}

  /** Answers one request of `user`; a watch writes to `res` itself (and the answer is undefined). */
  async route(req: IncomingMessage, res: ServerResponse, target: RequestTarget, body: Buffer, user: UserInfo): Promise<Answer | undefined> {
    const segments = pathSegments(target.path);
    const method = req.method ?? 'GET';
    const types = this.routes.types.all();
    const get = (answer: () => unknown): Answer => {
      if (method !== 'GET') throw methodNotAllowed();
      return { code: 200, body: answer() };
    };
    if (segments[0] === 'version' && segments.length === 1) return get(() => serverVersion);
    if (['healthz', 'livez', 'readyz'].includes(segments[0] ?? '') && segments.length === 1)
      return { ...get(() => 'ok'), contentType: 'text/plain; charset=utf-8' };
    if (segments[0] === 'openapi' && segments[1] === 'v3') {
      if (segments.length === 2) return get(() => openApiRoot(types));
      const document = openApiDocument(types, segments.slice(2).join('/'));
      if (!document) throw noSuchPath();
      return get(() => document);
    }
    if ((segments[0] === 'api' && segments.length === 1) || (segments[0] === 'apis' && segments.length === 1)) {
      const core = segments[0] === 'api';
      if (wantsAggregated(req.headers.accept))
        return { ...get(() => aggregatedDiscovery(types, core)), contentType: aggregatedDiscoveryType };
      return get(() => (core ? apiVersions() : apiGroupList(types)));
    }
    let group: string;
    let version: string | undefined;
    let rest: string[];
    if (segments[0] === 'api') [group, version, rest] = ['', segments[1], segments.slice(2)];
    else if (segments[0] === 'apis' && segments.length >= 3) [group, version, rest] = [segments[1]!, segments[2], segments.slice(3)];
    else throw noSuchPath();
    if (rest.length === 0) {
      const list = apiResourceList(types, group, version!);
      if (!list) throw noSuchPath();
      return get(() => list);
    }
    return this.resource(req, res, target.query, resolve(this.routes.types, group, version!, rest), body, user);
  }

  private async resource(
    req: IncomingMessage,
    res: ServerResponse,
    query: URLSearchParams,
    at: Target,
    body: Buffer,
    user: UserInfo,
  ): Promise<Answer | undefined> {
    const { registry, authorizer } = this.routes;
    const { type, namespace, name, subresource } = at;
    const method = req.method ?? 'GET';
    // A /watch/ path is a route for GET only (installer.go registers it with ws.GET): any other method is
    // go-restful's 405, after authorization allowed the verb `watch` (requestinfo.go takes the verb from the path).
    if (at.watchPath && method !== 'GET') throw methodNotAllowed();
    const table = wantsTable(req.headers.accept);
    const contentType = req.headers['content-type'];
    if (subresource === 'token') {
      if (method !== 'POST') throw methodNotAllowed();
      const format = bodyFormat(contentType, 'TokenRequest');
      return { code: 201, body: this.routes.tokens.issue(namespace!, name!, decodeObject(body, 'TokenRequest', format)) };
    }
    if (type.createOnly) {
      if (method !== 'POST' || name !== undefined) throw methodNotAllowed();
      const format = bodyFormat(contentType, type.kind);
      return {
        code: 201,
        body: selfSubjectAccessReview(decodeObject(body, type.kind, format), user, (u, request) => authorizer.authorize(u, request)),
      };
    }
    const matches = (): Selector => {
      const labels = labelSelector(query.get('labelSelector'));
      const fields = fieldSelector(query.get('fieldSelector'), type.fields);
      return (o) => labels(o) && fields(o) && (name === undefined || o.metadata.name === name);
    };

    if (method === 'GET' && (at.watchPath || (name === undefined && watchRequested(query)))) {
      const include = includeObject(query);
      listOptions(query, true);
      this.routes.watches.serve(res, {
        type,
        namespace,
        matches: matches(),
        resourceVersion: query.get('resourceVersion') ?? undefined,
        allowBookmarks: query.get('allowWatchBookmarks') === 'true',
        sendInitialEvents: query.get('sendInitialEvents') === 'true',
        timeoutSeconds: positive(query, 'timeoutSeconds'),
        encode: table ? (o) => toTable(type.columns, [o], { resourceVersion: o.metadata.resourceVersion }, include) : (o) => o,
      });
      return undefined;
    }

    if (name === undefined) {
      switch (method) {
        case 'GET': {
          const options = listOptions(query, false);
          const selected = [query.get('labelSelector'), query.get('fieldSelector')].some((s) => (s ?? '').trim() !== '');
          const scope = { resource: groupResource(type), namespace, matches: matches(), selected };
          await waitUntilFresh(registry.store, awaitedResourceVersion(options));
          const page = await listPage(registry.store, scope, options);
          const metadata = {
            resourceVersion: page.resourceVersion,
            ...(page.continue ? { continue: page.continue, remainingItemCount: page.remainingItemCount } : {}),
          };
          if (table) return { code: 200, body: toTable(type.columns, page.items, metadata, includeObject(query)) };
          return { code: 200, body: { kind: type.listKind, apiVersion: apiVersionOf(type), metadata, items: page.items } };
        }
        case 'POST': {
          if (type.namespaced && namespace === undefined) throw methodNotAllowed();
          // create.go validates CreateOptions before it negotiates the body's type.
          const { fieldManager } = writeManager(query, req.headers['user-agent'], 'CreateOptions');
          const format = bodyFormat(contentType, type.kind);
          const options = { ...writeOptions(query, user), fieldManager };
          const written = await registry.create(type, namespace, decodeObject(body, type.kind, format), options);
          return { code: written.code, body: written.object, warnings: written.warnings };
        }
        case 'DELETE': {
          // deletecollection: every object the selectors match, answered as a list of what was deleted.
          const deleteOptions = deleteOptionsOf(decodeDeleteOptions(body, contentType), query);
          const options = writeOptions(query, user);
          const doomed = registry.store.list(groupResource(type), namespace).filter(matches());
          // All or nothing: each is checked (its preconditions, a namespace that may not go, admission) before any goes.
          for (const o of doomed)
            await registry.delete(type, o.metadata.namespace, o.metadata.name, deleteOptions, { ...options, dryRun: true });
          const results = [];
          for (const o of doomed) results.push(await registry.delete(type, o.metadata.namespace, o.metadata.name, deleteOptions, options));
          const items = results.map((r) => r.object);
          return {
            code: 200,
            warnings: results.flatMap((r) => r.warnings),
            body: {
              kind: type.listKind,
              apiVersion: apiVersionOf(type),
              metadata: { resourceVersion: String(registry.store.resourceVersion) },
              items,
            },
          };
        }
        default:
          throw methodNotAllowed();
      }
    }

    switch (method) {
      case 'GET': {
        // A resourceVersion makes the watch cache answer, once it has that version (cacher.go Get).
        await waitUntilFresh(registry.store, parseResourceVersion(query.get('resourceVersion') ?? undefined));
        const object = registry.get(type, namespace, name);
        return {
          code: 200,
          body: table
            ? toTable(type.columns, [object], { resourceVersion: object.metadata.resourceVersion }, includeObject(query))
            : object,
        };
      }
      case 'PUT': {
        const { fieldManager } = writeManager(query, req.headers['user-agent'], 'UpdateOptions');
        const format = bodyFormat(contentType, type.kind);
        const options = { ...writeOptions(query, user), fieldManager };
        const written = await registry.update(type, namespace, name, decodeObject(body, type.kind, format), subresource, options);
        return { code: written.code, body: written.object, warnings: written.warnings };
      }
      case 'PATCH': {
        const patchType = patchTypeOf(contentType, type.schema ? customResourcePatches : builtInPatches);
        const { fieldManager, force } = writeManager(query, req.headers['user-agent'], 'PatchOptions', patchType);
        const options = { ...writeOptions(query, user), fieldManager };
        const written =
          patchType === 'apply'
            ? await registry.apply(type, namespace, name, decodeApplyPatch(body), force, subresource, options)
            : await registry.patch(type, namespace, name, patchType, decodePatch(body), subresource, options);
        return { code: written.code, body: written.object, warnings: written.warnings };
      }
      case 'DELETE': {
        if (subresource) throw methodNotAllowed();
        const deleteOptions = deleteOptionsOf(decodeDeleteOptions(body, contentType), query);
        const { object, code, warnings } = await registry.delete(type, namespace, name, deleteOptions, writeOptions(query, user));
        return {
          code,
          body: deleteAnswersWithObject(type) || object.metadata.deletionTimestamp ? object : deleted(type, object),
          warnings,
        };
      }
      default:
        throw methodNotAllowed();
    }
  }
}
