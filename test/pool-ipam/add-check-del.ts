/**
 * The life of one attachment under `plugin` (macvlan, ipvlan, bridge): ADD gives the pod an address of
 * the CNI default pool with its gateway and routes, CHECK passes, DEL releases it, DEL again succeeds.
 */
import assert from 'node:assert/strict';
import { group, version } from '../../src/api/resource-names';
import { ip } from '../../src/kernel/command';
import { addressesIn } from '../support/cni';
import { waitFor } from '../support/wait';
import type { PoolIpamFixture } from './fixture';

export async function addCheckDel(f: PoolIpamFixture, plugin: 'macvlan' | 'ipvlan' | 'bridge'): Promise<void> {
  await f.pool('pool-cni', {
    subnet: '10.6.0.0/24',
    ips: ['10.6.0.10-10.6.0.12'],
    gateway: '10.6.0.1',
    routes: [{ dst: '10.7.0.0/16', gw: '10.6.0.1' }],
    vlan: 0,
  });
  const config = f.config(plugin, { default_ipv4_ippool: ['pool-cni'], detect_gateway: false });
  const pod = await f.pod('web-1');
  const added = await f.node.run('ADD', config, pod);
  assert.equal(added.code, 0, added.stdout + added.stderr);
  const address = added.json!.ips[0].address as string;
  assert.match(address, /^10\.6\.0\.1[0-2]\/24$/);
  assert.equal(added.json!.ips[0].gateway, '10.6.0.1');
  assert.deepEqual(addressesIn(pod.netnsName), [address]);
  assert.match(ip(['-n', pod.netnsName, 'route', 'show', '10.7.0.0/16']), /via 10\.6\.0\.1/);
  const claims = await f.claims();
  assert.deepEqual(
    claims.map((c) => [c.name, c.spec.pool, c.spec.podName, c.spec.containerID, c.spec.node]),
    [[address.split('/')[0], 'pool-cni', 'web-1', pod.containerId, 'node-a']],
  );
  const endpoint = (await f.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: 'default',
    plural: 'straitendpoints',
    name: 'web-1',
  })) as { spec: Record<string, any> };
  assert.deepEqual(endpoint.spec.attachments, [
    {
      network: 'underlay',
      ifname: 'eth0',
      containerID: pod.containerId,
      ips: [{ address: address.split('/')[0], prefixLength: 24, pool: 'pool-cni', gateway: '10.6.0.1', vlan: 0 }],
    },
  ]);

  const checked = await f.node.run('CHECK', { ...config, prevResult: added.json }, pod);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  const deleted = await f.node.run('DEL', config, pod);
  assert.equal(deleted.code, 0, deleted.stdout + deleted.stderr);
  await waitFor('the claim released', async () => (await f.claims()).length === 0);
  await assert.rejects(
    f.custom.getNamespacedCustomObject({ group, version, namespace: 'default', plural: 'straitendpoints', name: 'web-1' }),
    /404|not found/i,
  );
  const again = await f.node.run('DEL', config, pod);
  assert.equal(again.code, 0, again.stdout + again.stderr);
}
