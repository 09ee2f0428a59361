/**
 * The Helm chart's agent role with poolIpam.enabled is enough for the pool IPAM service: the service runs
 * as the chart's agent ServiceAccount, under the ClusterRoles and Roles `helm template` renders, against
 * the lab API server (which enforces RBAC), and every kind of call it makes succeeds: ADD, CHECK and DEL
 * through the real macvlan plugin and strait-ipam, a StatefulSet pod's address kept and taken over,
 * application pools carved from a Subnet for a Deployment's and a ReplicaSet's pod, and the pools' counts.
 * The service swallows some refusals (a count it cannot write is logged at debug): the API server's log
 * of refusals is what says none happened; and its log of requests says each call the rules grant was
 * made, so none is granted for nothing.
 */
import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import { group, version } from '../../src/api/resource-names';
import { addCheckDel } from '../pool-ipam/add-check-del';
import { type PoolIpamFixture, poolIpamFixture } from '../pool-ipam/fixture';
import { type ChartObject, applyChartAccess, chartAgentUser, chartNamespace, renderChart } from '../support/chart';
import { requireRoot } from '../support/kernel';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

const agent = chartAgentUser('agent-token-9d41b7');

/** The rules of the chart's agent ClusterRole, rendered with `args`. */
const chartAgentRules = (args: string[]): ChartObject[] =>
  renderChart(args).find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'strait-agent')!.rules;
/** Each `group/resource verb` the rules allow. */
const grants = (rules: ChartObject[]) =>
  new Set(
    rules.flatMap((r) =>
      (r.apiGroups as string[]).flatMap((g) =>
        (r.resources as string[]).flatMap((res) => (r.verbs as string[]).map((v) => `${g}/${res} ${v}`)),
      ),
    ),
  );

