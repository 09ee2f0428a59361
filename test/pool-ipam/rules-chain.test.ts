/**
 * The document's allocation rules end to end: the pods, namespaces, nodes and owners the rules read are
 * API objects; the address comes through Debian's macvlan plugin. Each case's expected pool is literal.
 */
import assert from 'node:assert/strict';
import { apiVersion, group, version } from '../../src/api/resource-names';
import { requireRoot } from '../support/kernel';
import { waitFor } from '../support/wait';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

describe('pool IPAM rules through the real macvlan plugin', function () {
  this.timeout(120_000);
  requireRoot(this);
  let f: PoolIpamFixture;

  before(async () => {
    f = await poolIpamFixture();
    await f.pool('cluster-v4', { subnet: '10.8.5.0/24', ips: ['10.8.5.10-10.8.5.20'], default: true });
    await f.pool('cluster-v6', { subnet: 'fd00:8:5::/64', ips: ['fd00:8:5::10-fd00:8:5::20'], default: true });
    await f.pool('cni-zone-b', { subnet: '10.8.4.0/24', ips: ['10.8.4.10-10.8.4.20'], nodeAffinity: { matchLabels: { zone: 'b' } } });
    await f.pool('cni-zone-a', { subnet: '10.8.3.0/24', ips: ['10.8.3.10-10.8.3.20'], nodeAffinity: { matchLabels: { zone: 'a' } } });
    await f.pool('team-v4', { subnet: '10.8.2.0/24', ips: ['10.8.2.10-10.8.2.20'] });
    await f.pool('pod-v4', { subnet: '10.8.1.0/24', ips: ['10.8.1.10-10.8.1.20'] });
    await f.pool('web-only', { subnet: '10.8.6.0/24', ips: ['10.8.6.10-10.8.6.20'], podAffinity: { matchLabels: { app: 'web' } } });
    await f.pool('disabled', { subnet: '10.8.7.0/24', ips: ['10.8.7.10'], disable: true });
    await f.core.createNamespace({
      body: { metadata: { name: 'team', annotations: { 'ipam.strait.io/default-ipv4-ippool': '["team-v4"]' } } },
    });
    await f.custom.createClusterCustomObject({
      group,
      version,
      plural: 'straitsubnets',
      body: { apiVersion, kind: 'StraitSubnet', metadata: { name: 'dc1' }, spec: { subnet: '10.8.0.0/24', ips: ['10.8.0.10-10.8.0.40'] } },
    });
  });
  after(async () => f?.close());

  const pool = async (added: { json?: Record<string, any>; stdout: string; stderr: string; code: number }) => {
    assert.equal(added.code, 0, added.stdout + added.stderr);
    return (added.json!.ips as { address: string }[]).map((i) => i.address);
  };
  const cniDefaults = { default_ipv4_ippool: ['cni-zone-b', 'cni-zone-a'], detect_ip_conflict: false, detect_gateway: false };

  it('rule 1 beats every other: a subnet annotation gives the Deployment its own pool of replicas + 1 addresses carved from the Subnet', async () => {
    const deployment = await f.apps.createNamespacedDeployment({
      namespace: 'team',
      body: {
        metadata: { name: 'api' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'api' } },
          template: { metadata: { labels: { app: 'api' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      },
    });
    const pod = await f.pod('api-1', {
      namespace: 'team',
      labels: { app: 'api' },
      annotations: { 'ipam.strait.io/subnet': '{"ipv4":["dc1"]}', 'ipam.strait.io/ippool': '{"ipv4":["pod-v4"]}' },
      owner: { kind: 'Deployment', name: 'api', uid: deployment.metadata!.uid! },
    });
    const [address] = await pool(await f.node.run('ADD', f.config('macvlan', cniDefaults), pod));
    assert.match(address!, /^10\.8\.0\.1[0-2]\/24$/);
    const subnet = (await f.custom.getClusterCustomObject({ group, version, plural: 'straitsubnets', name: 'dc1' })) as {
      status: { allocations: { pool: string; ips: string[] }[] };
    };
    assert.equal(subnet.status.allocations.length, 1);
    assert.match(subnet.status.allocations[0]!.pool, /^auto-deployment-api-v4-[0-9a-f]{8}$/);
    assert.deepEqual(subnet.status.allocations[0]!.ips, ['10.8.0.10-10.8.0.12']);
    // Only the application's pods may take its addresses.
    const made = (await f.custom.getClusterCustomObject({
      group,
      version,
      plural: 'straitippools',
      name: subnet.status.allocations[0]!.pool,
    })) as { spec: Record<string, unknown> };
    assert.deepEqual([made.spec.namespaceName, made.spec.podAffinity], [['team'], { matchLabels: { app: 'api' } }]);
  });

  it('rule 2 beats rules 3-5: the ippool annotation', async () => {
    const pod = await f.pod('p2', { namespace: 'team', annotations: { 'ipam.strait.io/ippool': '{"ipv4":["pod-v4"]}' } });
    assert.match((await pool(await f.node.run('ADD', f.config('macvlan', cniDefaults), pod)))[0]!, /^10\.8\.1\./);
  });

  it('rule 3 beats rules 4-5: the namespace default', async () => {
    const pod = await f.pod('p3', { namespace: 'team' });
    assert.match((await pool(await f.node.run('ADD', f.config('macvlan', cniDefaults), pod)))[0]!, /^10\.8\.2\./);
  });

  it('rule 4 beats rule 5, filtered by node affinity: a pod on node-a (zone a) skips the zone-b pool listed first', async () => {
    const pod = await f.pod('p4', { node: 'node-a' });
    assert.match((await pool(await f.node.run('ADD', f.config('macvlan', cniDefaults), pod)))[0]!, /^10\.8\.3\./);
  });

  it('rule 5: with nothing else, the cluster default pools of both families (dual stack)', async () => {
    const pod = await f.pod('p5');
    const addresses = await pool(await f.node.run('ADD', f.config('macvlan', { detect_ip_conflict: false, detect_gateway: false }), pod));
    assert.equal(addresses.length, 2);
    assert.match(addresses[0]!, /^10\.8\.5\./);
    assert.match(addresses[1]!, /^fd00:8:5::(1[0-9a-f]|20)\/64$/);
  });

  it('sorting: a pool with podAffinity comes before one without, whatever the order named', async () => {
    const pod = await f.pod('web-1', {
      labels: { app: 'web' },
      annotations: { 'ipam.strait.io/ippool': '{"ipv4":["pod-v4","web-only"]}' },
    });
    assert.match((await pool(await f.node.run('ADD', f.config('macvlan', cniDefaults), pod)))[0]!, /^10\.8\.6\./);
  });

  it('filtering: every candidate rejected fails ADD with code 101, each pool with its reason', async () => {
    const pod = await f.pod('p7', { annotations: { 'ipam.strait.io/ippool': '{"ipv4":["disabled","web-only","nope"]}' } });
    const out = await f.node.run('ADD', f.config('macvlan', cniDefaults), pod);
    assert.equal(out.json!.code, 101, out.stdout);
    assert.match(out.json!.msg, /disabled: spec\.disable is true/);
    assert.match(out.json!.msg, /web-only: spec\.podAffinity/);
    assert.match(out.json!.msg, /nope: StraitIPPool "nope" does not exist/);
  });

  it('a malformed annotation fails ADD with code 105 naming it, never falling through to a lower rule', async () => {
    const pod = await f.pod('p8', { annotations: { 'ipam.strait.io/ippool': '{"ipv4":"pod-v4"}' } });
    const out = await f.node.run('ADD', f.config('macvlan', cniDefaults), pod);
    assert.equal(out.json!.code, 105, out.stdout);
    assert.match(out.json!.msg, /ipam\.strait\.io\/ippool/);
  });

  it("writes the pools' allocated and total counts to their status", async () => {
    await waitFor('pod-v4 counted', async () => {
      const p = (await f.custom.getClusterCustomObject({ group, version, plural: 'straitippools', name: 'pod-v4' })) as {
        status?: { allocatedIPCount?: number; totalIPCount?: number };
      };
      return p.status?.allocatedIPCount === 1 && p.status.totalIPCount === 11;
    });
  });
});
