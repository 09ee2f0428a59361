/**
 * The lab's in-process API server (lab/src/apiserver/) for a test: a free port, every strait.io CRD (or none), a
 * random admin token, a kubeconfig file (for kubectl, and for Strait's own processes) in a temporary
 * directory, and client-node's KubeConfig loaded as Strait loads one (src/k8s/kubeconfig.ts); with
 * `users`, a kubeconfig per user for the RBAC tests. Its objects are in memory (MemoryStore), unless
 * `etcd` is set: then in a real etcd of its own (test/support/etcd.ts, data in the directory). `stop`
 * and `start` restart it on the same port with the same certificate and tokens: in memory, empty (what
 * clients see when an API server loses its state); on etcd, with its objects, as kube-apiserver restarts.
 * `close` stops it (and its etcd) and removes the directory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { request } from 'node:https';
import { join } from 'node:path';
import { ApiException, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { crdFiles } from '../../src/api/write-crds';
import { loadKubeConfig } from '../../src/k8s/kubeconfig';
import { type Certificate, selfSignedCertificate } from '../../lab/src/apiserver/certificate';
import { writeKubeconfig } from '../../lab/src/apiserver/kubeconfig';
import { type ApiServer, type ApiServerOptions, startApiServer } from '../../lab/src/apiserver/server';
import { startTestEtcd } from './etcd';

let certificate: Certificate | undefined;

export interface TestApiServer {
  server: ApiServer;
  token: string;
  /** A kubeconfig file whose current context (`test`) is this server. */
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  /** With `etcd`: its client URL, for a test that reads or writes etcd itself. */
  etcdUrl?: string;
  /** A directory the test may use (kubectl's HOME, manifests); removed by close(). */
  dir: string;
  /** A kubeconfig file and client-node KubeConfig that authenticate with one user's token (of `users`). */
  kubeconfigFor(token: string): { path: string; kubeConfig: KubeConfig };
  /** Stops the server (streams and connections closed); nothing when it is stopped. */
  stop(): Promise<void>;
  /** Starts one on the same port, with the same certificate and token: empty, or on the same etcd. */
  start(): Promise<void>;
  /** Stops it and removes `dir`. */
  close(): Promise<void>;
}

