/**
 * On Kubernetes, a peer's NetworkConfig that the dataplanes cannot carry is refused for that peer alone
 * (issue 24): a PeerRefused Event names the field and the value, and no NodeDataplane carries it, while
 * the cluster's other peering goes on. The peers here are NetworkConfig objects written by hand into
 * the lab's API server (the real client), as a peer's controller would write them.
 */
import assert from 'node:assert/strict';
import { CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node';
import { readControllerConfig } from '../../../src/api/controller-config';
import { apiVersion, group, version } from '../../../src/api/resource-names';
import { runKubernetesController } from '../../../src/controller/kubernetes/controller';
import { defaultNamespace } from '../../../src/k8s/names';
import { seedCluster } from '../../../lab/src/kubernetes-control-plane';
import { createLogger } from '../../../src/log';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { waitFor } from '../../support/wait';

interface Listed {
  items: { metadata: { name: string }; spec: { peers: { clusterId: string; remotePodCIDR: string }[] } }[];
}

describe('controller on Kubernetes: a peer offering what the dataplanes cannot carry', function () {
  this.timeout(60_000);
  let api: TestApiServer;
  const stop = new AbortController();
  let done: Promise<void> | undefined;

  before(async () => {
    api = await startTestApiServer();
    await seedCluster(
      api.kubeConfig,
      [{ name: 'a-gw', underlayAddress: '192.168.1.1', podCIDR: '10.0.0.0/24', publicAddress: '203.0.113.1' }],
      new Map(),
    );
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const offer = (peer: string, podCIDR: string) => ({
      apiVersion,
      kind: 'NetworkConfig',
      metadata: { name: `${peer}.cluster-a` },
      spec: {
        clusterId: peer,
        remoteClusterId: 'cluster-a',
        podCIDR,
        externalCIDR: '10.210.0.0/24',
        endpoint: { address: '203.0.113.9', port: 4789 },
      },
    });
    await custom.createClusterCustomObject({ group, version, plural: 'networkconfigs', body: offer('cluster-b', '172.20.0.0/16') });
    await custom.createClusterCustomObject({ group, version, plural: 'networkconfigs', body: offer('cluster-c', 'fd00::/48') });
    const config = readControllerConfig(
      { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: ['cluster-b', 'cluster-c'], interval: 0.1 },
      'kubernetes',
    );
    done = runKubernetesController(
      {
        config,
        kubeConfig: api.kubeConfig,
        namespace: defaultNamespace,
        identity: 'a-0',
        leaseTimings: { leaseDuration: 2, renewDeadline: 1, retryPeriod: 0.2 },
        log: createLogger('controller', 'silent'),
      },
      stop.signal,
    );
  });
  after(async () => {
    stop.abort();
    await done;
    await api.close();
  });

  it('records a PeerRefused Event naming the field and value, answers the other peer, and plans no NodeDataplane with it', async () => {
    const eventsApi = api.kubeConfig.makeApiClient(EventsV1Api);
    const refusal = async () =>
      (await eventsApi.listNamespacedEvent({ namespace: 'default' })).items.find((e) => e.reason === 'PeerRefused');
    await waitFor('a PeerRefused Event', async () => (await refusal()) !== undefined, 20_000);
    const event = (await refusal())!;
    assert.equal(event.type, 'Warning');
    assert.deepEqual([event.regarding?.kind, event.regarding?.name], ['NetworkConfig', 'cluster-c.cluster-a']);
    const offer = await api.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .getClusterCustomObject({ group: 'strait.io', version: 'v1alpha1', plural: 'networkconfigs', name: 'cluster-c.cluster-a' });
    assert.equal(event.regarding?.uid, (offer as { metadata: { uid: string } }).metadata.uid, "the offer's uid, for kubectl describe");
    assert.match(
      event.note ?? '',
      /^NetworkConfig from cluster-c: spec\.podCIDR: shares no IP family with this cluster, which has IPv4: .*\(got "fd00::\/48"\)$/,
    );
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    await waitFor(
      "cluster-b's offer answered",
      async () =>
        (
          (await custom.getClusterCustomObject({ group, version, plural: 'networkconfigs', name: 'cluster-b.cluster-a' })) as {
            status?: { processed?: boolean };
          }
        ).status?.processed === true,
      20_000,
    );
    const answered = (await custom.getClusterCustomObject({ group, version, plural: 'networkconfigs', name: 'cluster-c.cluster-a' })) as {
      status?: unknown;
    };
    assert.equal(answered.status, undefined, 'the refused offer gets no answer');
    // The peering's TunnelEndpoint says why, in the line `kubectl get tunnelendpoints` prints.
    const conditionsOf = async (peer: string) =>
      (
        (await custom.getClusterCustomObject({ group, version, plural: 'tunnelendpoints', name: peer })) as {
          status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
        }
      ).status?.conditions ?? [];
    await waitFor('the refused peering says so', async () => (await conditionsOf('cluster-c')).some((c) => c.reason === 'Refused'), 5_000);
    const [ready] = await conditionsOf('cluster-c');
    assert.deepEqual([ready!.type, ready!.status, ready!.reason], ['Ready', 'False', 'Refused']);
    assert.match(
      ready!.message,
      /^the NetworkConfig from cluster-c cannot be used: NetworkConfig from cluster-c: spec\.podCIDR: shares no IP family/,
    );
    const dataplanes = (await custom.listClusterCustomObject({ group, version, plural: 'nodedataplanes' })) as Listed;
    assert.deepEqual(
      dataplanes.items.map((d) => d.spec.peers.map((p) => p.remotePodCIDR)),
      [[]],
      'neither peer is in a spec yet (no answers on ours), and never the IPv6 one',
    );
  });
});
