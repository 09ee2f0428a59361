/**
 * strait-ipam under Debian's real macvlan, ipvlan and bridge plugins, as a runtime calls them: ADD, CHECK,
 * DEL in throw-away namespaces, against the lab API server holding the pools, Pods and Namespaces.
 */
import assert from 'node:assert/strict';
import { ip } from '../../src/kernel/command';
import { createLogger } from '../../src/log';
import { startPoolIpamService } from '../../src/pool-ipam/service/pool-ipam-service';
import { requireRoot } from '../support/kernel';
import { neighbours } from '../support/cni';
import { waitFor } from '../support/wait';
import { addCheckDel } from './add-check-del';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

describe('strait-ipam chained under the real CNI plugins', function () {
  this.timeout(60_000);
  requireRoot(this);
  let f: PoolIpamFixture;

  beforeEach(async () => {
    f = await poolIpamFixture();
  });
  afterEach(async () => f.close());

  // ipvlan is not compiled into this machine's kernel: test/vm/ipvlan-cni.test.ts runs it in the VM.
  for (const plugin of ['macvlan', 'bridge'] as const) {
    it(`${plugin}: ADD gives the pod an address of the CNI default pool with its gateway and routes, CHECK passes, DEL releases it, DEL again succeeds`, () =>
      addCheckDel(f, plugin));
  }

  it('CHECK fails with code 104 when prevResult holds another address, or the attachment has no allocation, naming them', async () => {
    await f.pool('pool-cni', { subnet: '10.6.0.0/24', ips: ['10.6.0.10'] });
    const pod = await f.pod('web-2');
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-cni'] });
    const added = await f.node.run('ADD', config, pod);
    assert.equal(added.code, 0, added.stdout);
    const wrong = { ...added.json, ips: [{ ...added.json!.ips[0], address: '10.6.0.99/24' }] };
    const mismatch = await f.node.run('CHECK', { ...config, prevResult: wrong }, pod);
    assert.equal(mismatch.json?.code, 104, mismatch.stdout);
    assert.equal(mismatch.json!.msg, `prevResult.ips: 10.6.0.99, but container ${pod.containerId} interface eth0 is given 10.6.0.10`);
    const other = { ...pod, containerId: 'never-added' };
    const checked = await f.node.run('CHECK', { ...config, prevResult: added.json }, other);
    assert.notEqual(checked.code, 0);
    assert.equal(checked.json!.code, 104);
    assert.match(checked.json!.msg, /never-added/);
  });

  it('skips an address another namespace already holds (ARP probe answered) and marks it conflicting; no namespace learns a neighbour from the probes', async () => {
    // Node node-a starts in a pool of two at its second address (startOffset: FNV-1a of the node name):
    // another host on the segment already uses it.
    await f.pool('pool-probe', { subnet: '10.6.1.0/24', ips: ['10.6.1.20-10.6.1.21'] });
    const holder = f.node.segmentHost('hold0', '10.6.1.21/24');
    const pod = await f.pod('web-3');
    const added = await f.node.run('ADD', f.config('macvlan', { default_ipv4_ippool: ['pool-probe'] }), pod);
    assert.equal(added.code, 0, added.stdout + added.stderr);
    assert.equal(added.json!.ips[0].address, '10.6.1.20/24');
    const claims = await f.claims();
    const marked = claims.find((c) => c.name === '10.6.1.21');
    assert.ok(marked?.spec.conflict, `10.6.1.21 is not marked: ${JSON.stringify(claims)}`);
    assert.equal(marked.spec.conflict.mac, JSON.parse(ip(['-n', holder.name, '-j', 'link', 'show', 'hold0']))[0].address);
    assert.deepEqual(neighbours(holder.name), [], 'the holder learnt a neighbour from a probe');
    assert.deepEqual(neighbours(pod.netnsName), [], 'the pod learnt a neighbour');
    assert.deepEqual(neighbours(f.node.netns), [], 'the node learnt a neighbour');
  });

  it('fails ADD with code 103 naming the pool and gateway when the gateway does not answer; succeeds once it does', async () => {
    await f.pool('pool-gw', { subnet: '10.6.2.0/24', ips: ['10.6.2.10-10.6.2.20'], gateway: '10.6.2.1' });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-gw'] });
    const pod = await f.pod('web-4');
    const failed = await f.node.run('ADD', config, pod);
    assert.equal(failed.code, 1);
    assert.equal(failed.json!.code, 103);
    assert.match(failed.json!.msg, /gateway 10\.6\.2\.1 of StraitIPPool pool-gw did not answer ARP probes/);
    assert.deepEqual(await f.claims(), [], 'a failed ADD left a claim');
    await f.node.run('DEL', config, pod);

    const gateway = f.node.segmentHost('gw0', '10.6.2.1/24');
    const pod2 = await f.pod('web-5');
    const added = await f.node.run('ADD', config, pod2);
    assert.equal(added.code, 0, added.stdout + added.stderr);
    assert.match(added.json!.ips[0].address, /^10\.6\.2\.(1[0-9]|20)\/24$/);
    assert.deepEqual(neighbours(gateway.name), [], 'the gateway learnt a neighbour from the probe');
  });

  it('gives 50 parallel ADDs 50 distinct addresses', async () => {
    await f.pool('pool-many', { subnet: '10.6.4.0/24', ips: ['10.6.4.2-10.6.4.254'] });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-many'], detect_ip_conflict: false });
    const pods = await Promise.all(Array.from({ length: 50 }, (_, i) => f.pod(`par-${i}`)));
    const results = await Promise.all(pods.map((p) => f.node.run('ADD', config, p)));
    const failures = results.filter((r) => r.code !== 0).map((r) => r.stdout);
    assert.deepEqual(failures, []);
    const addresses = results.map((r) => r.json!.ips[0].address as string);
    assert.equal(new Set(addresses).size, 50, `duplicates among ${addresses.join(' ')}`);
    assert.equal((await f.claims()).length, 50);
  });

  it('a StatefulSet pod gets its previous address back after DEL, on another node; scaled below its ordinal, garbage collection releases it', async () => {
    await f.pool('pool-sts', { subnet: '10.6.5.0/24', ips: ['10.6.5.10-10.6.5.30'] });
    const set = await f.apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: {
        metadata: { name: 'db' },
        spec: {
          replicas: 2,
          serviceName: 'db',
          selector: { matchLabels: { app: 'db' } },
          template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      },
    });
    const owner = { kind: 'StatefulSet', name: 'db', uid: set.metadata!.uid! };
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-sts'] });
    const first = await f.pod('db-1', { owner, node: 'node-a' });
    const added = await f.node.run('ADD', config, first);
    assert.equal(added.code, 0, added.stdout);
    const address = added.json!.ips[0].address;
    assert.equal((await f.node.run('DEL', config, first)).code, 0);
    await f.core.deleteNamespacedPod({ namespace: 'default', name: 'db-1', gracePeriodSeconds: 0 });
    // Node b's own service gives the next incarnation its address back.
    const socketB = `${f.dir}/run-b/ipam.sock`;
    const serviceB = await startPoolIpamService({
      kubeConfig: f.api.kubeConfig,
      node: 'node-b',
      socket: socketB,
      log: createLogger('pool-ipam-test', 'silent'),
      gcIntervalMs: 3_600_000,
    });
    try {
      await serviceB.synced;
      const again = await f.pod('db-1', { owner, node: 'node-b' });
      const readded = await f.node.run('ADD', { ...config, ipam: { ...(config.ipam as object), socket: socketB } }, again);
      assert.equal(readded.code, 0, readded.stdout);
      assert.equal(readded.json!.ips[0].address, address);
      const [claim] = (await f.claims()).filter((c) => !c.spec.conflict);
      assert.deepEqual([claim!.spec.node, claim!.spec.podUID, claim!.spec.containerID], ['node-b', again.uid, again.containerId]);
      // Garbage collection keeps it while the set wants db-1 ...
      await f.core.deleteNamespacedPod({ namespace: 'default', name: 'db-1', gracePeriodSeconds: 0 });
      assert.deepEqual((await serviceB.collector.collect()).release, []);
      // ... and releases it once the set is scaled to 1.
      await f.apps.replaceNamespacedStatefulSet({
        namespace: 'default',
        name: 'db',
        body: { ...set, metadata: { ...set.metadata, resourceVersion: undefined }, spec: { ...set.spec!, replicas: 1 } },
      });
      const plan = await serviceB.collector.collect();
      assert.deepEqual(
        plan.release.map((r) => r.reason),
        ['StatefulSet default/db has 1 replicas, below ordinal 1'],
      );
      await waitFor('the claim released', async () => (await f.claims()).length === 0);
    } finally {
      await serviceB.stop();
    }
  });

  it('CNI GC releases the allocations of the network whose attachment is not in cni.dev/valid-attachments', async () => {
    await f.pool('pool-gc', { subnet: '10.6.6.0/24', ips: ['10.6.6.10-10.6.6.30'] });
    const config = f.config('macvlan', { default_ipv4_ippool: ['pool-gc'], detect_ip_conflict: false });
    const pods = await Promise.all(['gc-1', 'gc-2', 'gc-3'].map((n) => f.pod(n)));
    for (const p of pods) assert.equal((await f.node.run('ADD', config, p)).code, 0);
    const gc = await f.node.runIpam('GC', {
      ...config,
      cniVersion: '1.1.0',
      'cni.dev/valid-attachments': [{ containerID: pods[1]!.containerId, ifname: 'eth0' }],
    });
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    await waitFor('two released', async () => (await f.claims()).length === 1);
    assert.deepEqual(
      (await f.claims()).map((c) => c.spec.podName),
      ['gc-2'],
    );
  });

  it('a pod the API server does not hold fails ADD with code 106 naming it', async () => {
    await f.pool('pool-cni', { subnet: '10.6.0.0/24', ips: ['10.6.0.10'] });
    const netns = f.node.podNetns();
    const out = await f.node.run('ADD', f.config('macvlan', { default_ipv4_ippool: ['pool-cni'] }), {
      namespace: 'default',
      name: 'ghost',
      containerId: 'ghost1',
      netns: netns.path,
    });
    assert.equal(out.json!.code, 106);
    assert.match(out.json!.msg, /pod default\/ghost/);
  });

  it('answers STATUS (CNI 1.1.0) once its informers have listed', async () => {
    const out = await f.node.runIpam('STATUS', { ...f.config('macvlan'), cniVersion: '1.1.0' });
    assert.equal(out.code, 0, out.stdout + out.stderr);
  });
});