export async function startTestApiServer(
  options: Omit<Partial<ApiServerOptions>, 'token' | 'crds' | 'certificate' | 'port' | 'storage'> & {
    /** False: a new cluster's server, without Strait's CRDs (helm install creates them). */
    crdsInstalled?: boolean;
    /** True: the objects are in a real etcd the server is given (else in memory). */
    etcd?: boolean;
  } = {},
): Promise<TestApiServer> {
  // One certificate for every test server of the run: making one costs a key generation.
  certificate ??= selfSignedCertificate('strait-test-apiserver', ['127.0.0.1'], ['localhost']);
  const token = randomBytes(16).toString('hex');
  const { crdsInstalled = true, etcd: onEtcd = false, ...serverOptions } = options;
  const crds = crdsInstalled ? [...crdFiles().values()] : [];
  const dir = mkdtempSync(join(tmpdir(), 'strait-apiserver-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  const etcd = !onEtcd
    ? undefined
    : await startTestEtcd(join(dir, 'etcd')).catch((err: unknown) => {
        removeDir();
        throw err;
      });
  const removeAll = async () => {
    await etcd?.close();
    removeDir();
  };
  // The same signing key across restarts, as the lab's: the tokens a server issued stay good on its etcd.
  const serviceAccountKey = randomBytes(32);
  const storage = etcd ? { etcd: etcd.url } : ('memory' as const);
  const serve = (port?: number) =>
    startApiServer({
      token,
      crds,
      certificate: certificate!,
      storage,
      serviceAccountKey,
      ...(port !== undefined ? { port } : {}),
      ...serverOptions,
    });
  const first = await serve().catch(async (err: unknown) => {
    await removeAll();
    throw err;
  });
  const kubeconfigPath = join(dir, 'kubeconfig');
  let running = true;
  const test: TestApiServer = {
    server: first,
    ...(etcd ? { etcdUrl: etcd.url } : {}),
    token,
    kubeconfigPath,
    kubeConfig: undefined as unknown as KubeConfig,
    dir,
    stop: async () => {
      if (running) await test.server.close();
      running = false;
    },
    start: async () => {
      test.server = await serve(test.server.port);
      running = true;
    },
    close: async () => {
      try {
        await test.stop();
      } finally {
        await removeAll();
      }
    },
    kubeconfigFor: (userToken) => {
      const path = join(dir, `kubeconfig-${createHash('sha256').update(userToken).digest('hex').slice(0, 12)}`);
      writeKubeconfig(path, [{ name: 'test', server: test.server.url, ca: test.server.ca, token: userToken }]);
      return { path, kubeConfig: loadKubeConfig({ file: path }) };
    },
  };
  writeKubeconfig(kubeconfigPath, [{ name: 'test', server: test.server.url, ca: test.server.ca, token }]);
  test.kubeConfig = loadKubeConfig({ file: kubeconfigPath });
  return test;
}

/** An answer as the server wrote it. */
export interface RawAnswer {
  code: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** False when `streamMs` cut a streaming answer (a watch) short. */
  ended: boolean;
}

/**
 * One HTTPS request sent as given (the path not encoded again, any method, headers and body), for what
 * no client sends: the admin's token unless `token` says whose (null: none). With `streamMs`, an answer
 * still coming that long after its headers (a watch) is read so far and the connection closed.
 */
export function rawRequest(
  t: TestApiServer,
  method: string,
  path: string,
  options: { token?: string | null; headers?: OutgoingHttpHeaders; body?: string | Buffer; streamMs?: number } = {},
): Promise<RawAnswer> {
  const token = options.token === undefined ? t.token : options.token;
  // Content-Length given: Node's client sends a DELETE's body without one (nor chunked), which no server can read.
  const length = options.body === undefined ? {} : { 'Content-Length': Buffer.byteLength(options.body) };
  const headers = { ...(token === null ? {} : { Authorization: `Bearer ${token}` }), ...length, ...options.headers };
  return new Promise((resolve, reject) => {
    // Options, not a URL: a URL would be normalized (`..` resolved, characters escaped) before it is sent.
    const req = request({ host: '127.0.0.1', port: t.server.port, path, method, ca: t.server.ca, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      const answer = (ended: boolean) =>
        resolve({ code: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ended });
      const cut =
        options.streamMs === undefined
          ? undefined
          : setTimeout(() => {
              answer(false);
              req.destroy();
            }, options.streamMs);
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        clearTimeout(cut);
        answer(true);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The Status of a failed client-node call: its HTTP code and the parsed body. */
export async function apiFailure(call: Promise<unknown>): Promise<{ code: number; status: Record<string, any> }> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    // client-node keeps no body for the codes its API declares without one (401).
    return { code: err.code, status: err.body === undefined ? {} : (JSON.parse(err.body as string) as Record<string, any>) };
  }
  throw new Error('the call succeeded; expected a failure Status');
}

/** A valid NodeDataplane (a gateway of cluster east) named `name`, `spec` fields replaced. */
export function nodeDataplaneObject(
  name: string,
  spec: Record<string, unknown> = {},
  labels?: Record<string, string>,
): KubernetesObject & { spec: Record<string, unknown> } {
  return {
    apiVersion: 'strait.io/v1alpha1',
    kind: 'NodeDataplane',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: {
      clusterId: 'east',
      podCIDR: '10.1.0.0/16',
      externalCIDR: '100.64.1.0/24',
      transitAddress: '100.64.1.1',
      node: { name, role: 'gateway', underlayAddress: '192.168.1.10' },
      activeGateway: { name, underlayAddress: '192.168.1.10' },
      overlay: { vni: 1, port: 4789, mac: '02:53:54:00:00:01' },
      peers: [],
      natMappings: [],
      nodes: [{ name, underlayAddress: '192.168.1.10', podCIDRs: ['10.1.0.0/24'] }],
      ...spec,
    },
  };
}
