/**
 * Strait's in-process Kubernetes API server, for tests and the lab, where no kube-apiserver can run: the
 * real API semantics (discovery, CRUD, status subresource, lists in pages that are one snapshot and at
 * a resourceVersion (list.ts), watch with bookmarks and 410, selectors, CRD schema validation, the
 * built-in kinds' validation, defaults and Service cluster IPs where a chart, a controller or kubectl
 * can get them wrong (built-in-validation.ts, built-in-defaults.ts, service-allocation.ts),
 * server-side tables) over HTTPS on 127.0.0.1 with a self-signed certificate
 * (kubectl sends a token over TLS only). Every request is authenticated by its bearer token (the admin
 * token, or a user's from a token auth file: authentication.ts), may act as another user if allowed to
 * (impersonation.ts), and is authorized by RBAC from the stored Roles, ClusterRoles and bindings
 * (rbac.ts; a refusal is a 403 with the real message, and logged). CRDs are served once created
 * (served-types.ts), as on a new cluster. A user's write, once valid, is admitted by the stored
 * ValidatingAdmissionPolicies and their bindings, evaluated in CEL as kube-apiserver does
 * (admission-policy.ts; a denial is the real 422 naming policy and binding); no other admission runs
 * (no webhooks, no NodeRestriction). A bound token's user carries the node it is bound to in its
 * `extra` (service-account-tokens.ts), which policies read. Objects are kept in etcd, as
 * kube-apiserver keeps them (etcd-store.ts: resourceVersions are etcd revisions, a restarted server
 * finds its objects, compaction makes old versions 410), or, for unit tests, in memory (memory-store.ts:
 * a restarted server starts empty); either way it adds, when missing, the default namespaces, the RBAC
 * bootstrap policy and the CRDs it was given.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../../src/log';
import { AdmissionPolicies } from './admission-policy';
import { Authenticator, type TokenUser, type UserInfo, adminUser } from './authentication';
import { type Certificate, selfSignedCertificate } from './certificate';
import { impersonated } from './impersonation';
import { RbacAuthorizer } from './rbac';
import { storeRbacDefaults } from './rbac-defaults';
import { Registry } from './registry';
import { type RequestInfo, requestInfo } from './request-info';
import { requestTarget } from './request-target';
import { crdResource } from './custom-resource-definitions';
import { builtInTypes, groupResource, parseCrds } from './resource-types';
import { ServedTypes } from './served-types';
import { ServiceAccountTokens, serviceAccountTokenType } from './service-account-tokens';
import { Router } from './router';
import { ApiError, forbidden, unauthorized } from './status';
import type { Store } from './store';
import { MemoryStore } from './memory-store';
import { EtcdStore } from './etcd-store';
import { eventsV1View } from './event-conversion';
import { ViewingStore } from './viewing-store';
import { startCompactor } from './compactor';
import { Watches } from './watch';
import { WatchCache } from './watch-cache';

export interface ApiServerOptions {
  /** The admin's bearer token: user `admin` in group `system:masters` (anything is allowed). */
  token: string;
  /** More users and their tokens (a token auth file's), whose requests RBAC authorizes. */
  users?: TokenUser[];
  /**
   * CustomResourceDefinitions installed before the first request, as YAML texts (the chart's): a cluster
   * where Strait's CRDs are already in place. Without them the server starts as a new cluster does, and
   * CRDs are served from the moment a client creates them.
   */
  crds?: string[];
  /**
   * Where the objects are kept: `{ etcd }`, the client URL of an etcd (kube-apiserver's
   * --etcd-servers), as the lab runs it; `'memory'`, in this process only, for unit tests (lost with it).
   */
  storage: 'memory' | { etcd: string };
  /** How often etcd's history is compacted (kube-apiserver's --etcd-compaction-interval, 5 minutes unless given). */
  compactionIntervalMs?: number;
  /** 127.0.0.1 unless given. */
  host?: string;
  /** 0 (any free port) unless given. */
  port?: number;
  /** Changes kept per resource for watches from a resourceVersion; older ones get 410 Expired. */
  watchCacheSize?: number;
  /**
   * Changes kept per resource by the memory store (what etcd's history until compaction is): a list at
   * an older resourceVersion (a continue token's, or resourceVersionMatch=Exact) gets 410 Expired.
   */
  storeHistorySize?: number;
  /** How often a watch that allows bookmarks gets one (the real server: about a minute). */
  bookmarkIntervalMs?: number;
  /** Milliseconds since the epoch, for the expiry of the tokens it issues (Date.now unless a test moves time on). */
  clock?: () => number;
  /**
   * The key ServiceAccount tokens are signed with (kube-apiserver's --service-account-signing-key-file);
   * a random one unless given. A server restarted on the same etcd needs the same one: the tokens it
   * issued, those in Secrets too, are good only with it.
   */
  serviceAccountKey?: Buffer;
  /** The serving certificate; a new self-signed one for 127.0.0.1 unless given (a restarted server's clients trust only the same). */
  certificate?: Certificate;
  logger?: Logger;
}

export interface ApiServer {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** The serving certificate (PEM), which clients trust as the cluster's CA. */
  ca: string;
  close(): Promise<void>;
}

/** Bodies larger than this are refused, as etcd's request limit makes the real server do. */
const maxBodyBytes = 3 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) reject(new ApiError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The body its handler reads: none of a GET or HEAD (kube-apiserver's get, list and watch handlers read none), drained. */
function bodyOf(req: IncomingMessage): Promise<Buffer> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return readBody(req);
  req.resume();
  return Promise.resolve(Buffer.alloc(0));
}

function answer(res: ServerResponse, code: number, body: unknown, contentType = 'application/json', warnings: string[] = []): void {
  const text = typeof body === 'string' && !contentType.startsWith('application/json') ? body : JSON.stringify(body);
  const headers: Record<string, string | string[]> = { 'Content-Type': contentType, 'Cache-Control': 'no-cache, private' };
  // RFC 7234 warnings, as the real server sends them (299, agent "-", quoted text).
  if (warnings.length > 0) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, headers);
  res.end(text);
}

