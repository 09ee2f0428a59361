/**
 * The Helm chart's controller role is enough for the controller, and reads no Secret but its peers': two
 * clusters, each a lab API server (which enforces RBAC) holding the chart's ClusterRoles, Roles and
 * bindings as `helm template` renders them for its peers, and each controller running as the chart's
 * controller ServiceAccount, its peer's API server reached with the token of `strait-peer-<us>` there (the
 * chart's peer access). The peering comes up with nothing refused in either API server's log, and the
 * controller's identity is refused every other Secret of its namespace (the IPsec keys live there).
 */
import assert from 'node:assert/strict';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { readControllerConfig } from '../../src/api/controller-config';
import { runKubernetesController } from '../../src/controller/kubernetes/controller';
import { peerSecretName } from '../../src/k8s/names';
import { kubeconfigText } from '../../lab/src/apiserver/kubeconfig';
import { seedCluster } from '../../lab/src/kubernetes-control-plane';
import { createLogger } from '../../src/log';
import { type TestApiServer, apiFailure, startTestApiServer } from '../support/apiserver';
import { applyChartAccess, chartNamespace, chartServiceAccountUser } from '../support/chart';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

const clusters = [
  { id: 'cluster-a', peer: 'cluster-b', n: 1 },
  { id: 'cluster-b', peer: 'cluster-a', n: 2 },
] as const;
const controllerUser = (id: string) => chartServiceAccountUser('strait-controller', `controller-token-${id}`);
/** The peer's identity in our API server: what the kubeconfig in its Secret on its side carries. */
const peerUser = (peer: string) => chartServiceAccountUser(peerSecretName(peer), `peer-token-${peer}`);

describe("the controller under the Helm chart's controller role (two lab API servers)", function () {
  this.timeout(60_000);
  const servers = new Map<string, { api: TestApiServer; log: CapturedLog; controller: KubeConfig }>();
  const stop = new AbortController();
  const running: Promise<void>[] = [];

  before(async () => {
    for (const { id, peer } of clusters) {
      const log = captureLog('debug');
      const api = await startTestApiServer({ users: [controllerUser(id), peerUser(peer)], logger: log.log });
      servers.set(id, { api, log, controller: api.kubeconfigFor(controllerUser(id).token).kubeConfig });
    }
    for (const { id, peer, n } of clusters) {
      const { api } = servers.get(id)!;
      const there = servers.get(peer)!.api.server;
      const kubeconfig = kubeconfigText([{ name: peer, server: there.url, ca: there.ca, token: peerUser(id).token }]);
      await seedCluster(
        api.kubeConfig,
        [{ name: `${id}-gw`, underlayAddress: `192.168.${n}.1`, podCIDR: '10.0.0.0/24', publicAddress: `203.0.113.${n}` }],
        new Map([[peer, kubeconfig]]),
      );
      await api.kubeConfig
        .makeApiClient(CoreV1Api)
        .createNamespacedSecret({ namespace: chartNamespace, body: { metadata: { name: 'strait-ipsec' }, data: { [peer]: 'c2VjcmV0' } } });
      await applyChartAccess(api.kubeConfig, ['--set', `cluster.id=${id}`, '--set', `peers={${peer}}`]);
    }
    for (const { id, peer } of clusters) {
      const config = readControllerConfig(
        { clusterId: id, podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: [peer], interval: 0.1 },
        'kubernetes',
      );
      const kubeConfig = servers.get(id)!.controller;
      running.push(
        runKubernetesController(
          { config, kubeConfig, namespace: chartNamespace, identity: `${id}-0`, log: createLogger('controller', 'silent') },
          stop.signal,
        ),
      );
    }
  });

  after(async () => {
    stop.abort();
    await Promise.all(running);
    for (const { api } of servers.values()) await api.close();
  });

  it("peers the clusters with nothing refused, and the controller may read no other Secret than its peer's", async () => {
    const tunnels = (id: string) =>
      servers
        .get(id)!
        .api.kubeConfig.makeApiClient(CustomObjectsApi)
        .listClusterCustomObject({ group: 'strait.io', version: 'v1alpha1', plural: 'tunnelendpoints' }) as Promise<{ items: unknown[] }>;
    await waitFor(
      'a TunnelEndpoint in both clusters',
      async () => (await tunnels('cluster-a')).items.length === 1 && (await tunnels('cluster-b')).items.length === 1,
      20_000,
    );
    for (const { id, peer } of clusters) {
      const { log, controller } = servers.get(id)!;
      assert.deepEqual(
        log.lines.filter((l) => String(l.msg).includes(' is forbidden: ')).map((l) => l.msg),
        [],
        `nothing refused in ${id}`,
      );
      const core = controller.makeApiClient(CoreV1Api);
      const forbidden = (what: string) => ({
        code: 403,
        message: `${what} is forbidden: User "${controllerUser(id).name}" cannot ${what.includes('"') ? 'get' : 'list'} resource "secrets" in API group "" in the namespace "${chartNamespace}"`,
      });
      const refusal = async (call: Promise<unknown>) => {
        const { code, status } = await apiFailure(call);
        return { code, message: status.message };
      };
      assert.deepEqual(
        await refusal(core.readNamespacedSecret({ namespace: chartNamespace, name: 'strait-ipsec' })),
        forbidden('secrets "strait-ipsec"'),
      );
      assert.deepEqual(await refusal(core.listNamespacedSecret({ namespace: chartNamespace })), forbidden('secrets'));
      const mine = await core.listNamespacedSecret({ namespace: chartNamespace, fieldSelector: `metadata.name=${peerSecretName(peer)}` });
      assert.deepEqual(
        mine.items.map((s) => s.metadata?.name),
        [peerSecretName(peer)],
      );
    }
  });
});
