/**
 * A node of a cluster for the pool IPAM tests: the lab API server (CRDs registered), the node's pool IPAM
 * service (in this process, or as `strait pool-ipam serve`), a CNI node namespace with Debian's plugins,
 * and helpers to make Pods, Namespaces, StatefulSets and pools the way a cluster holds them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { apiVersion, group, version } from '../../src/api/resource-names';
import type { GcSettings } from '../../src/pool-ipam/gc-plan';
import { type Logger, createLogger } from '../../src/log';
import { type PoolIpamService, startPoolIpamService } from '../../src/pool-ipam/service/pool-ipam-service';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { type CniNode, type PodAttachment, cniNode } from '../support/cni';
import { waitFor } from '../support/wait';

export interface PoolIpamFixture {
  api: TestApiServer;
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
  node: CniNode;
  socket: string;
  service?: PoolIpamService;
  dir: string;
  /** A network configuration chaining strait-ipam under `plugin`. */
  config(plugin: 'macvlan' | 'ipvlan' | 'bridge', ipam?: Record<string, unknown>, name?: string): Record<string, unknown>;
  pool(name: string, spec: Record<string, unknown>): Promise<void>;
  /** A Pod (bound to `node`, default node-a) and its attachment in a new pod namespace. */
  pod(
    name: string,
    options?: {
      namespace?: string;
      node?: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      owner?: { kind: string; name: string; uid: string; apiVersion?: string };
      terminationGracePeriodSeconds?: number;
    },
  ): Promise<PodAttachment & { netnsName: string; uid: string }>;
  claims(): Promise<{ name: string; spec: Record<string, any> }[]>;
  close(): Promise<void>;
}

let containers = 0;

export interface PoolIpamFixtureOptions {
  /** Start the node's service in this process (default), or leave it to the test. */
  inProcess?: boolean;
  nodes?: { name: string; ready: boolean; labels?: Record<string, string> }[];
  /** Options of the lab API server (users, a logger). */
  apiServer?: Parameters<typeof startTestApiServer>[0];
  /** Whom the in-process service is (its KubeConfig, after whatever setup the test needs); default: the admin. */
  serviceKubeConfig?: (api: TestApiServer) => Promise<KubeConfig>;
  /** The in-process service's garbage collection settings, over the defaults (its periodic scan is an hour: tests collect themselves). */
  gc?: Partial<GcSettings>;
  /** The in-process service's log (default: silent). */
  log?: Logger;
  /** How long the in-process service's socket waits for a request to arrive (default: the service's). */
  requestArrivalMs?: number;
}

export async function poolIpamFixture(options: PoolIpamFixtureOptions = {}): Promise<PoolIpamFixture> {
  const api = await startTestApiServer(options.apiServer);
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  const apps = api.kubeConfig.makeApiClient(AppsV1Api);
  const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
  const dir = mkdtempSync(join(tmpdir(), 'strait-pool-ipam-'));
  const socket = join(dir, 'run', 'ipam.sock');
  const nodes = options.nodes ?? [
    { name: 'node-a', ready: true, labels: { zone: 'a' } },
    { name: 'node-b', ready: true, labels: { zone: 'b' } },
  ];
  for (const n of nodes) {
    await core.createNode({ body: { metadata: { name: n.name, labels: n.labels ?? {} } } });
    await core.replaceNodeStatus({
      name: n.name,
      body: { metadata: { name: n.name }, status: { conditions: [{ type: 'Ready', status: n.ready ? 'True' : 'False' }] } },
    });
  }
  const node = cniNode();
  let service: PoolIpamService | undefined;
  if (options.inProcess !== false) {
    try {
      const kubeConfig = options.serviceKubeConfig ? await options.serviceKubeConfig(api) : api.kubeConfig;
      service = await startPoolIpamService({
        kubeConfig,
        node: 'node-a',
        socket,
        log: options.log ?? createLogger('pool-ipam-test', 'silent'),
        gcIntervalMs: 3_600_000,
        ...(options.gc ? { gc: options.gc } : {}),
        ...(options.requestArrivalMs !== undefined ? { requestArrivalMs: options.requestArrivalMs } : {}),
      });
      // An informer the server refuses retries for ever: bounded here, so the test fails saying so.
      let synced = false;
      void service.synced.then(() => (synced = true));
      await waitFor('every informer of the pool IPAM service to list (refused by RBAC?)', () => synced, 15_000);
    } catch (err) {
      await service?.stop();
      node.cleanup();
      await api.close();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }
  const fixture: PoolIpamFixture = {
    api,
    core,
    apps,
    custom,
    node,
    socket,
    ...(service ? { service } : {}),
    dir,
    config: (plugin, ipam = {}, name = 'underlay') => ({
      cniVersion: '1.0.0',
      name,
      type: plugin,
      ...(plugin === 'bridge' ? { bridge: 'sl-br0' } : { master: 'eth0', mode: plugin === 'macvlan' ? 'bridge' : 'l2' }),
      ipam: { type: 'strait-ipam', socket, ...ipam },
    }),
    async pool(name, spec) {
      await custom.createClusterCustomObject({
        group,
        version,
        plural: 'straitippools',
        body: { apiVersion, kind: 'StraitIPPool', metadata: { name }, spec },
      });
      if (service)
        await waitFor(`StraitIPPool ${name} in the service's cache`, () => service.allocator.pools().valid.some((p) => p.name === name));
    },
    async pod(name, o = {}) {
      const namespace = o.namespace ?? 'default';
      const body: V1Pod = {
        metadata: {
          name,
          labels: o.labels ?? {},
          annotations: o.annotations ?? {},
          ...(o.owner
            ? {
                ownerReferences: [
                  {
                    apiVersion: o.owner.apiVersion ?? 'apps/v1',
                    kind: o.owner.kind,
                    name: o.owner.name,
                    uid: o.owner.uid,
                    controller: true,
                  },
                ],
              }
            : {}),
        },
        spec: {
          nodeName: o.node ?? 'node-a',
          containers: [{ name: 'c', image: 'i' }],
          ...(o.terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds: o.terminationGracePeriodSeconds } : {}),
        },
      };
      const created = await core.createNamespacedPod({ namespace, body });
      const netns = node.podNetns();
      containers++;
      return {
        namespace,
        name,
        uid: created.metadata!.uid!,
        containerId: `c${containers}-${name}`,
        netns: netns.path,
        netnsName: netns.name,
      };
    },
    async claims() {
      const list = (await custom.listClusterCustomObject({ group, version, plural: 'ipclaims' })) as {
        items: { metadata: { name: string }; spec: Record<string, any> }[];
      };
      return list.items.map((i) => ({ name: i.metadata.name, spec: i.spec }));
    },
    async close() {
      await service?.stop();
      node.cleanup();
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}