export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  if (options.token === '') throw new Error('the API server needs a non-empty token');
  if (options.users?.some((u) => u.token === options.token)) throw new Error('a user of the token auth file has the admin token');
  const store: Store =
    options.storage === 'memory'
      ? new MemoryStore(options.storeHistorySize ?? 1000)
      : await EtcdStore.open(options.storage.etcd, options.logger);
  try {
    return await serveOn(store, options);
  } catch (err) {
    // Not serving: its etcd client would keep the process alive.
    await store.close();
    throw err;
  }
}

async function serveOn(storage: Store, options: ApiServerOptions): Promise<ApiServer> {
  const log = options.logger;
  // events.k8s.io/v1 Events are core/v1 Events, converted (one resource, as kube-apiserver stores it).
  const store = new ViewingStore(storage, [eventsV1View]);
  const tokens = new ServiceAccountTokens(store, options.clock ?? Date.now, options.serviceAccountKey ?? randomBytes(32));
  const authenticator = new Authenticator([adminUser(options.token), ...(options.users ?? [])], tokens);
  const registry = new Registry(store, new AdmissionPolicies(store), log);
  await registry.storeInitialNamespaces();
  await storeRbacDefaults(store);
  const authorizer = new RbacAuthorizer(store);
  const crdType = builtInTypes.find((t) => groupResource(t) === crdResource)!;
  for (const crd of parseCrds(options.crds ?? []).filter((c) => !store.get(crdResource, undefined, c.metadata.name)))
    await registry.create(crdType, undefined, crd, { dryRun: false, fieldValidation: 'Strict' });
  const types = new ServedTypes(builtInTypes, store);
  const certificate = options.certificate ?? selfSignedCertificate('strait-lab-apiserver', ['127.0.0.1'], ['localhost']);
  // kube-controller-manager's token controller, once the write is done (as it acts on what it watched).
  store.onChange((change) => {
    if (change.resource !== 'secrets' || change.type === 'DELETED' || change.object.type !== serviceAccountTokenType) return;
    registry.afterChange(async () => {
      const current = store.get('secrets', change.object.metadata.namespace, change.object.metadata.name);
      const filled = current && tokens.filledSecret(current, certificate.cert);
      if (filled) await store.put('secrets', filled);
    });
  });
  const watches = new Watches(store, new WatchCache(store, options.watchCacheSize ?? 1000), options.bookmarkIntervalMs ?? 60_000);
  const router = new Router({ registry, watches, types, authorizer, tokens });

  const server = createServer({ cert: certificate.cert, key: certificate.key }, (req, res) => {
    const target = requestTarget(req.url ?? '/');
    // Once authorized, the line says who asked for what, in RBAC's terms (the name a list or watch selects
    // among them), as an audit log would.
    let authorized: Record<string, string> = {};
    const done = (code: number) =>
      log?.debug({ method: req.method, path: target?.path ?? req.url, query: target?.query.toString(), code, ...authorized }, 'request');
    if (!target) {
      // Go's HTTP server refuses the request line itself: its bare 400, before authentication or any handler.
      req.resume();
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
      res.end('400 Bad Request');
      return done(400);
    }
    const refuse = (error: ApiError, user?: UserInfo, request?: RequestInfo) => {
      // A refusal is logged whole, so a rule a role lacks is found in the log: who, what, where, and the message.
      if (error.code === 403) log?.warn({ user: user?.name, groups: user?.groups, ...request }, error.message);
      req.resume();
      answer(res, error.code, error.status());
      done(error.code);
    };
    const authenticated = authenticator.authenticate(req.headers.authorization);
    if (!authenticated) return refuse(unauthorized());
    const authorize = (u: UserInfo, r: RequestInfo) => authorizer.authorize(u, r);
    let user: UserInfo;
    try {
      user = impersonated(authenticated, req.headersDistinct, authorize);
    } catch (err) {
      if (err instanceof ApiError) return refuse(err, authenticated);
      throw err;
    }
    const request = requestInfo(req.method ?? 'GET', target.path, target.query);
    const decision = authorize(user, request);
    if (!decision.allowed) return refuse(forbidden(user.name, request, decision.reason), user, request);
    authorized = {
      user: user.name,
      verb: request.verb,
      ...(request.resourceRequest
        ? { group: request.group, resource: request.resource, subresource: request.subresource, name: request.name }
        : {}),
    };
    bodyOf(req)
      .then((body) => router.route(req, res, target, body, user))
      .then((result) => {
        if (result) answer(res, result.code, result.body, result.contentType, result.warnings);
        done(result?.code ?? 200);
      })
      .catch((err: unknown) => {
        const error =
          err instanceof ApiError ? err : new ApiError(500, 'InternalError', `Internal error occurred: ${(err as Error).message}`);
        if (!(err instanceof ApiError)) log?.error({ err, method: req.method, path: target.path }, 'internal error');
        if (res.headersSent) res.end();
        else answer(res, error.code, error.status());
        done(error.code);
      });
  });
  server.keepAliveTimeout = 60_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const stopCompactor =
    storage instanceof EtcdStore ? startCompactor(storage, options.compactionIntervalMs ?? 5 * 60_000, log) : () => undefined;
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `https://${host}:${port}`,
    port,
    ca: certificate.cert,
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        watches.closeAll();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      stopCompactor();
      await store.close();
    },
  };
}
