/**
 * Multi-Cluster Services in the lab end to end, on each dataplane (lab/src/topologies/services.yaml:
 * cart exported by B, which overlaps A, and by C, which does not; web by A): every imported service from
 * every pod at its ClusterSetIP through the lab's service proxy, each ready endpoint answering; an
 * endpoint gone unready leaves the rotation; a service exported late is reached; a peering removed
 * takes its endpoints with it. Figures (how long each took) are printed for BENCHMARKS.md, never
 * asserted as timings.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { run } from '../../src/kernel/command';
import { labUp, removePeering, writeServiceExports } from '../../lab/src/lab';
import { failureSummary, labTest } from '../../lab/src/lab-test';
import { defaultTopologyPath, nodeNetns, servicePort } from '../../lab/src/names';
import { readImports } from '../../lab/src/service-proxy';
import type { LabTopology } from '../../lab/src/topology';
import { requireRoot } from '../support/kernel';
import { checksByKind, inPod, labSuiteHooks } from '../support/lab-suite';

const runDir = `/run/strait/lab-test-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const servicesTopology = join(defaultTopologyPath, '..', 'services.yaml');
const dualStackTopology = join(defaultTopologyPath, '..', 'services-dual-stack.yaml');
const echoClient = join(__dirname, '..', '..', 'lab', 'src', 'echo-client.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<number> {
  const started = Date.now();
  while (!(await ok())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
  return Date.now() - started;
}

/** Who answers one connection from `pod` to `address` (a pod's name), or undefined. */
async function whoami(pod: string, address: string): Promise<string | undefined> {
  const out = await inPod(pod, [process.execPath, echoClient, 'whoami', address, String(servicePort), '1000']);
  return (JSON.parse(out || '{}') as { from?: string }).from;
}

const importOf = (cluster: string, key: string) => readImports(runDir, cluster).find((i) => `${i.namespace}/${i.name}` === key);
const proxyTable = (node: string) => run(['ip', 'netns', 'exec', nodeNetns(node), 'nft', 'list', 'table', 'inet', 'strait-lab-proxy']);

for (const dataplane of ['ebpf', 'kernel'] as const)
  describe(`lab: multi-cluster services end to end (real kernel, ${dataplane} dataplane)`, function () {
    requireRoot(this);
    this.timeout(240_000);
    labSuiteHooks(runDir, lines, say);

    it('every pod reaches every service it imports at its ClusterSetIP, over every ready endpoint; unready, late and unpeered endpoints follow', async () => {
      const topology = await labUp(servicesTopology, { runDir, dataplane, say });
      const outcome = await labTest(runDir, say);
      assert.equal(outcome.failed, 0, failureSummary(outcome));
      // A imports cart (B's two pods, C's one) and web (its own); B and C import web and their own cart: 2 services x 2 pods x 3 clusters.
      assert.equal(checksByKind(outcome.results).service, 12);
      const cartInA = importOf('cluster-a', 'default/cart')!;
      assert.deepEqual(cartInA.clusters, ['cluster-b', 'cluster-c']);
      const [address] = cartInA.ips;

      // C's endpoint goes unready: it leaves A's rotation.
      const unready = Date.now();
      writeServiceExports(topology, runDir, new Set(['c-w1-p']));
      await waitFor("C's endpoint out of A's proxy", () => !proxyTable('a-w1').includes('172.20.1.10'));
      const leftRotation = Date.now() - unready;
      for (let i = 0; i < 20; i++) assert.notEqual(await whoami('a-w1-p', address!), 'c-w1-p', 'an unready endpoint answered');

      // A service exported late by C is reached from A once it is imported.
      const late: LabTopology = {
        ...topology,
        services: [...topology.services, { name: 'late', namespace: 'default', cluster: 'cluster-c', pods: ['c-gw-p'] }],
      };
      const exported = Date.now();
      writeServiceExports(late, runDir, new Set(['c-w1-p']));
      await waitFor('late imported in A', () => (importOf('cluster-a', 'default/late')?.ips.length ?? 0) > 0);
      const lateAddress = importOf('cluster-a', 'default/late')!.ips[0]!;
      await waitFor('late answered from A', async () => (await whoami('a-w1-p', lateAddress)) === 'c-gw-p');
      const reachable = Date.now() - exported;

      // The peering A-C removed: A's cart keeps B's endpoints only, and nothing of C's is left in A's proxy.
      await removePeering(runDir, 'cluster-a', 'cluster-c');
      await waitFor("C's endpoints gone from A", () => {
        const cart = importOf('cluster-a', 'default/cart');
        return cart?.clusters.join() === 'cluster-b' && importOf('cluster-a', 'default/late') === undefined;
      });
      // The proxy follows the import within its 100 ms poll.
      await waitFor("C's endpoints gone from A's proxies", () => ['a-gw', 'a-w1'].every((node) => !proxyTable(node).includes('172.20.')));
      for (let i = 0; i < 10; i++) assert.match((await whoami('a-w1-p', address!)) ?? '', /^b-/);
      process.stdout.write(
        `      services (${dataplane}): an unready endpoint left A's rotation in ${leftRotation} ms; a service exported late answered from A in ${reachable} ms\n`,
      );
    });

    it('dual-stack (services-dual-stack.yaml): each imported service at a ClusterSetIP of each family, over the endpoints of that family', async () => {
      await labUp(dualStackTopology, { runDir, dataplane, say });
      const outcome = await labTest(runDir, say);
      assert.equal(outcome.failed, 0, failureSummary(outcome));
      const services = outcome.results.filter((r) => r.kind === 'service');
      assert.equal(services.length, 24, 'the 12 checks of services.yaml, in each family');
      assert.equal(services.filter((r) => r.address.includes(':')).length, 12);
    });
  });
