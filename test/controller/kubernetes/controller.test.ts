/**
 * The controller on Kubernetes, end to end on the lab's API servers with the real client: two clusters
 * with overlapping networks, each with two controller replicas; NetworkConfigs replicated through each
 * other's API servers, the IPAM as objects, a NodeDataplane per Node, and a change of leader that
 * rewrites nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node';
import { readControllerConfig } from '../../../src/api/controller-config';
import { runKubernetesController } from '../../../src/controller/kubernetes/controller';
import { defaultNamespace } from '../../../src/k8s/names';
import { seedCluster } from '../../../lab/src/kubernetes-control-plane';
import { createLogger } from '../../../src/log';
import { ControllerMetrics } from '../../../src/metrics/controller-metrics';
import { type MetricsServer, startMetricsServer } from '../../../src/metrics/server';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';
import { get, metricNames, scrape, series } from '../../support/metrics';
import { waitFor } from '../../support/wait';
import { k8sTool } from '../../../lab/src/k8s-tools';

interface Listed {
  items: { metadata: { name: string; uid: string; resourceVersion: string; labels?: Record<string, string> }; spec: any; status?: any }[];
}

const timings = { leaseDuration: 2, renewDeadline: 1, retryPeriod: 0.2 };

describe('controller on Kubernetes (lab API servers, real client)', function () {
  this.timeout(60_000);
  const servers = new Map<string, TestApiServer>();
  const replicas = new Map<string, { stop: AbortController; done: Promise<void>; metrics: MetricsServer }>();

  const list = async (cluster: string, plural: string): Promise<Listed['items']> =>
    (
      (await servers
        .get(cluster)!
        .kubeConfig.makeApiClient(CustomObjectsApi)
        .listClusterCustomObject({ group: 'strait.io', version: 'v1alpha1', plural })) as Listed
    ).items;
  const holder = async (cluster: string) =>
    (
      await servers
        .get(cluster)!
        .kubeConfig.makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ name: 'strait-controller', namespace: defaultNamespace })
    ).spec?.holderIdentity;

  before(async () => {
    for (const id of ['cluster-a', 'cluster-b']) servers.set(id, await startTestApiServer());
    const nodes = (n: number) => [
      { name: `${['a', 'b'][n - 1]}-gw`, underlayAddress: `192.168.${n}.1`, podCIDR: '10.0.0.0/24', publicAddress: `203.0.113.${n}` },
      { name: `${['a', 'b'][n - 1]}-w1`, underlayAddress: `192.168.${n}.2`, podCIDR: '10.0.1.0/24', publicAddress: `203.0.113.1${n}` },
    ];
    const kubeconfig = (id: string) => readFileSync(servers.get(id)!.kubeconfigPath, 'utf8');
    await seedCluster(servers.get('cluster-a')!.kubeConfig, nodes(1), new Map([['cluster-b', kubeconfig('cluster-b')]]));
    await seedCluster(servers.get('cluster-b')!.kubeConfig, nodes(2), new Map([['cluster-a', kubeconfig('cluster-a')]]));
    for (const [id, peer] of [
      ['cluster-a', 'cluster-b'],
      ['cluster-b', 'cluster-a'],
    ] as const) {
      const config = readControllerConfig(
        { clusterId: id, podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', peers: [peer], interval: 0.1 },
        'kubernetes',
      );
      for (const replica of [0, 1]) {
        const identity = `${id}-${replica}`;
        const stop = new AbortController();
        const log = createLogger('controller', 'silent');
        // Each replica serves its metrics as `strait controller --kubernetes` does, on a port of the kernel's choice.
        const metrics = new ControllerMetrics('kubernetes');
        const server = await startMetricsServer(
          { address: '127.0.0.1', port: 0, addressFrom: '--metrics-address' },
          metrics.registry,
          () => metrics.notReady(),
          log,
        );
        replicas.set(identity, {
          stop,
          metrics: server,
          done: runKubernetesController(
            { config, kubeConfig: servers.get(id)!.kubeConfig, namespace: defaultNamespace, identity, leaseTimings: timings, log, metrics },
            stop.signal,
          ),
        });
      }
    }
  });

  after(async () => {
    for (const r of replicas.values()) r.stop.abort();
    await Promise.all([...replicas.values()].map((r) => r.done));
    await Promise.all([...replicas.values()].map((r) => r.metrics.close()));
    for (const s of servers.values()) await s.close();
  });

  it("replicates the NetworkConfigs through the peers' API servers, allocates as objects, and writes a NodeDataplane per Node", async () => {
    // Connected, not Ready: no agent runs here, so no gateway said it is ready (its Node's Ready is not enough).
    const connected = async (cluster: string) =>
      (await list(cluster, 'tunnelendpoints')).map(
        (o) => o.status?.conditions?.find((c: { type: string }) => c.type === 'Connected')?.status,
      );
    await waitFor(
      'both TunnelEndpoints Connected',
      async () => (await connected('cluster-a')).join() === 'True' && (await connected('cluster-b')).join() === 'True',
      20_000,
    );
    const [offer] = await list('cluster-b', 'networkconfigs');
    assert.equal(offer!.metadata.name, 'cluster-a.cluster-b');
    assert.deepEqual(offer!.spec, {
      clusterId: 'cluster-a',
      remoteClusterId: 'cluster-b',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      // Cluster A's second candidate, n2, is its standby gateway.
      endpoint: { address: '203.0.113.1', port: 4789, standbyAddresses: ['203.0.113.11'] },
    });
    assert.deepEqual(offer!.status, {
      processed: true,
      remappedPodCIDR: '10.1.0.0/16',
      remappedExternalCIDR: '10.2.0.0/24',
      observed: { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' },
    });
    assert.deepEqual(offer!.metadata.labels, { 'app.kubernetes.io/managed-by': 'strait-controller', 'strait.io/cluster-id': 'cluster-a' });
    const [tunnel] = await list('cluster-a', 'tunnelendpoints');
    assert.deepEqual(tunnel!.spec, {
      clusterId: 'cluster-b',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.2.0.0/24',
      localNATPodCIDR: '10.1.0.0/16',
      localNATExternalCIDR: '10.2.0.0/24',
      endpoint: { address: '203.0.113.2', port: 4789, standbyAddresses: ['203.0.113.12'] },
    });
    // The peering's conditions (peering-conditions.ts), and the line `kubectl get` makes of them.
    assert.deepEqual(
      tunnel!.status.conditions.map((c: { type: string; status: string; reason: string }) => [c.type, c.status, c.reason]),
      [
        ['Ready', 'False', 'NoReadyGateway'],
        ['Connected', 'True', 'Exchanged'],
        ['CredentialsValid', 'True', 'Accepted'],
        ['Remapped', 'True', 'Overlapping'],
        ['GatewayReady', 'False', 'NoReadyGateway'],
      ],
    );
    const remapped = tunnel!.status.conditions.find((c: { type: string }) => c.type === 'Remapped').message;
    assert.match(remapped, /cluster-b's PodCIDR 10\.0\.0\.0\/16 is 10\.1\.0\.0\/16/);
    // Not execFileSync: the API server runs in this process.
    const { stdout: table } = await promisify(execFile)(k8sTool('kubectl'), [
      '--kubeconfig',
      servers.get('cluster-a')!.kubeconfigPath,
      'get',
      'tunnelendpoints',
    ]);
    assert.match(table, /^NAME\s+PEER\s+READY\s+REASON\s+REMOTE POD\s+REMOTE EXTERNAL\s+LOCAL NAT POD\s+AGE\n/);
    assert.match(table, /\ncluster-b\s+cluster-b\s+False\s+NoReadyGateway\s+10\.1\.0\.0\/16\s+10\.2\.0\.0\/24\s+10\.1\.0\.0\/16\s+\S+\n$/);
    const dataplanes = await list('cluster-a', 'nodedataplanes');
    assert.deepEqual(
      dataplanes.map((d) => [d.metadata.name, d.spec.peers.length, d.spec.node.gatewayCandidate]),
      [
        ['a-gw', 1, true],
        ['a-w1', 1, true],
      ],
    );
    // The gateways, ours and the peer's, are in one object: the StraitGateway named after the cluster.
    const gateways = await list('cluster-a', 'straitgateways');
    const peerGateway = (await list('cluster-b', 'straitgateways'))[0]!.spec.activeGateway.name;
    assert.deepEqual(
      gateways.map((g) => [g.metadata.name, g.spec.activeGateway.name, g.spec.peers.map((p: { clusterId: string }) => p.clusterId)]),
      [['cluster-a', 'a-gw', ['cluster-b']]],
    );
    assert.ok(peerGateway.startsWith('b-'), `cluster-b's gateway ${peerGateway}`);
    assert.deepEqual(
      (await list('cluster-a', 'clusternetworks')).map((o) => o.metadata.name),
      ['cluster-a'],
    );
    assert.deepEqual(
      (await list('cluster-a', 'peernetworks')).map((o) => [o.metadata.name, o.spec.remotePodCIDR]),
      [['cluster-b', '10.1.0.0/16']],
    );
    // In `default`, as kube-apiserver requires of an Event about a cluster-scoped object, with the
    // object's uid, which `kubectl describe` matches on.
    const events = await servers.get('cluster-a')!.kubeConfig.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: 'default' });
    const tunnelEndpoint = (await list('cluster-a', 'tunnelendpoints')).find((o) => o.metadata.name === 'cluster-b')!;
    assert.ok(
      events.items.some(
        (e) =>
          e.reason === 'PeerReady' &&
          e.reportingController === 'strait.io/controller' &&
          e.regarding?.name === 'cluster-b' &&
          e.regarding.uid === tunnelEndpoint.metadata.uid,
      ),
      'a PeerReady event about the TunnelEndpoint, with its uid',
    );
  });

  it("says on each replica's /metrics whether it leads; the leader shows its peers and IPAM, the standby none of them; both are ready", async () => {
    const leader = (await holder('cluster-a'))!;
    const standby = leader === 'cluster-a-0' ? 'cluster-a-1' : 'cluster-a-0';
    const port = (identity: string) => replicas.get(identity)!.metrics.port;
    // B's offer is answered in the reconcile that builds the TunnelEndpoint, so its peer is ready by now.
    await waitFor(
      "the leader's peer ready",
      async () => series(await scrape(port(leader)), 'strait_controller_peers').includes('state=ready 1'),
      10_000,
    );
    const led = await scrape(port(leader));
    assert.deepEqual(series(led, 'strait_controller_leader'), ['1']);
    assert.deepEqual(series(led, 'strait_controller_peers'), [
      'state=ready 1',
      'state=refused 0',
      'state=remapped 0',
      'state=waiting-for-peer 0',
    ]);
    // B numbers its pods and ExternalCIDR as A does: both remapped here (10.1.0.0/16, 10.2.0.0/24).
    assert.deepEqual(series(led, 'strait_controller_ipam_peer_networks'), [
      'family=ipv4 kind=external remapped=false 0',
      'family=ipv4 kind=external remapped=true 1',
      'family=ipv4 kind=pod remapped=false 0',
      'family=ipv4 kind=pod remapped=true 1',
    ]);
    assert.deepEqual(series(led, 'strait_controller_ipam_external_addresses_in_use'), ['family=ipv4 0']);
    assert.deepEqual(series(led, 'strait_controller_gateway_changes_total'), ['0']);
    const waiting = await scrape(port(standby));
    assert.deepEqual(series(waiting, 'strait_controller_leader'), ['0']);
    assert.deepEqual(
      metricNames(waiting, 'strait_controller_'),
      [
        'strait_controller_gateway_changes_total',
        'strait_controller_leader',
        'strait_controller_reconcile_duration_seconds_bucket',
        'strait_controller_reconcile_duration_seconds_count',
        'strait_controller_reconcile_duration_seconds_sum',
        'strait_controller_reconcile_errors_total',
      ],
      'a standby reconciles nothing, so it shows no peer or IPAM gauge',
    );
    for (const identity of [leader, standby])
      assert.deepEqual(await get(port(identity), '/readyz'), { status: 200, body: 'ready\n' }, identity);
  });

  it('hands the lead to the standby when the leader stops, and the new leader rewrites nothing', async () => {
    const leader = await holder('cluster-a');
    assert.ok(leader === 'cluster-a-0' || leader === 'cluster-a-1', `a replica leads: ${leader}`);
    const versions = async () =>
      (
        await Promise.all(
          ['nodedataplanes', 'tunnelendpoints', 'networkconfigs', 'clusternetworks', 'peernetworks'].map((p) => list('cluster-a', p)),
        )
      )
        .flat()
        .map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)
        .sort();
    const before = await versions();
    const theirs = (await list('cluster-b', 'networkconfigs')).map((o) => o.metadata.resourceVersion);
    const stopped = replicas.get(leader!)!;
    stopped.stop.abort();
    await stopped.done;
    const standby = leader === 'cluster-a-0' ? 'cluster-a-1' : 'cluster-a-0';
    // Released on a clean stop: the standby takes it at its next attempt, well within one lease.
    await waitFor(`${standby} leads`, async () => (await holder('cluster-a')) === standby, 1_000 * (timings.retryPeriod + 1));
    // Time for the new leader to fill its caches and reconcile many times (interval 0.1 s).
    await sleep(1_500);
    assert.deepEqual(await versions(), before, 'no object of cluster-a was written by the new leader');
    assert.deepEqual(
      (await list('cluster-b', 'networkconfigs')).map((o) => o.metadata.resourceVersion),
      theirs,
      'nor our NetworkConfig in cluster-b',
    );
    const led = await scrape(replicas.get(standby)!.metrics.port);
    assert.deepEqual(series(led, 'strait_controller_leader'), ['1'], 'the new leader says so');
    assert.deepEqual(series(led, 'strait_controller_peers'), [
      'state=ready 1',
      'state=refused 0',
      'state=remapped 0',
      'state=waiting-for-peer 0',
    ]);
    assert.deepEqual(series(led, 'strait_controller_gateway_changes_total'), ['0'], 'it adopted the gateway: no move');
    const former = await scrape(replicas.get(leader!)!.metrics.port);
    assert.deepEqual(series(former, 'strait_controller_leader'), ['0']);
    assert.deepEqual(
      metricNames(former, 'strait_controller_'),
      [
        'strait_controller_gateway_changes_total',
        'strait_controller_leader',
        'strait_controller_reconcile_duration_seconds_bucket',
        'strait_controller_reconcile_duration_seconds_count',
        'strait_controller_reconcile_duration_seconds_sum',
        'strait_controller_reconcile_errors_total',
      ],
      'the former leader dropped the peer and IPAM gauges of its term',
    );
  });
});
