/**
 * ADDs as runtimes really send them (issue 24): one whose probe cannot be sent, one retried after the
 * service died between its claim and its Endpoint, the same ADD four times at once, and a DEL that
 * comes while its ADD still runs. Each ends with every given address claimed once, probed and recorded
 * in the pod's Endpoint, and a failed ADD leaves nothing.
 */
import assert from 'node:assert/strict';
import { apiVersion, group, version } from '../../src/api/resource-names';
import { ip } from '../../src/kernel/command';
import { requireRoot, uniqueName } from '../support/kernel';
import { waitFor } from '../support/wait';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

describe('strait-ipam ADDs failed, retried and repeated', function () {
  this.timeout(60_000);
  requireRoot(this);
  let f: PoolIpamFixture;

  beforeEach(async () => {
    f = await poolIpamFixture();
  });
  afterEach(async () => f.close());

  /** The pod's Endpoint attachments as [containerID, addresses], or undefined without an Endpoint. */
  const recorded = async (pod: string) => {
    try {
      const endpoint = (await f.custom.getNamespacedCustomObject({
        group,
        version,
        namespace: 'default',
        plural: 'straitendpoints',
        name: pod,
      })) as { spec: { attachments: { containerID?: string; ips: { address: string }[] }[] } };
      return endpoint.spec.attachments.map((a) => [a.containerID, a.ips.map((i) => i.address)]);
    } catch {
      return undefined;
    }
  };

  it('a probe that cannot be sent (no such CNI_NETNS, no such or no Ethernet CNI_IFNAME) fails with code 4 naming the variable and leaves no claim; the ADD retried gets a probed, recorded address', async () => {
    await f.pool('pool-retry', { subnet: '10.6.3.0/24', ips: ['10.6.3.10-10.6.3.11'] });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-retry'], detect_gateway: false });
    const pod = await f.pod('web-r1');
    const gone = `/run/netns/${uniqueName('sipam-gone')}`;
    const refusals: [Partial<typeof pod> & { ifname?: string }, RegExp][] = [
      [
        { netns: gone },
        new RegExp(
          `^CNI_NETNS: not a network namespace this node can enter to probe from \\(open network namespace: ENOENT\\) \\(got "${gone}"\\)$`,
        ),
      ],
      [
        { netns: '/etc/hostname' },
        /^CNI_NETNS: not a network namespace this node can enter to probe from \(enter network namespace: EINVAL\) \(got "\/etc\/hostname"\)$/,
      ],
      // Strait's own plugin is run alone here: no main plugin made eth0 in the pod's namespace.
      [{}, new RegExp(`^CNI_IFNAME: no such interface in ${pod.netns} \\(find interface: ENODEV\\) \\(got "eth0"\\)$`)],
      [
        { ifname: 'lo' },
        new RegExp(
          `^CNI_IFNAME: not an Ethernet interface in ${pod.netns}, so no ARP/NDP probe can be sent from it \\(read interface address: EOPNOTSUPP\\) \\(got "lo"\\)$`,
        ),
      ],
    ];
    for (const [change, msg] of refusals) {
      const failed = await f.node.runIpam('ADD', config, { ...pod, ...change });
      assert.equal(failed.json?.code, 4, failed.stdout + failed.stderr);
      assert.match(failed.json!.msg, msg);
      assert.deepEqual(await f.claims(), [], `a failed ADD (${failed.json!.msg}) left a claim`);
      assert.equal(await recorded('web-r1'), undefined);
    }
    // The runtime retries without DEL, now through macvlan, which makes eth0: the address is probed and recorded.
    const added = await f.node.run('ADD', config, pod);
    assert.equal(added.code, 0, added.stdout + added.stderr);
    const address = (added.json!.ips[0].address as string).split('/')[0]!;
    assert.deepEqual(
      (await f.claims()).map((c) => [c.name, c.spec.containerID]),
      [[address, pod.containerId]],
    );
    assert.deepEqual(await recorded('web-r1'), [[pod.containerId, [address]]]);
  });

  it('a claim the service left without an Endpoint (killed between the two) is released by the retried ADD, and the address probed: a host holding it gets it marked, the pod the next one', async () => {
    // Node node-a starts in a pool of two at its second address (startOffset): the one left claimed.
    await f.pool('pool-left', { subnet: '10.6.7.0/24', ips: ['10.6.7.20-10.6.7.21'] });
    const holder = f.node.segmentHost('hold1', '10.6.7.21/24');
    const pod = await f.pod('web-r2');
    const left = {
      address: '10.6.7.21',
      pool: 'pool-left',
      podNamespace: 'default',
      podName: 'web-r2',
      podUID: pod.uid,
      node: 'node-a',
      network: 'underlay',
      ifname: 'eth0',
      containerID: pod.containerId,
    };
    await f.custom.createClusterCustomObject({
      group,
      version,
      plural: 'ipclaims',
      body: { apiVersion, kind: 'IPClaim', metadata: { name: '10.6.7.21' }, spec: left },
    });
    await waitFor("the claim in the service's cache", () => f.service!.allocator.claims.get('10.6.7.21') !== undefined);

    const added = await f.node.run('ADD', f.config('macvlan', { default_ipv4_ippool: ['pool-left'], detect_gateway: false }), pod);
    assert.equal(added.code, 0, added.stdout + added.stderr);
    assert.equal(added.json!.ips[0].address, '10.6.7.20/24');
    const claims = await f.claims();
    assert.deepEqual(claims.map((c) => [c.name, c.spec.containerID ?? null, c.spec.conflict?.mac ?? null]).sort(), [
      ['10.6.7.20', pod.containerId, null],
      ['10.6.7.21', pod.containerId, JSON.parse(ip(['-n', holder.name, '-j', 'link', 'show', 'hold1']))[0].address],
    ]);
    assert.deepEqual(await recorded('web-r2'), [[pod.containerId, ['10.6.7.20']]]);
  });

  it('an ADD that finished, retried, gets the same address without another claim', async () => {
    await f.pool('pool-same', { subnet: '10.6.8.0/24', ips: ['10.6.8.10-10.6.8.20'] });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-same'], detect_gateway: false, detect_ip_conflict: false });
    const pod = await f.pod('web-r3');
    const first = await f.node.runIpam('ADD', config, pod);
    const second = await f.node.runIpam('ADD', config, pod);
    assert.deepEqual([first.code, second.code, second.json], [0, 0, first.json]);
    assert.equal((await f.claims()).length, 1);
  });

  // Issue 24: 2-4 claims in 9 of 10 containers, once two IPv4 addresses for one interface.
  it('4 identical ADDs at once for each of 10 containers: one claim each, the same answer to all four, every Endpoint written', async () => {
    await f.pool('pool-par', { subnet: '10.6.9.0/24', ips: ['10.6.9.10-10.6.9.100'] });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-par'], detect_gateway: false, detect_ip_conflict: false });
    const pods = await Promise.all(Array.from({ length: 10 }, (_, i) => f.pod(`web-p${i}`)));
    const answers = await Promise.all(pods.map((pod) => Promise.all(Array.from({ length: 4 }, () => f.node.runIpam('ADD', config, pod)))));
    const given = answers.map((four, i) => {
      assert.deepEqual(
        four.map((a) => a.code),
        [0, 0, 0, 0],
        four.map((a) => a.stdout).join(''),
      );
      assert.deepEqual(
        new Set(four.map((a) => a.stdout)).size,
        1,
        `container ${pods[i]!.containerId} got different answers: ${four.map((a) => a.stdout).join('')}`,
      );
      return (four[0]!.json!.ips as { address: string }[]).map((x) => x.address.split('/')[0]!);
    });
    const claims = await f.claims();
    assert.deepEqual(claims.map((c) => [c.spec.containerID, c.name]).sort(), pods.map((p, i) => [p.containerId, ...given[i]!]).sort());
    for (const [i, pod] of pods.entries()) assert.deepEqual(await recorded(pod.name), [[pod.containerId, given[i]]]);
    assert.equal(f.service!.allocator.attachments.size, 0, 'an attachment is still queued after every call answered');
  });

  it('a DEL that comes while its ADD still probes waits for it, then releases what it gave: no claim, no Endpoint', async () => {
    await f.pool('pool-del', { subnet: '10.6.10.0/24', ips: ['10.6.10.10-10.6.10.20'] });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-del'], detect_gateway: false });
    const pod = await f.pod('web-r4');
    // An interface nobody answers on: each probe of the ADD waits 3 x 100 ms.
    ip(['-n', pod.netnsName, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0-peer']);
    const adding = f.node.runIpam('ADD', config, pod);
    await waitFor("the ADD's claim", async () => (await f.claims()).length === 1, 10_000, undefined, 5);
    const deleted = await f.node.runIpam('DEL', config, pod);
    const added = await adding;
    assert.deepEqual([added.code, deleted.code], [0, 0], added.stdout + deleted.stdout);
    assert.deepEqual(await f.claims(), []);
    assert.equal(await recorded('web-r4'), undefined);
  });
});
