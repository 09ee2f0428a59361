/**
 * The pool IPAM service killed (SIGKILL) at random points of 500 CNI ADDs and DELs, and restarted: the
 * runtime's side is played as CNI asks it (a failed ADD is followed by DEL; a failed DEL is retried), and
 * after the last restart and one CNI GC no address is given twice and none is held by nobody.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { apiVersion, group, version } from '../../src/api/resource';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { requireRoot, uniqueName } from '../support/kernel';
import { prng } from '../support/prng';
import { runStraitIpam } from '../cni/plugin-process';

const cli = resolve(__dirname, '..', '..', 'src', 'cli', 'main.js');
const operations = 500;
const inFlight = 4;

describe('the pool IPAM service killed at random points', function () {
  this.timeout(600_000);
  requireRoot(this);
  let api: TestApiServer;
  let service: ChildProcess | undefined;
  let netns: string;

  before(async () => {
    api = await startTestApiServer();
    netns = uniqueName('sipam-crash');
    createNetns(netns);
  });
  after(async () => {
    service?.kill('SIGKILL');
    deleteNetns(netns);
    await api.close();
  });

  it('500 ADD/DEL with SIGKILLs and restarts: after one GC, every live attachment holds its own address and nothing else is held', async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const socket = join(api.dir, 'ipam.sock');
    await core.createNode({ body: { metadata: { name: 'node-a' } } });
    await custom.createClusterCustomObject({ group, version, plural: 'ippools', body: { apiVersion, kind: 'IPPool', metadata: { name: 'crash' }, spec: { subnet: '10.9.0.0/24', ips: ['10.9.0.2-10.9.0.200'] } } });
    const config = { cniVersion: '1.1.0', name: 'underlay', ipam: { type: 'strait-ipam', socket, default_ipv4_ippool: ['crash'], detect_ip_conflict: false, detect_gateway: false } };
    const random = prng(1515);
    let stderr = '';
    const start = () => {
      service = spawn(process.execPath, [cli, 'pool-ipam', 'serve', '--kubeconfig', api.kubeconfigPath, '--node', 'node-a', '--socket', socket, '--gc-interval', '3600'], { stdio: ['ignore', 'ignore', 'pipe'] });
      service.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    };
    start();

    const env = (command: string, pod: string, containerId: string) => ({
      CNI_COMMAND: command,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: netnsPath(netns),
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
      CNI_PATH: '/usr/lib/cni',
    });
    /** DEL until it succeeds, as a runtime retries it. */
    const del = async (pod: string, containerId: string) => {
      for (let attempt = 0; ; attempt++) {
        const out = await runStraitIpam(env('DEL', pod, containerId), config);
        if (out.status === 0) return;
        if (attempt > 1200) throw new Error(`DEL of ${containerId} never succeeded: ${out.stdout}; the service said: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    const live = new Map<string, { pod: string; address: string }>();
    let kills = 0;
    let failedAdds = 0;
    let stop = false;
    /** Until the service answers STATUS ready (a restart takes a second or two: node, then the informers' lists). */
    const ready = async () => {
      for (let i = 0; ; i++) {
        const status = await runStraitIpam({ CNI_COMMAND: 'STATUS', CNI_PATH: '/usr/lib/cni' }, config);
        if (status.status === 0) return;
        if (i > 600) throw new Error(`the service never became ready: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    // Each incarnation serves for a random while, then dies in the middle of whatever it is doing.
    const killer = (async () => {
      while (!stop) {
        await ready();
        await new Promise((r) => setTimeout(r, 800 + Math.floor(random() * 3000)));
        if (stop) break;
        service!.kill('SIGKILL');
        await new Promise((r) => service!.once('exit', r));
        kills++;
        start();
      }
    })();

    let next = 0;
    const worker = async () => {
      while (next < operations) {
        const i = next++;
        const attached = [...live.keys()];
        if (attached.length > 0 && (random() < 0.35 || attached.length > 150)) {
          const containerId = attached[Math.floor(random() * attached.length)]!;
          const { pod } = live.get(containerId)!;
          live.delete(containerId);
          await del(pod, containerId);
          await core.deleteNamespacedPod({ namespace: 'default', name: pod, gracePeriodSeconds: 0 });
          continue;
        }
        const pod = `crash-${i}`;
        const containerId = `ctr-${i}`;
        await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: pod }, spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'i' }] } } });
        const out = await runStraitIpam(env('ADD', pod, containerId), config);
        if (out.status === 0) {
          live.set(containerId, { pod, address: (JSON.parse(out.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! });
        } else {
          // CNI: a failed ADD is cleaned up with DEL.
          failedAdds++;
          await del(pod, containerId);
          await core.deleteNamespacedPod({ namespace: 'default', name: pod, gracePeriodSeconds: 0 });
        }
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    stop = true;
    await killer;

    assert.ok(kills >= 5, `only ${kills} kills: the test did not test restarts`);
    assert.ok(failedAdds > 0, 'no ADD failed: no kill landed in the middle of one');
    const addresses = [...live.values()].map((l) => l.address);
    assert.equal(new Set(addresses).size, addresses.length, 'an address was given twice');
    const held = async () => {
      const claims = ((await custom.listClusterCustomObject({ group, version, plural: 'ipclaims' })) as { items: { spec: { address: string; containerID?: string } }[] }).items;
      return claims.map((c) => [c.spec.containerID ?? '', c.spec.address]).sort();
    };
    const liveHeld = [...live.entries()].map(([containerId, l]) => [containerId, l.address]);

    // The last incarnation up. An attachment the runtime then loses (its own crash: no DEL ever comes).
    await ready();
    await core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'forgotten' }, spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'i' }] } } });
    const forgotten = await runStraitIpam(env('ADD', 'forgotten', 'ctr-forgotten'), config);
    assert.equal(forgotten.status, 0, forgotten.stdout);
    const forgottenAddress = (JSON.parse(forgotten.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    // DEL alone (every failed ADD was DELeted, as CNI asks) left exactly the live attachments, and the lost one.
    assert.deepEqual(await held(), [...liveHeld, ['ctr-forgotten', forgottenAddress]].sort(), `claims differ from the live attachments after ${kills} kills and ${failedAdds} failed ADDs, before GC`);
    // One GC with what the runtime holds releases the lost one and nothing else.
    const gc = await runStraitIpam({ CNI_COMMAND: 'GC', CNI_PATH: '/usr/lib/cni' }, { ...config, 'cni.dev/valid-attachments': [...live.keys()].map((containerID) => ({ containerID, ifname: 'eth0' })) });
    assert.equal(gc.status, 0, gc.stdout);
    assert.deepEqual(await held(), liveHeld.sort(), 'claims differ from the live attachments after GC');
    process.stdout.write(`      ${operations} operations, ${kills} kills, ${failedAdds} ADDs failed and were deleted, ${live.size} attachments live\n`);
  });
});
