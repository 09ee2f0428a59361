/**
 * The lab on Kubernetes end to end on the real kernel: an API server per cluster, two controller
 * replicas each, every agent with --kubernetes. On both dataplanes: the same checks as the standalone
 * lab, what kubectl shows, a peering removed leaving no object and no datapath state of it. On eBPF
 * only, the control plane's failures: the controller leader killed (no packet lost), ten crashes in a row
 * of agents and controllers (no gateway moved: the programs answer the other candidates' probes), a
 * gateway node dying (they stop answering), an API server crashed and started again on its etcd; what
 * each dataplane does on a node's failure is the standalone lab's (lab.e2e.test.ts, on both), and the
 * fallback answers probes with the same program. On the fallback only, the second topology (CIDR
 * shapes: the IPAM's concern).
 * Figures are printed for BENCHMARKS.md.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { canonicalSpecText, specDigest } from '../../src/api/node-dataplane';
import { inspectNode } from '../../src/dataplane/ebpf/inspect';
import { formatIp } from '../../src/net/cidr';
import { loadKubeConfig } from '../../src/k8s/kubeconfig';
import { cleanupNodeDataplanes } from '../../src/dataplane/open';
import { run } from '../../src/kernel/command';
import { addressSeenFrom } from '../../lab/src/checks';
import { defaultNamespace } from '../../src/k8s/names';
import { kubeconfigPath } from '../../lab/src/control-plane';
import { labUp, nodePinRoot, removePeering, restartApiServer, savedTopology, uninstallStrait } from '../../lab/src/lab';
import { clusterViews, failureSummary, labTest } from '../../lab/src/lab-test';
import { defaultTopologyPath, nodeNetns } from '../../lab/src/names';
import { openLabState } from '../../lab/src/lab-state';
import { logsDir, stopProcess } from '../../lab/src/processes';
import { k8sTool } from '../../lab/src/k8s-tools';
import { requireRoot } from '../support/kernel';
import { checksByKind, labSuiteHooks, peersProgrammed, pingFor, pingUntil } from '../support/lab-suite';
import { crashChild } from '../support/supervised';
import { waitFor } from '../support/wait';

const runDir = `/run/strait/lab-k8s-test-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const distinctTopology = join(defaultTopologyPath, '..', 'distinct.yaml');
const ipv6UnderlayTopology = join(defaultTopologyPath, '..', 'ipv6-underlay.yaml');
/** kubectl 1.31 against a lab cluster's API server. */
const kubectl = (cluster: string, args: string[]) =>
  execFileSync(k8sTool('kubectl'), ['--kubeconfig', kubeconfigPath(runDir, cluster), ...args], {
    encoding: 'utf8',
    env: { HOME: runDir, PATH: process.env.PATH ?? '' },
  });
const names = (cluster: string, resource: string) =>
  kubectl(cluster, ['get', resource, '-o', 'jsonpath={.items[*].metadata.name}']).split(' ').filter(Boolean).sort();
const gatewayOf = async (cluster: string) => (await clusterViews(savedTopology(runDir), runDir))[cluster]!.spec.activeGateway.name;
const leaderOf = (cluster: string) =>
  kubectl(cluster, ['get', 'lease', 'strait-controller', '-n', defaultNamespace, '-o', 'jsonpath={.spec.holderIdentity}']);
/** A cluster's StraitGateway as its API server holds it: the gateway it names, and its generation (each spec write). */
const straitGateway = async (cluster: string) => {
  const object = (await loadKubeConfig({ file: kubeconfigPath(runDir, cluster) })
    .makeApiClient(CustomObjectsApi)
    .getClusterCustomObject({ group: 'strait.io', version: 'v1alpha1', plural: 'straitgateways', name: cluster })) as {
    metadata: { generation: number };
    spec: { activeGateway: { name: string } };
  };
  return { gateway: object.spec.activeGateway.name, generation: object.metadata.generation };
};
/** Whether the lab process `name`'s child `pid` logged a spec applied (its first apply, after a restart). */
const appliedBy = (name: string, pid: number) =>
  readFileSync(join(logsDir(runDir), `${name}.log`), 'utf8')
    .split('\n')
    .some((line) => line.includes('"msg":"spec applied"') && line.includes(`"pid":${pid},`));

