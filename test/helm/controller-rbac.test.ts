/**
 * The Helm chart's controller role is enough for the controller, and reads no Secret but its peers': two
 * clusters, each a lab API server (which enforces RBAC) holding the chart's ClusterRoles, Roles and
 * bindings as `helm template` renders them for its peers, and each controller running as the chart's
 * controller ServiceAccount, its peer's API server reached with the token of `strait-peer-<us>` there (the
 * chart's peer access). The peering comes up with nothing refused in either API server's log, and the
 * controller's identity is refused every other Secret of its namespace (the IPsec keys and helm's release
 * Secrets live there). A kubeconfig changed in the peer's Secret is seen through the watch by name: a
 * token the peer refuses, then a new one it issued (a rotation). Every Secret request the controller made,
 * as the API server's log says, was a list or watch of its peer's Secret by name.
 */
import assert from 'node:assert/strict';
import { type AuthenticationV1TokenRequest, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { readControllerConfig } from '../../src/api/controller-config';
import { runKubernetesController } from '../../src/controller/kubernetes/controller';
import { peerKubeconfigKey, peerSecretName } from '../../src/k8s/names';
import { kubeconfigText } from '../../lab/src/apiserver/kubeconfig';
import { seedCluster } from '../../lab/src/kubernetes-control-plane';
import { createLogger } from '../../src/log';
import { ControllerMetrics } from '../../src/metrics/controller-metrics';
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
  const metrics = new Map(clusters.map(({ id }) => [id, new ControllerMetrics('kubernetes')]));
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
      const admin = api.kubeConfig.makeApiClient(CoreV1Api);
      await admin.createNamespacedSecret({
        namespace: chartNamespace,
        body: { metadata: { name: 'strait-ipsec' }, data: { [peer]: 'c2VjcmV0' } },
      });
      // helm's record of the release, in the same namespace.
      await admin.createNamespacedSecret({
        namespace: chartNamespace,
        body: {
          metadata: { name: 'sh.helm.release.v1.strait.v1', labels: { owner: 'helm' } },
          type: 'helm.sh/release.v1',
          data: { release: 'H4sI' },
        },
      });
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
          {
            config,
            kubeConfig,
            namespace: chartNamespace,
            identity: `${id}-0`,
            log: createLogger('controller', 'silent'),
            metrics: metrics.get(id)!,
            peerCheckIntervalMs: 200,
          },
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
      const forbidden = (what: string, verb = what.includes('"') ? 'get' : 'list') => ({
        code: 403,
        message: `${what} is forbidden: User "${controllerUser(id).name}" cannot ${verb} resource "secrets" in API group "" in the namespace "${chartNamespace}"`,
      });
      const refusal = async (call: Promise<unknown>) => {
        const { code, status } = await apiFailure(call);
        return { code, message: status.message };
      };
      for (const name of ['strait-ipsec', 'sh.helm.release.v1.strait.v1'])
        assert.deepEqual(await refusal(core.readNamespacedSecret({ namespace: chartNamespace, name })), forbidden(`secrets "${name}"`));
      assert.deepEqual(
        await refusal(
          core.listNamespacedSecret({ namespace: chartNamespace, fieldSelector: 'metadata.name=sh.helm.release.v1.strait.v1' }),
        ),
        forbidden('secrets "sh.helm.release.v1.strait.v1"', 'list'),
      );
      assert.deepEqual(
        await refusal(core.listNamespacedSecret({ namespace: chartNamespace, labelSelector: 'owner=helm' })),
        forbidden('secrets'),
      );
      assert.deepEqual(await refusal(core.listNamespacedSecret({ namespace: chartNamespace })), forbidden('secrets'));
      const mine = await core.listNamespacedSecret({ namespace: chartNamespace, fieldSelector: `metadata.name=${peerSecretName(peer)}` });
      assert.deepEqual(
        mine.items.map((s) => s.metadata?.name),
        [peerSecretName(peer)],
      );
    }
  });
  it("sees a changed kubeconfig in its peer's Secret through the watch by name: a refused token, then a rotated one", async () => {
    const a = servers.get('cluster-a')!;
    const b = servers.get('cluster-b')!;
    // The refusals the test above asked for are before this; the controllers' own are none.
    const from = new Map(clusters.map(({ id }) => [id, servers.get(id)!.log.lines.length]));
    const peerApiUp = async () =>
      /strait_controller_peer_api_up\{peer="cluster-b"\} (\d)/.exec(await metrics.get('cluster-a')!.registry.metrics())?.[1];
    await waitFor('cluster-b up in cluster-a', async () => (await peerApiUp()) === '1', 10_000);
    const secrets = a.api.kubeConfig.makeApiClient(CoreV1Api);
    const putKubeconfig = async (token: string) => {
      const text = kubeconfigText([{ name: 'cluster-b', server: b.api.server.url, ca: b.api.server.ca, token }]);
      const secret = await secrets.readNamespacedSecret({ namespace: chartNamespace, name: peerSecretName('cluster-b') });
      secret.data = { [peerKubeconfigKey]: Buffer.from(text).toString('base64') };
      await secrets.replaceNamespacedSecret({ namespace: chartNamespace, name: peerSecretName('cluster-b'), body: secret });
    };

    await putKubeconfig('a-token-cluster-b-never-issued');
    await waitFor('cluster-b refusing the new kubeconfig', async () => (await peerApiUp()) === '0', 10_000);

    // B issues a token of A's identity there (kubectl create token strait-peer-cluster-a -n strait-system).
    const bCore = b.api.kubeConfig.makeApiClient(CoreV1Api);
    await bCore.createNamespacedServiceAccount({ namespace: chartNamespace, body: { metadata: { name: peerSecretName('cluster-a') } } });
    const request: AuthenticationV1TokenRequest = { spec: { audiences: [], expirationSeconds: 3600 } };
    const issued = await bCore.createNamespacedServiceAccountToken({
      namespace: chartNamespace,
      name: peerSecretName('cluster-a'),
      body: request,
    });
    await putKubeconfig(issued.status!.token);
    await waitFor('cluster-b up again with the rotated token', async () => (await peerApiUp()) === '1', 10_000);

    for (const { id, peer } of clusters) {
      const { log } = servers.get(id)!;
      const asked = log.lines.filter((l) => l.msg === 'request' && l.user === controllerUser(id).name && l.resource === 'secrets');
      assert.ok(
        asked.some((l) => l.verb === 'watch'),
        `${id}: the controller watches its peer's Secret`,
      );
      assert.deepEqual(
        [...new Set(asked.map((l) => `${String(l.verb)} ${String(l.name)}`))].sort(),
        ['list', 'watch'].map((verb) => `${verb} ${peerSecretName(peer)}`),
        `${id}: every Secret request of the controller names its peer's Secret`,
      );
      assert.deepEqual(
        log.lines
          .slice(from.get(id))
          .filter((l) => String(l.msg).includes(' is forbidden: '))
          .map((l) => l.msg),
        [],
        `nothing refused in ${id}`,
      );
    }
  });
});