describe("the pool IPAM service under the Helm chart's agent role (lab API server, real macvlan)", function () {
  requireRoot(this);
  this.timeout(90_000);
  let f: PoolIpamFixture | undefined;
  let server: CapturedLog;

  beforeEach(async () => {
    server = captureLog('debug');
    f = await poolIpamFixture({
      apiServer: { users: [agent], logger: server.log },
      serviceKubeConfig: async (api) => {
        await api.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: chartNamespace } } });
        await applyChartAccess(api.kubeConfig, ['--set', 'poolIpam.enabled=true']);
        return api.kubeconfigFor(agent.token).kubeConfig;
      },
    });
  });
  afterEach(async () => f?.close());

  /** What the API server refused, as it logs each refusal. */
  const refused = () => server.lines.map((l) => String(l.msg)).filter((m) => m.includes(' is forbidden: '));
  const poolStatus = async (name: string) =>
    ((await f!.custom.getClusterCustomObject({ group, version, plural: 'straitippools', name })) as { status?: Record<string, number> })
      .status;

  it("allocates and releases, keeps a StatefulSet pod's address, carves application pools from a Subnet and counts, with nothing refused and no rule unused", async () => {
    const fx = f!;
    await addCheckDel(fx, 'macvlan');

    // A StatefulSet pod: DEL keeps its claim (detached), its next incarnation takes it over.
    await fx.pool('pool-sts', { subnet: '10.6.5.0/24', ips: ['10.6.5.10-10.6.5.30'] });
    const set = await fx.apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: {
        metadata: { name: 'db' },
        spec: {
          replicas: 1,
          serviceName: 'db',
          selector: { matchLabels: { app: 'db' } },
          template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      },
    });
    const owner = { kind: 'StatefulSet', name: 'db', uid: set.metadata!.uid! };
    const sts = fx.config('macvlan', { default_ipv4_ippool: ['pool-sts'] });
    const first = await fx.pod('db-0', { owner });
    const added = await fx.node.run('ADD', sts, first);
    assert.equal(added.code, 0, added.stdout);
    assert.equal((await fx.node.run('DEL', sts, first)).code, 0);
    await fx.core.deleteNamespacedPod({ namespace: 'default', name: 'db-0', gracePeriodSeconds: 0 });
    const again = await fx.pod('db-0', { owner });
    const readded = await fx.node.run('ADD', sts, again);
    assert.equal(readded.code, 0, readded.stdout);
    assert.equal(readded.json!.ips[0].address, added.json!.ips[0].address);

    // Rule 1: the application's own pool from a Subnet, sized by its replicas (+1): a Deployment of 2
    // replicas gets 3 addresses; a ReplicaSet the API server does not hold (404) counts as 1, so 2.
    await fx.custom.createClusterCustomObject({
      group,
      version,
      plural: 'straitsubnets',
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'StraitSubnet',
        metadata: { name: 'subnet-a' },
        spec: { subnet: '10.8.0.0/24', ips: ['10.8.0.10-10.8.0.40'] },
      },
    });
    const shop = await fx.apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'shop' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'shop' } },
          template: { metadata: { labels: { app: 'shop' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      },
    });
    const annotations = { 'ipam.strait.io/subnet': JSON.stringify({ ipv4: ['subnet-a'] }) };
    const bySubnet = fx.config('macvlan', {}, 'apps');
    const deployed = await fx.pod('shop-1', {
      labels: { app: 'shop' },
      owner: { kind: 'Deployment', name: 'shop', uid: shop.metadata!.uid! },
      annotations,
    });
    const replicated = await fx.pod('front-1', {
      owner: { kind: 'ReplicaSet', name: 'front-5d8f6', uid: '0b1e5c7a-0000-4000-8000-000000000001' },
      annotations,
    });
    for (const [pod, range] of [
      [deployed, /^10\.8\.0\.1[0-2]\/24$/],
      [replicated, /^10\.8\.0\.1[34]\/24$/],
    ] as const) {
      const out = await fx.node.run('ADD', bySubnet, pod);
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.match(out.json!.ips[0].address, range, pod.name);
    }
    const subnet = (await fx.custom.getClusterCustomObject({ group, version, plural: 'straitsubnets', name: 'subnet-a' })) as {
      status: { allocations: { pool: string; ips: string[] }[] };
    };
    assert.deepEqual(
      subnet.status.allocations.map((a) => a.ips),
      [['10.8.0.10-10.8.0.12'], ['10.8.0.13-10.8.0.14']],
    );

    // The Deployment deleted: its pod goes (the cluster's collector), its address is released (DEL), and
    // the next pass deletes the application pool and takes it out of the Subnet (no collector can: an
    // IPPool is cluster-scoped, the Deployment namespaced).
    const shopPool = subnet.status.allocations[0]!.pool;
    await fx.apps.deleteNamespacedDeployment({ name: 'shop', namespace: 'default' });
    assert.equal((await fx.node.run('DEL', bySubnet, deployed)).code, 0);
    await fx.service!.collector.collect();
    const pools = (await fx.custom.listClusterCustomObject({ group, version, plural: 'straitippools' })) as {
      items: { metadata: { name: string } }[];
    };
    assert.ok(!pools.items.some((p) => p.metadata.name === shopPool), `${shopPool} deleted`);
    const after = (await fx.custom.getClusterCustomObject({ group, version, plural: 'straitsubnets', name: 'subnet-a' })) as {
      status: { allocations: { ips: string[] }[] };
    };
    assert.deepEqual(
      after.status.allocations.map((a) => a.ips),
      [['10.8.0.13-10.8.0.14']],
      "the ReplicaSet's pool stays: its application cannot be read (404 is absent, but a claim holds it)",
    );

    // The counts: written a while after the claims change.
    await waitFor(
      'pool-sts counted',
      async () => (await poolStatus('pool-sts'))?.allocatedIPCount === 1,
      10_000,
      () => `refused:\n${refused().join('\n')}`,
    );
    assert.deepEqual(await poolStatus('pool-sts'), { allocatedIPCount: 1, totalIPCount: 21 });
    assert.deepEqual(refused(), []);
    // Every call beyond what the datapath's role grants is one the pool IPAM rules grant, and each of
    // those rules was used: the rules are exactly the service's calls.
    const datapath = grants(chartAgentRules([]));
    const asked = new Set(
      server.lines
        .filter((l) => l.msg === 'request' && l.user === agent.name)
        .map((l) => `${l.group}/${l.resource}${l.subresource ? `/${l.subresource}` : ''} ${l.verb}`),
    );
    const poolIpamRules = [...grants(chartAgentRules(['--set', 'poolIpam.enabled=true']))].filter((g) => !datapath.has(g)).sort();
    assert.deepEqual([...asked].filter((g) => !datapath.has(g)).sort(), poolIpamRules);
  });
});