for (const dataplane of ['ebpf', 'kernel'] as const)
  describe(`lab on Kubernetes end to end (real kernel, ${dataplane} dataplane)`, function () {
    requireRoot(this);
    this.timeout(240_000);
    labSuiteHooks(runDir, lines, say);

    it('default topology: every check passes, kubectl shows the objects; a peering removed leaves no object and no datapath state of it', async () => {
      await labUp(defaultTopologyPath, { runDir, dataplane, controlPlane: 'kubernetes', say });
      const outcome = await labTest(runDir, say);
      assert.equal(outcome.failed, 0, failureSummary(outcome));
      assert.deepEqual(checksByKind(outcome.results), { peered: 88, intra: 30, hub: 8, 'not-peered': 1 });

      const table = kubectl('cluster-b', ['get', 'networkconfigs'])
        .trim()
        .split('\n')
        .map((l) => l.split(/\s{2,}/));
      assert.deepEqual(table[0], ['NAME', 'OWNER', 'FOR', 'PODCIDR', 'EXTERNALCIDR', 'PROCESSED', 'REMAPPED POD', 'AGE']);
      assert.deepEqual(
        table.slice(1).map((row) => row.slice(0, 7)),
        [
          ['cluster-a.cluster-b', 'cluster-a', 'cluster-b', '10.0.0.0/16', '10.200.0.0/24', 'true', '10.1.0.0/16'],
          ['cluster-c.cluster-b', 'cluster-c', 'cluster-b', '172.20.0.0/20', '10.210.0.0/25', 'true', 'None'],
        ],
      );
      const all = kubectl('cluster-b', ['get', 'networkconfigs,tunnelendpoints,natmappings,nodedataplanes', '-A']);
      for (const row of ['tunnelendpoint.strait.io/cluster-a', 'natmapping.strait.io/10.200.0.1', 'nodedataplane.strait.io/b-gw'])
        assert.ok(all.includes(row), `kubectl get shows ${row}:\n${all}`);
      // Whichever node's agent was Ready first leads (the start-up grace is one heartbeat timeout).
      const gatewayOfB = await gatewayOf('cluster-b');
      const rows = (resource: string) =>
        kubectl('cluster-b', ['get', resource, '--no-headers'])
          .trim()
          .split('\n')
          .map((l) => l.split(/\s+/));
      assert.deepEqual(
        rows('nodedataplanes').map(([name, cluster, , ready, shown]) => [name, cluster, ready, shown]),
        ['b-gw', 'b-w1'].map((n) => [n, 'cluster-b', 'true', dataplane]),
      );
      assert.deepEqual(
        rows('straitgateways').map((row) => row.slice(0, 2)),
        [['cluster-b', gatewayOfB]],
      );

      // End A-B: every object of it goes, in both API servers, and both datapaths forget it; B-C stays.
      await removePeering(runDir, 'cluster-a', 'cluster-b');
      for (const node of ['a-gw', 'a-w1']) await waitFor(`${node} to drop its peer`, () => peersProgrammed(dataplane, node) === 0, 20_000);
      for (const node of ['b-gw', 'b-w1']) await waitFor(`${node} to keep only C`, () => peersProgrammed(dataplane, node) === 1, 20_000);
      await waitFor(
        'the objects of A-B to be gone',
        () => names('cluster-a', 'networkconfigs').length === 0 && names('cluster-b', 'natmappings').length === 0,
        20_000,
      );
      assert.deepEqual(
        ['networkconfigs', 'tunnelendpoints', 'peernetworks', 'natmappings'].map((r) => [r, names('cluster-a', r), names('cluster-b', r)]),
        [
          ['networkconfigs', [], ['cluster-c.cluster-b']],
          ['tunnelendpoints', [], ['cluster-c']],
          ['peernetworks', [], ['cluster-c']],
          ['natmappings', [], []],
        ],
      );
      if (dataplane === 'ebpf')
        for (const node of ['a-gw', 'a-w1', 'b-gw']) assert.deepEqual(inspectNode(nodePinRoot(node)).natMappings, [], node);
      for (const node of ['a-gw', 'a-w1'])
        await waitFor(
          `${node} to keep no route of B`,
          () => run(['ip', '-n', nodeNetns(node), 'route', 'show', 'proto', '252']) === '',
          20_000,
        );
      const again = await labTest(runDir, say);
      assert.equal(again.failed, 0, failureSummary(again));
      assert.deepEqual(checksByKind(again.results), { peered: 44, intra: 30, 'not-peered': 1 }, 'only B-C is left');

      // helm uninstall of B while its pods talk: they go on talking (Strait leaves the cluster's own
      // network as it found it), its nodes keep nothing of Strait (the cleanup finds nothing left to
      // remove), its API server no strait.io object or CRD, and C's API server no offer of B.
      const pingStarted = Date.now();
      const intra = pingFor('b-w1-p', '10.0.0.10', 1_000); // b-gw-p, 10 s
      await sleep(500);
      const uninstallStarted = Date.now();
      await uninstallStrait(runDir, 'cluster-b');
      const uninstalled = Date.now();
      const during = await intra;
      process.stdout.write(
        `      helm uninstall of cluster-b: ${uninstalled - uninstallStarted} ms to the last agent stopped; intra-cluster ping ${during.received}/${during.transmitted} answered (longest gap ${during.longestGapMs} ms)\n`,
      );
      assert.ok(uninstalled - pingStarted < 9_000, 'the ping went on after the uninstall');
      assert.equal(during.received, during.transmitted, 'no intra-cluster packet lost while Strait was uninstalled');
      for (const node of ['b-gw', 'b-w1']) {
        assert.equal(existsSync(nodePinRoot(node)), false, `${node}: no pin left`);
        const left = cleanupNodeDataplanes(nodePinRoot(node), nodeNetns(node));
        assert.deepEqual(
          { ...left, pinRoot: undefined },
          {
            pinRoot: undefined,
            detached: [],
            overlayDeviceRemoved: false,
            routesRemoved: [],
            kernel: { rules: 0, routes: 0, devices: [], xfrm: 0, nat: false },
          },
          `${node}: Strait left something the cleanup removed`,
        );
      }
      assert.deepEqual(
        kubectl('cluster-b', ['get', 'crds', '-o', 'name'])
          .split('\n')
          .filter((l) => l.includes('strait.io')),
        [],
      );
      await waitFor('C to hold no offer of B', () => !names('cluster-c', 'networkconfigs').includes('cluster-b.cluster-c'), 20_000);
    });

    if (dataplane === 'kernel')
      it('second topology (no shared CIDR, /12 to /26, hub ExternalCIDR inside a spoke PodCIDR): every check passes', async () => {
        await labUp(distinctTopology, { runDir, dataplane, controlPlane: 'kubernetes', say });
        const outcome = await labTest(runDir, say);
        assert.equal(outcome.failed, 0, failureSummary(outcome));
        assert.deepEqual(checksByKind(outcome.results), { peered: 88, intra: 30, hub: 8, 'not-peered': 2 });
      });

    it('families mixed (IPv4-first dual-stack, IPv6-only, IPv6-first dual-stack) over an IPv6 underlay: every check passes, the objects say each family in its place', async () => {
      // ipv6-mixed.yaml's clusters with IPv6 Node InternalIPs and public-address annotations alone (issue 29).
      const topology = await labUp(ipv6UnderlayTopology, { runDir, dataplane, controlPlane: 'kubernetes', say });
      const outcome = await labTest(runDir, say);
      assert.equal(outcome.failed, 0, failureSummary(outcome));
      // The controllers took each Node's IPv6 InternalIP as its underlay, and the gateways' IPv6 public
      // addresses (annotations) as the tunnels' ends.
      const nodesOf = (cluster: string) => topology.clusters.find((c) => c.id === cluster)!.nodes;
      const underlays = kubectl('cluster-a', ['get', 'nodedataplanes', '-A', '-o', 'jsonpath={.items[*].spec.node.underlayAddress}']);
      assert.deepEqual(
        underlays.split(' ').sort(),
        nodesOf('cluster-a')
          .map((n) => n.underlayAddress)
          .sort(),
      );
      const ends = kubectl('cluster-a', ['get', 'tunnelendpoints', '-o', 'jsonpath={.items[*].spec.endpoint.address}']).split(' ');
      const publicOfPeers = [...nodesOf('cluster-b'), ...nodesOf('cluster-c')].map((n) => n.publicAddress);
      assert.ok(
        ends.length === 2 && ends.every((e) => publicOfPeers.includes(e)),
        `A's tunnels end at B's and C's IPv6 gateways: ${ends.join(', ')}`,
      );
      // A's answer to B's (IPv6-only) offer is about B's own networks; B's answer to A's offer is about A's
      // secondary (IPv6) networks alone: B has nothing to say of A's IPv4 ones.
      const status = (cluster: string, name: string) =>
        JSON.parse(kubectl(cluster, ['get', 'networkconfig', name, '-o', 'jsonpath={.status}'])) as Record<string, unknown>;
      assert.equal((status('cluster-a', 'cluster-b.cluster-a').observed as { podCIDR: string }).podCIDR, 'fd00:a::/56');
      const bAnswer = status('cluster-b', 'cluster-a.cluster-b');
      assert.deepEqual(
        [bAnswer.observed, (bAnswer.secondary as { observed: { podCIDR: string } }).observed.podCIDR],
        [undefined, 'fd00:a::/48'],
      );
      // A's PeerNetworks of B holds B's IPv6 networks as its own (the peering's first family).
      assert.equal(kubectl('cluster-a', ['get', 'peernetworks', 'cluster-b', '-o', 'jsonpath={.spec.podCIDR}']), 'fd00:a::/56');
    });

    if (dataplane === 'ebpf')
      it('the controller leader killed loses no packet and the standby leads within a lease; ten crashes in a row of agents and controllers move no gateway and lose no packet; a dead gateway node fails over within 0.45 s; a crashed API server started again serves what etcd kept', async () => {
        const topology = await labUp(defaultTopologyPath, { runDir, dataplane, controlPlane: 'kubernetes', say });
        const views = await clusterViews(topology, runDir);

        // 1. A's controller leader dies (SIGKILL, with its supervisor: no release, no restart). The standby takes
        //    the Lease once it expires (4 s, checked every 0.5 s) and rewrites nothing: the datapath never notices.
        const leader = leaderOf('cluster-a');
        assert.match(leader, /^controller-cluster-a-[01]$/);
        const standby = leader.endsWith('-0') ? 'controller-cluster-a-1' : 'controller-cluster-a-0';
        const target = addressSeenFrom(topology, views, 'cluster-a', 'cluster-b', '10.0.1.10'); // b-w1-p as A sees it
        const ping = pingFor('a-w1-p', target, 700);
        await sleep(500);
        const killed = Date.now();
        await stopProcess(runDir, leader, 0);
        await waitFor(`${standby} to lead`, () => leaderOf('cluster-a') === standby, 4_000 + 2 * 500 + 1_000);
        const took = Date.now() - killed;
        const pinged = await ping;
        process.stdout.write(
          `      controller leader killed: ${standby} led after ${took} ms; ping ${pinged.received}/${pinged.transmitted} answered (longest gap ${pinged.longestGapMs} ms)\n`,
        );
        assert.equal(pinged.received, pinged.transmitted, 'no packet lost while the controller changed leader');

        const nodesOfA = topology.clusters[0]!.nodes;
        const first = nodesOfA.find((n) => n.name === views['cluster-a']!.spec.activeGateway.name)!;
        const second = nodesOfA.find((n) => n !== first)!;
        const podOnSecond = addressSeenFrom(topology, views, 'cluster-b', 'cluster-a', second.pods[0]!.ip); // as B sees it

        // 2. Ten crashes in a row (SIGKILL of a child; its supervisor starts it again after 1 s, 2 s for a
        //    second crash within 10 s, as a kubelet would): A's gateway's agent first, then the other agents
        //    on the path and B's two controller replicas. No Lease, no heartbeat of their own: the programs
        //    go on forwarding and answering the other candidates' probes, so no gateway moves, through each
        //    restart and each new agent's first apply, and B's traffic through A's gateway loses nothing.
        const agentOfFirst = `agent-${first.name}`;
        const gatewayOfB = views['cluster-b']!.spec.activeGateway.name;
        const otherOfB = topology.clusters[1]!.nodes.find((n) => n.name !== gatewayOfB)!.name;
        const crashedProcesses = [
          agentOfFirst,
          `agent-${gatewayOfB}`,
          'controller-cluster-b-0',
          `agent-${second.name}`,
          `agent-${otherOfB}`,
          'controller-cluster-b-1',
        ];
        const crashes = Array.from({ length: 10 }, (_, i) => crashedProcesses[i % crashedProcesses.length]!);
        const before = await straitGateway('cluster-a');
        const beforeB = await straitGateway('cluster-b');
        assert.equal(before.gateway, first.name);
        const gatewaysSeen = new Set<string>();
        let appliedInMs = 0;
        const restartedAndApplied = (async () => {
          await sleep(500);
          const crashedAt = Date.now();
          for (const name of crashes) {
            const { restarted } = await crashChild(runDir, name);
            if (name.startsWith('agent-'))
              await waitFor(`the restarted ${name} to apply its spec`, () => appliedBy(name, restarted), 20_000);
          }
          appliedInMs = Date.now() - crashedAt;
          await sleep(2_000); // and what a move would take after it (reported probes, a reconcile, the applies)
        })();
        let watching = true;
        const watched = (async () => {
          while (watching) {
            gatewaysSeen.add((await straitGateway('cluster-a')).gateway);
            await sleep(100);
          }
        })();
        const through = await pingUntil('b-w1-p', podOnSecond, restartedAndApplied, 0.01);
        await restartedAndApplied;
        watching = false;
        await watched;
        const after = await straitGateway('cluster-a');
        gatewaysSeen.add(after.gateway);
        process.stdout.write(
          `      ${crashes.length} crashes in a row (agents and controllers): the last restarted and applied ${appliedInMs} ms after the first crash; gateways seen ${[...gatewaysSeen].join(',')}; ping ${through.received}/${through.transmitted} answered (longest gap ${through.longestGapMs} ms)\n`,
        );
        assert.deepEqual([...gatewaysSeen], [first.name], 'no gateway moved while the agent was down and restarting');
        assert.equal(after.generation, before.generation, 'the StraitGateway was not written at all');
        assert.deepEqual(await straitGateway('cluster-b'), beforeB, "nor was B's");
        assert.equal(
          through.received,
          through.transmitted,
          'no packet lost through the gateway while the agents and controllers restarted',
        );

        // 3. A's gateway node dies: its agent is killed (with its supervisor) and its links go down at once. Its
        //    programs stop answering: the other candidate's probes see it down within 150 ms (50 ms × 3), that
        //    node takes the gateway role at once, reports its probes, and the controller elects it.
        const versionsOfB = () => kubectl('cluster-b', ['get', 'nodedataplanes', '-o', 'jsonpath={.items[*].metadata.resourceVersion}']);
        const bBefore = versionsOfB();
        const during = pingFor('b-w1-p', podOnSecond, 500);
        await sleep(1000);
        await stopProcess(runDir, `agent-${first.name}`, 0);
        for (const link of ['ul0', 'pub0']) run(['ip', '-n', nodeNetns(first.name), 'link', 'set', link, 'down']);
        const died = await during;
        assert.equal(await gatewayOf('cluster-a'), second.name, `A elected ${second.name}`);
        process.stdout.write(
          `      gateway node failure: ${died.transmitted - died.received} of ${died.transmitted} pings lost, longest gap ${died.longestGapMs} ms\n`,
        );
        // Seen down within 150 ms by the other candidate, which then forwards; B's gateway, which probes A's
        // candidates too, sends to the other as soon as it sees the same; the controller's record follows.
        // Measured 192-208 ms; the goal is 300 ms (docs/liveness.md), the bound leaves room for a loaded machine.
        assert.ok(died.longestGapMs <= 450, `a dead gateway cost at most 0.45 s without replies; it cost ${died.longestGapMs} ms`);
        // Every node of B runs the move (A's gateway is one write, B's StraitGateway), and none of them wrote
        // for it: a status names the NodeDataplane's own part, so a peer's gateway move costs B no write.
        const clusterB = topology.clusters.find((c) => c.id === 'cluster-b')!;
        const labState = await openLabState(runDir, topology);
        try {
          await waitFor(
            "every node of B running A's new gateway",
            async () =>
              [...(await labState.read(clusterB)).nodes.values()].every(
                ({ spec, running }) =>
                  spec !== undefined &&
                  formatIp(spec.peers.find((p) => p.clusterId === 'cluster-a')!.endpoint.address) === second.publicAddress &&
                  running === specDigest(canonicalSpecText(spec)),
              ),
            5_000,
          );
        } finally {
          await labState.close();
        }
        assert.equal(versionsOfB(), bBefore, "no NodeDataplane of B written for A's gateway move");

        // 4. B's API server crashes (SIGKILL) and the lab starts it again on the same port, etcd, certificate
        //    and signing key: it serves the objects etcd kept (the same uids), and the controllers carry on
        //    through it (their Lease, the only one, renewed after the restart: their tokens still good).
        //    Traffic from A to B never needed B's API server.
        const objects = () => kubectl('cluster-b', ['get', 'nodedataplanes,networkconfigs', '-o', 'jsonpath={.items[*].metadata.uid}']);
        const leases = () =>
          kubectl('cluster-b', ['get', 'leases', '-n', defaultNamespace, '-o', 'jsonpath={.items[*].metadata.resourceVersion}'])
            .split(' ')
            .map(Number);
        const uids = objects();
        // From the surviving node of A (the dead one's pod went with it).
        const across = pingFor(second.pods[0]!.name, target, 300);
        const crashed = Date.now();
        await restartApiServer(runDir, 'cluster-b');
        const restartedIn = Date.now() - crashed;
        const since = Number(kubectl('cluster-b', ['get', 'leases', '-n', defaultNamespace, '-o', 'jsonpath={.metadata.resourceVersion}']));
        assert.equal(objects(), uids);
        assert.deepEqual(
          kubectl('cluster-b', ['get', 'leases', '-n', defaultNamespace, '-o', 'jsonpath={.items[*].metadata.name}']),
          'strait-controller',
          'no Lease but the controllers',
        );
        await waitFor('the Lease of B renewed through the restarted API server', () => leases().every((v) => v > since), 5_000);
        const crossed = await across;
        process.stdout.write(
          `      API server of B restarted in ${restartedIn} ms; the Lease renewed ${Date.now() - crashed} ms after the crash; ping A to B ${crossed.received}/${crossed.transmitted}\n`,
        );
        assert.equal(crossed.received, crossed.transmitted, "traffic from A to B never needed B's API server");
      });
  });
