/**
 * A peer's credentials that stop working are seen, not silent (docs/kubernetes.md, "Peers"): cluster A's
 * controller reaches B's API server with a bound token B issued (TokenRequest, 10 minutes, the shortest
 * kube-apiserver gives); B's clock moves past its expiry and B refuses it. Within a check A logs why,
 * records a Warning Event, lists the problem and sets strait_controller_peer_api_up{peer} to 0, and its
 * nodes' specs do not change. A new token in the peer's Secret brings it back: a Normal Event, the gauge 1.
 */
import assert from 'node:assert/strict';
import { type AuthenticationV1TokenRequest, CoreV1Api, CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node';
import { readControllerConfig } from '../../../src/api/controller-config';
import { runKubernetesController } from '../../../src/controller/kubernetes/controller';
import { defaultNamespace, peerKubeconfigKey, peerSecretName } from '../../../src/k8s/names';
import { ControllerMetrics } from '../../../src/metrics/controller-metrics';
import { kubeconfigText } from '../../../lab/src/apiserver/kubeconfig';
import { seedCluster } from '../../../lab/src/kubernetes-control-plane';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { applyChartAccess } from '../../support/chart';
import { type CapturedLog, captureLog } from '../../support/log-capture';
import { waitFor } from '../../support/wait';

const strait = { group: 'strait.io', version: 'v1alpha1' };
const peerAccount = peerSecretName('cluster-a'); // A's identity in B: strait-peer-cluster-a

describe("the controller shows a peer's credentials failing (bound tokens, the peer's clock moved on)", function () {
  this.timeout(60_000);
  let a: TestApiServer;
  let b: TestApiServer;
  let bNow = Date.now();
  let log: CapturedLog;
  let metrics: ControllerMetrics;
  const stop = new AbortController();
  let running: Promise<void> | undefined;

  /** A token of `strait-peer-cluster-a` in B, as `kubectl create token --duration 10m` asks for it. */
  const issueToken = async () => {
    const request: AuthenticationV1TokenRequest = { spec: { audiences: [], expirationSeconds: 600 } };
    const issued = await b.kubeConfig
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccountToken({ name: peerAccount, namespace: defaultNamespace, body: request });
    return issued.status!.token;
  };
  const peerKubeconfig = (token: string) => kubeconfigText([{ name: 'cluster-b', server: b.server.url, ca: b.server.ca, token }]);
  const peerApiUp = async () => /strait_controller_peer_api_up\{peer="cluster-b"\} (\d)/.exec(await metrics.registry.metrics())?.[1];
  const eventReasons = async () =>
    (await a.kubeConfig.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: 'default' })).items
      .filter((e) => e.regarding?.name === 'cluster-b')
      .map((e) => e.reason);
  const nodeSpecVersion = async () =>
    (
      (await a.kubeConfig
        .makeApiClient(CustomObjectsApi)
        .getClusterCustomObject({ ...strait, plural: 'nodedataplanes', name: 'a-gw' })) as { metadata: { generation: number } }
    ).metadata.generation;

  before(async () => {
    a = await startTestApiServer();
    b = await startTestApiServer({ clock: () => bNow });
    const bCore = b.kubeConfig.makeApiClient(CoreV1Api);
    await bCore.createNamespace({ body: { metadata: { name: defaultNamespace } } });
    await bCore.createNamespacedServiceAccount({ namespace: defaultNamespace, body: { metadata: { name: peerAccount } } });
    // What B's chart grants its peer A: NetworkConfigs, and nothing else.
    await applyChartAccess(b.kubeConfig, ['--set', 'cluster.id=cluster-b', '--set', 'peers={cluster-a}']);
    await seedCluster(
      a.kubeConfig,
      [{ name: 'a-gw', underlayAddress: '192.168.1.1', podCIDR: '10.0.0.0/24', publicAddress: '203.0.113.1' }],
      new Map([['cluster-b', peerKubeconfig(await issueToken())]]),
    );
    log = captureLog('info');
    metrics = new ControllerMetrics('kubernetes');
    const config = readControllerConfig(
      { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: ['cluster-b'], interval: 0.1 },
      'kubernetes',
    );
    running = runKubernetesController(
      { config, kubeConfig: a.kubeConfig, namespace: defaultNamespace, identity: 'a-0', log: log.log, metrics, peerCheckIntervalMs: 200 },
      stop.signal,
    );
  });

  after(async () => {
    stop.abort();
    await running;
    await a.close();
    await b.close();
  });

  it('logs, records, lists and counts a token the peer refuses, changes no node spec, and comes back with a new token', async () => {
    const offers = () =>
      b.kubeConfig.makeApiClient(CustomObjectsApi).listClusterCustomObject({ ...strait, plural: 'networkconfigs' }) as Promise<{
        items: { metadata: { name: string } }[];
      }>;
    await waitFor('our offer in B, written with the token', async () => (await offers()).items.length === 1, 20_000);
    await waitFor('the gauge at 1', async () => (await peerApiUp()) === '1', 5_000);
    const specBefore = await nodeSpecVersion();
    assert.deepEqual(await eventReasons(), [], 'no Event while the token works');

    bNow += 601_000; // B's clock past the token's 10 minutes
    await waitFor('the gauge at 0', async () => (await peerApiUp()) === '0', 5_000);
    const warned = log.lines.find((l) => l.reason === 'CredentialsRejected');
    assert.match(
      String(warned?.msg),
      /^the API server of cluster-b refuses our credentials \(401 Unauthorized\): the token expired or was revoked; put a new kubeconfig in Secret strait-system\/strait-peer-cluster-b$/,
    );
    await waitFor('the Warning Event', async () => (await eventReasons()).includes('PeerApiCredentialsRejected'), 5_000);
    // The peering's TunnelEndpoint says it (peering-conditions.ts): `kubectl get tunnelendpoints` shows why.
    const credentials = async () =>
      (
        (await a.kubeConfig
          .makeApiClient(CustomObjectsApi)
          .getClusterCustomObject({ ...strait, plural: 'tunnelendpoints', name: 'cluster-b' })) as {
          status?: { conditions?: { type: string; status: string; reason: string }[] };
        }
      ).status?.conditions?.find((c) => c.type === 'CredentialsValid');
    await waitFor('CredentialsValid False on the TunnelEndpoint', async () => (await credentials())?.status === 'False', 5_000);
    assert.equal((await credentials())?.reason, 'CredentialsRejected');
    await waitFor(
      'the problem listed',
      () =>
        log.lines.some(
          (l) => l.msg === 'input not usable yet' && String(l.problem).startsWith('peer cluster-b: the API server of cluster-b refuses'),
        ),
      5_000,
    );
    assert.equal(log.lines.filter((l) => l.reason === 'CredentialsRejected').length, 1, 'said once, not at every check');
    assert.equal(await nodeSpecVersion(), specBefore, "the nodes' specs do not change");

    // The operator puts a new token in the peer's Secret (as docs/helm.md, Peers, says).
    const core = a.kubeConfig.makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ name: peerSecretName('cluster-b'), namespace: defaultNamespace });
    secret.data = { [peerKubeconfigKey]: Buffer.from(peerKubeconfig(await issueToken())).toString('base64') };
    await core.replaceNamespacedSecret({ name: peerSecretName('cluster-b'), namespace: defaultNamespace, body: secret });
    await waitFor('the gauge at 1 again', async () => (await peerApiUp()) === '1', 10_000);
    await waitFor('the Normal Event', async () => (await eventReasons()).includes('PeerApiReachable'), 5_000);
    await waitFor('CredentialsValid True again', async () => (await credentials())?.reason === 'Accepted', 5_000);
  });
});
