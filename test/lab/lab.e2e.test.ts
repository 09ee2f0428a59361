/**
 * The lab end to end on the real kernel with the eBPF dataplane: both topologies up, traffic checked,
 * down; an agent restart under load; a gateway failover; a peering removed; nothing left behind.
 * Figures (lost packets, failover window) are printed for BENCHMARKS.md, never asserted as timings.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeNodeDataplaneSpec } from '../../src/api/node-dataplane';
import { inspectNode } from '../../src/dataplane/ebpf/inspect';
import { formatIp } from '../../src/net/cidr';
import { run } from '../../src/kernel/command';
import { addressSeenFrom } from '../../lab/src/checks';
import { labUp, nodePinRoot, removePeering, startAgent, startStandaloneController } from '../../lab/src/lab';
import { runDirPaths } from '../../src/api/run-dir';
import type { ControllerConfigDocument } from '../../src/api/controller-config';
import { clusterViews, failureSummary, labStatus, labTest } from '../../lab/src/lab-test';
import { defaultTopologyPath, echoPort, nodeNetns } from '../../lab/src/names';
import { knownProcesses, logsDir, stopProcess } from '../../lab/src/processes';
import { buildNextRelease } from '../support/next-build';
import { requireRoot } from '../support/kernel';
import {
  checksByKind,
  gatewayOf,
  heartbeatOf,
  inPod,
  labSuiteHooks,
  nonStrictReversePath,
  peersProgrammed,
  pingFor,
  pingUntil,
  podVethOf,
  restartAgent,
} from '../support/lab-suite';

const runDir = `/run/strait/lab-test-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const distinctTopology = join(defaultTopologyPath, '..', 'distinct.yaml');
const jumboTopology = join(defaultTopologyPath, '..', 'jumbo.yaml');
const dualStackTopology = join(defaultTopologyPath, '..', 'dual-stack.yaml');
const ipv6UnderlayTopology = join(defaultTopologyPath, '..', 'ipv6-underlay.yaml');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<number> {
  const started = Date.now();
  while (!ok()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
  return Date.now() - started;
}

for (const dataplane of ['ebpf', 'kernel'] as const)
  describe(`lab end to end (real kernel, ${dataplane} dataplane)`, function () {
    requireRoot(this);
    this.timeout(240_000);
    labSuiteHooks(runDir, lines, say);

    it('default topology: every peered pair both ways, the path MTU, pods of a cluster, the hub path, unpeered clusters blocked; then a peering removed leaves nothing', async () => {
      const topology = await labUp(defaultTopologyPath, { runDir, dataplane, say });
      // Strait's tunnel devices exist once the lab is up: they, too, filter strictly (docs/lab.md).
      assert.deepEqual(
        nonStrictReversePath(topology.clusters.flatMap((c) => c.nodes.map((n) => n.name))),
        [],
        'every interface of every node filters reverse paths strictly',
      );
      const outcome = await labTest(runDir, say);
      const { results, failed } = outcome;
      assert.equal(failed, 0, failureSummary(outcome));
      // Two peerings of 2x2 pods both ways with 5 probes each, and the 2 path MTU probes each way; 2
      // ordered pairs of nodes in each of the 3 clusters with 5; 2 pods of A through the hub with 4; one
      // unpeered pair (C -> A is left out: every pod address of A is a pod of B in C's view).
      assert.deepEqual(checksByKind(results), { peered: 88, intra: 30, hub: 8, 'not-peered': 1 });
      assert.deepEqual(
        outcome.fragments?.during.map((d) => d.wire),
        ['cluster-a <-> cluster-b', 'cluster-b <-> cluster-c', 'underlay cluster-a', 'underlay cluster-b', 'underlay cluster-c'],
      );
      assert.ok(
        results.some((r) => r.kind === 'hub' && r.probe === 'udp' && r.detail === `reply from ${r.address}`),
        'the hub reply comes from the address dialled',
      );
      const status = await labStatus(runDir);
      for (const c of status.clusters) {
        assert.ok(
          c.nodes.some((n) => n.name === c.gateway),
          `${c.id} has a gateway among its nodes`,
        );
        assert.ok(
          c.nodes.every((n) => n.ready),
          `${c.id}: every node is Ready`,
        );
      }
      if (dataplane === 'ebpf') {
        const hubGateway = status.clusters[1]!.nodes.find((n) => n.name === status.clusters[1]!.gateway)!;
        assert.ok(
          hubGateway.peers.length === 2 && hubGateway.peers.every((p) => p.txPackets > 0 && p.rxPackets > 0),
          'the hub gateway counted traffic for both peers',
        );
      }

      // End A-B: A's nodes and B's nodes keep nothing of each other (maps, kernel routes); B-C still works.
      const bSeenFromA = writeNodeDataplaneSpec((await clusterViews(topology, runDir))['cluster-a']!.spec).peers[0]!;
      const reflected = (await clusterViews(topology, runDir))['cluster-b']!.spec.natMappings.map((m) => formatIp(m.externalAddress));
      assert.equal(reflected.length, 1);
      await removePeering(runDir, 'cluster-a', 'cluster-b');
      for (const node of ['a-gw', 'a-w1']) {
        await waitFor(`${node} to drop its peer`, () => peersProgrammed(dataplane, node) === 0);
        if (dataplane === 'ebpf') {
          const report = inspectNode(nodePinRoot(node));
          assert.deepEqual([report.strayRoutes, report.natMappings], [[], []], node);
        } else {
          // One apply removes rules, routes, tunnel and NAT in turn: wait until all of it is gone.
          const leftovers = () => {
            const table = run(['ip', '-n', nodeNetns(node), 'route', 'show', 'table', '18952']);
            const nft = run(['ip', 'netns', 'exec', nodeNetns(node), 'nft', 'list', 'ruleset']);
            return [
              ...(table.includes(bSeenFromA.remotePodCIDR) || table.includes(' stp') ? [`table 18952:\n${table}`] : []),
              ...(run(['ip', '-n', nodeNetns(node), 'link']).includes(' stp') ? ['a tunnel device'] : []),
              ...(nft.includes(bSeenFromA.remotePodCIDR.split('/')[0]!) || nft.includes('stp') ? [`nftables:\n${nft}`] : []),
            ];
          };
          await waitFor(`${node} to keep nothing of B`, () => leftovers().length === 0).catch(() =>
            assert.deepEqual(leftovers(), [], node),
          );
        }
        // The maps change before the routes in one apply: wait for the routes too.
        await waitFor(`${node} to keep no route of B`, () => run(['ip', '-n', nodeNetns(node), 'route', 'show', 'proto', '252']) === '');
        assert.ok(!run(['ip', '-n', nodeNetns(node), 'route']).includes(bSeenFromA.remotePodCIDR));
      }
      for (const node of ['b-gw', 'b-w1']) {
        await waitFor(`${node} to keep only C`, () => peersProgrammed(dataplane, node) === 1);
        if (dataplane === 'ebpf')
          assert.deepEqual(inspectNode(nodePinRoot(node)).natMappings, [], 'the reflection through the removed peering is gone');
        else
          await waitFor(
            `${node}: the reflection through the removed peering to be gone`,
            () => !run(['ip', 'netns', 'exec', nodeNetns(node), 'nft', 'list', 'ruleset']).includes(reflected[0]!),
          );
      }
      const again = await labTest(runDir, say);
      assert.equal(again.failed, 0, failureSummary(again));
      assert.deepEqual(
        again.wire.map((w) => w.peering.join('-')),
        ['cluster-b-cluster-c'],
      );
      // A -> C stays blocked; A and B share a PodCIDR, so an unpeered check between them has no address.
      assert.deepEqual(checksByKind(again.results), { peered: 44, intra: 30, 'not-peered': 1 }, 'only B-C is left');
    });

    it('second topology (no shared CIDR, /12 to /26, hub ExternalCIDR inside a spoke PodCIDR): all checks pass', async () => {
      await labUp(distinctTopology, { runDir, dataplane, say });
      const outcome = await labTest(runDir, say);
      const { results, failed } = outcome;
      assert.equal(failed, 0, failureSummary(outcome));
      assert.deepEqual(checksByKind(results), { peered: 88, intra: 30, hub: 8, 'not-peered': 2 });
    });

    it('dual-stack topology (IPv6 PodCIDRs overlapping at /48, /56 and /64): every check passes in both families', async () => {
      const topology = await labUp(dualStackTopology, { runDir, dataplane, say });
      const outcome = await labTest(runDir, say);
      const { results, failed } = outcome;
      assert.equal(failed, 0, failureSummary(outcome));
      // The default lab's peered and intra checks in each family (no hub here), an unpeered pair in each.
      assert.deepEqual(checksByKind(results), { peered: 176, intra: 60, 'not-peered': 2 });
      const ipv6 = results.filter((r) => r.address.includes(':'));
      assert.deepEqual(
        [...new Set(ipv6.filter((r) => r.kind === 'peered').map((r) => r.probe))].sort(),
        ['frag', 'icmp', 'pmtu-icmp', 'pmtu-tcp', 'tcp', 'udp', 'unreach'],
        'every probe of IPv4 runs over IPv6 too',
      );
      // B sees C's /64 remapped into fd00::/8, host bits kept (C's pod fd00:a::1:0:0:a).
      const views = await clusterViews(topology, runDir);
      assert.equal(addressSeenFrom(topology, views, 'cluster-b', 'cluster-c', 'fd00:a::1:0:0:a'), 'fd00:0:1:1:1::a');
    });

    // ipv6-mixed.yaml's clusters over an IPv6 underlay (ipv6-underlay.yaml): IPv4 underlays with IPv6 pods are dual-stack.yaml's.
    it('families mixed (IPv4-first dual-stack, IPv6-only, IPv6-first dual-stack) over an IPv6 underlay: each peering carries the families both clusters have; a gateway node failure seen by probes over IPv6', async () => {
      const topology = await labUp(ipv6UnderlayTopology, { runDir, dataplane, say });
      const outcome = await labTest(runDir, say);
      const { results, failed } = outcome;
      assert.equal(failed, 0, failureSummary(outcome));
      const families = (from: string, to: string) =>
        [
          ...new Set(
            results.filter((r) => r.kind === 'peered' && r.from === from && r.to === to).map((r) => (r.address.includes(':') ? 6 : 4)),
          ),
        ].sort();
      assert.deepEqual(families('a-w1-p', 'b-w1-p'), [6], 'A-B: IPv6 only (B has no IPv4)');
      assert.deepEqual(families('b-w1-p', 'c-w1-p'), [6], 'B-C: IPv6 only');
      assert.deepEqual(families('c-w1-p', 'a-w1-p'), [4, 6], "A-C: both, A's primary being C's secondary");
      // B sees C's /64 remapped into fd00::/8, host bits kept; A sees C's IPv4 10.0.0.0/16 remapped too.
      const views = await clusterViews(topology, runDir);
      assert.match(addressSeenFrom(topology, views, 'cluster-b', 'cluster-c', 'fd00:a::1:0:0:a'), /^fd00:[0-9a-f:]+:a$/);
      assert.notEqual(addressSeenFrom(topology, views, 'cluster-a', 'cluster-c', '10.0.1.10'), '10.0.1.10');
      // Every tunnel B's gateway has toward its peers runs to an IPv6 end.
      const bGateway = gatewayOf(runDir, 'cluster-b');
      const endpoints =
        dataplane === 'ebpf'
          ? inspectNode(nodePinRoot(bGateway)).peers.map((p) => p.endpoint)
          : [...run(['ip', '-n', nodeNetns(bGateway), '-d', 'link']).matchAll(/remote (\S+) /g)].map((m) => m[1]!);
      assert.ok(endpoints.length === 2 && endpoints.every((e) => e.includes(':')), `B's tunnels run over IPv6: ${endpoints.join(', ')}`);

      // A's active gateway node dies (its agent killed with no grace, its links down, nobody says so): B's
      // gateway and A's other node see its datapath stop answering the probes over IPv6 and move on their own.
      const nodesOfA = topology.clusters[0]!.nodes;
      const dead = nodesOfA.find((n) => n.name === gatewayOf(runDir, 'cluster-a'))!;
      const survivor = nodesOfA.find((n) => n !== dead)!;
      // A's pod on the surviving node as B sees it: A-B carries IPv6 only, A's secondary family.
      const podOfSurvivor = addressSeenFrom(topology, views, 'cluster-b', 'cluster-a', survivor.pods[0]!.secondaryIp!);
      const pinging = pingFor('b-w1-p', podOfSurvivor, 600);
      await sleep(1000);
      await stopProcess(runDir, `agent-${dead.name}`, 0);
      for (const link of ['ul0', 'pub0']) run(['ip', '-n', nodeNetns(dead.name), 'link', 'set', link, 'down']);
      const pinged = await pinging;
      process.stdout.write(
        `      gateway node failure over an IPv6 underlay: ${pinged.transmitted - pinged.received} of ${pinged.transmitted} pings lost, longest gap ${pinged.longestGapMs} ms (probes 50 ms × 3)\n`,
      );
      // The bound of the IPv4 lab's node failure (docs/liveness.md): detection in 3 to 4 probe intervals.
      assert.ok(pinged.longestGapMs <= 450, `the dead gateway cost at most 0.45 s without replies; it cost ${pinged.longestGapMs} ms`);
      await waitFor(`A to elect ${survivor.name}`, () => gatewayOf(runDir, 'cluster-a') === survivor.name);
      const recovered = await pingFor('b-w1-p', podOfSurvivor, 50);
      assert.equal(recovered.received, recovered.transmitted, 'traffic flows through the surviving gateway');
    });

    it('jumbo topology (every link MTU 9000): all checks pass, the path MTU ones at 9000 bytes', async () => {
      await labUp(jumboTopology, { runDir, dataplane, say });
      const mtu = (ns: string, dev: string) => (JSON.parse(run(['ip', '-n', ns, '-j', 'link', 'show', dev])) as { mtu: number }[])[0]!.mtu;
      assert.deepEqual(
        [
          mtu('sl-a-w1', 'ul0'),
          mtu('sl-a-w1', 'pub0'),
          mtu('sl-a-w1', podVethOf('a-w1', 'a-w1-p')),
          mtu('sl-a-w1-p', 'eth0'),
          mtu('sl-pub', 'br0'),
          mtu('sl-cluster-b-sw', 'br0'),
        ],
        [9000, 9000, 9000, 9000, 9000, 9000],
      );
      const outcome = await labTest(runDir, say);
      const { results, failed } = outcome;
      assert.equal(failed, 0, failureSummary(outcome));
      // One peering of 2x2 pods both ways with 5 probes, and the 2 path MTU probes each way; 2 ordered
      // pairs of nodes in each of the 2 clusters with 5.
      assert.deepEqual(checksByKind(results), { peered: 44, intra: 20 });
      assert.ok(results.filter((r) => r.probe === 'pmtu-icmp').every((r) => r.mtu === 9000));
    });

    it('agent restarts under a continuous ping and a TCP stream lose nothing; a gateway failover moves traffic', async () => {
      const topology = await labUp(defaultTopologyPath, { runDir, dataplane, say });
      const views = await clusterViews(topology, runDir);
      const target = addressSeenFrom(topology, views, 'cluster-a', 'cluster-b', '10.0.1.10'); // b-w1-p as A sees it

      // 1. Restart the agents on the path ten times (both gateways and both workers in turn) while traffic flows.
      const gatewaysBefore = [gatewayOf(runDir, 'cluster-a'), gatewayOf(runDir, 'cluster-b')];
      const restarts = Array.from({ length: 10 }, (_, i) => ['a-w1', 'a-gw', 'b-gw', 'b-w1'][i % 4]!);
      // 1,000 pings 10 ms apart and a stream as long: 10 s, about three times what ten restarts take.
      let trafficEnded = false;
      const ping = pingFor('a-w1-p', target, 1000);
      const stream = inPod('a-w1-p', [
        process.execPath,
        join(__dirname, '..', '..', 'lab', 'src', 'echo-client.js'),
        'stream',
        target,
        String(echoPort),
        '10000',
      ]);
      void Promise.race([ping, stream]).then(() => {
        trafficEnded = true;
      });
      await sleep(500);
      const restartsStarted = Date.now();
      for (const node of restarts) await restartAgent(runDir, topology, node, dataplane);
      const restartsMs = Date.now() - restartsStarted;
      assert.ok(
        !trafficEnded,
        `the ping and the stream still ran when the tenth restarted agent was Ready (after ${restartsMs} ms): they covered every restart`,
      );
      const pinged = await ping;
      const streamed = JSON.parse(await stream) as { ok: boolean; sent: number; echoed: number; error?: string };
      process.stdout.write(
        `      ${restarts.length} agent restarts in ${restartsMs} ms: ping ${pinged.received}/${pinged.transmitted} answered (longest gap ${pinged.longestGapMs} ms); TCP stream ${streamed.echoed}/${streamed.sent} bytes echoed\n`,
      );
      // A restart slower than its stopping agent's grace (validFor 5 s) is a node failure to the controller (a failover, with
      // its loss): say so rather than blame the datapath.
      assert.deepEqual(
        [gatewayOf(runDir, 'cluster-a'), gatewayOf(runDir, 'cluster-b')],
        gatewaysBefore,
        "no gateway changed: every restart came within its stopping agent's grace (validFor 5 s)",
      );
      // Docs (BENCHMARKS.md, README): a restart loses no packet, on either dataplane.
      assert.equal(pinged.received, pinged.transmitted, 'no ping lost across ten agent restarts');
      assert.ok(streamed.ok, `the TCP stream survived: ${JSON.stringify(streamed)}`);

      // 1b. Ten crashes in a row: the agents on the path and both controllers SIGKILLed (no last heartbeat,
      //     no clean stop) and started again after 0, 1, 5 or 10 s, as a kubelet would or later. The
      //     programs go on forwarding and answering the probes, so no gateway moves and no ping is lost.
      const delays = [0, 1000, 5000, 10_000];
      const crashed10 = [
        `agent-${gatewaysBefore[0]}`,
        `agent-${gatewaysBefore[1]}`,
        'controller-cluster-a',
        'controller-cluster-b',
        'agent-a-w1',
        'agent-b-w1',
      ];
      const crashes = Array.from({ length: 10 }, (_, i): [string, number] => [
        crashed10[i % crashed10.length]!,
        delays[i % delays.length]!,
      ]);
      const crashedNodes = crashed10.filter((n) => n.startsWith('agent-')).map((n) => n.slice('agent-'.length));
      // The ping starts first: the first crash comes half a second into it.
      const crashing = (async () => {
        await sleep(500);
        const started = Date.now();
        for (const [name, afterMs] of crashes) {
          await stopProcess(runDir, name, 0);
          await sleep(afterMs);
          if (name.startsWith('agent-')) startAgent(topology, runDir, name.slice('agent-'.length), dataplane);
          else {
            const cluster = name.slice('controller-'.length);
            const config = JSON.parse(
              readFileSync(join(runDir, runDirPaths.controllerConfig(cluster)), 'utf8'),
            ) as ControllerConfigDocument;
            startStandaloneController(topology, runDir, cluster, config);
          }
        }
        await waitFor('the crashed agents Ready again', () =>
          crashedNodes.every((node) => heartbeatOf(runDir, node.startsWith('a-') ? 'cluster-a' : 'cluster-b', node).ready),
        );
        return Date.now() - started;
      })();
      // From half a second before the first crash until a second after the last agent is Ready again.
      const crashPing = pingUntil('a-w1-p', target, crashing, 0.01);
      const crashesMs = await crashing;
      const crashed = await crashPing;
      process.stdout.write(
        `      ${crashes.length} crashes in a row relaunched after 0, 1, 5, 10 s (${crashesMs} ms): ping ${crashed.received}/${crashed.transmitted} answered (longest gap ${crashed.longestGapMs} ms)\n`,
      );
      assert.deepEqual([gatewayOf(runDir, 'cluster-a'), gatewayOf(runDir, 'cluster-b')], gatewaysBefore, 'no gateway moved');
      assert.equal(crashed.received, crashed.transmitted, 'no ping lost across the crashes');

      // 1c. An upgrade to a release whose map layouts changed (a field appended to strait_peer, which the spec
      //     fills, and to the transit SNAT entry, which holds state: test/support/next-build.ts), agent by agent
      //     along both paths as a DaemonSet rolls, then back, under a ping and two TCP streams, peered and
      //     through the hub: each map of another layout is set aside, its state carried over and the spec's
      //     written before the programs are swapped, so nothing is lost and the hub's SNAT flows go on.
      const next = buildNextRelease();
      const hubTarget = views['cluster-b']!.reflections.find((r) => r.to === 'cluster-a')!.address;
      const rolled = ['a-w1', 'a-gw', 'b-gw', 'b-w1', 'c-gw', 'c-w1'];
      const streamFor = (address: string) =>
        inPod('a-w1-p', [
          process.execPath,
          join(__dirname, '..', '..', 'lab', 'src', 'echo-client.js'),
          'stream',
          address,
          String(echoPort),
          '15000',
        ]).then((out) => JSON.parse(out) as { ok: boolean; sent: number; echoed: number; error?: string });
      let upgradeTrafficEnded = false;
      const upgradePing = pingFor('a-w1-p', target, 1500);
      const streams = [streamFor(target), streamFor(hubTarget)];
      void Promise.race([upgradePing, ...streams]).then(() => {
        upgradeTrafficEnded = true;
      });
      // On eBPF the hub's reverse packets need its SNAT state: a lost entry drops them as TransitState. The
      // roll starts once the hub stream holds its SNAT flow, both ways (a loaded machine starts the client late).
      // The hub is B's active gateway (either node: the election picks it; a fixed b-gw was the old flake's cause).
      const hub = gatewaysBefore[1]!;
      const hubFlows = () => (dataplane === 'ebpf' ? inspectNode(nodePinRoot(hub)).snat.flows.map((f) => JSON.stringify(f)) : []);
      if (dataplane === 'ebpf') await waitFor("the hub stream's SNAT flow, both ways", () => hubFlows().length >= 2);
      else await sleep(500);
      const hubFlowsBefore = hubFlows();
      const transitDrops = () => (dataplane === 'ebpf' ? inspectNode(nodePinRoot(hub)).drops.TransitState : 0);
      const transitDropsBefore = transitDrops();
      const rollStarted = Date.now();
      for (const build of [next, undefined])
        for (const node of rolled) await restartAgent(runDir, topology, node, dataplane, build === undefined ? {} : { build });
      const rollMs = Date.now() - rollStarted;
      assert.ok(!upgradeTrafficEnded, `the traffic still ran when the last agent was back (after ${rollMs} ms)`);
      const upgradePinged = await upgradePing;
      const [peeredStream, hubStream] = await Promise.all(streams);
      process.stdout.write(
        `      ${rolled.length} agents upgraded to a build with changed map layouts and back in ${rollMs} ms: ping ${upgradePinged.received}/${upgradePinged.transmitted} (longest gap ${upgradePinged.longestGapMs} ms); TCP streams peered ${peeredStream.echoed}/${peeredStream.sent}, through the hub ${hubStream.echoed}/${hubStream.sent} bytes echoed\n`,
      );
      assert.equal(upgradePinged.received, upgradePinged.transmitted, 'no ping lost across the upgrade and the downgrade');
      assert.ok(peeredStream.ok, `the peered stream survived: ${JSON.stringify(peeredStream)}`);
      assert.ok(hubStream.ok, `the stream through the hub survived: ${JSON.stringify(hubStream)}`);
      assert.equal(transitDrops(), transitDropsBefore, "no packet of the hub's flows found its SNAT state gone");
      if (dataplane === 'ebpf') {
        // Each SNAT flow the hub held before the roll is still there, as it was, after the upgrade and back.
        const hubFlowsAfter = new Set(hubFlows());
        assert.deepEqual(
          hubFlowsBefore.filter((f) => !hubFlowsAfter.has(f)),
          [],
          "the hub's SNAT flows from before the roll, carried across both layout changes",
        );
        // The hub's agent said so, both ways: both maps replaced, the hub stream's SNAT entries carried.
        const upgrades = readFileSync(join(logsDir(runDir), `agent-${hub}.log`), 'utf8')
          .split('\n')
          .filter((line) => line.includes('pinned maps of another build'))
          .map((line) => JSON.parse(line) as { maps: string[]; carriedState: { map: string; entries: number }[] });
        assert.equal(upgrades.length, 2, 'the upgrade and the downgrade');
        for (const { maps, carriedState } of upgrades) {
          assert.deepEqual([...maps].sort(), ['strait_peers', 'strait_snat']);
          const snat = carriedState.find((c) => c.map === 'strait_snat');
          assert.ok(snat !== undefined && snat.entries >= 2, `the hub flow, both ways: ${JSON.stringify(carriedState)}`);
        }
      }

      // 2. The active gateway of A goes away: its agent stops (a deliberate stop: its supervisor does not restart
      //    it) and its node is marked not Ready.
      const nodesOfA = topology.clusters[0]!.nodes;
      const first = nodesOfA.find((n) => n.name === gatewayOf(runDir, 'cluster-a'))!;
      const second = nodesOfA.find((n) => n !== first)!;
      const podOn = (node: typeof first) => addressSeenFrom(topology, views, 'cluster-b', 'cluster-a', node.pods[0]!.ip); // as B sees it
      const during = pingFor('b-w1-p', podOn(second), 800);
      await sleep(1000);
      await stopProcess(runDir, `agent-${first.name}`);
      writeFileSync(
        join(runDir, 'cluster-a', 'status', `${first.name}.json`),
        JSON.stringify({ ready: false, time: new Date().toISOString(), dataplane, specGeneration: 0 }),
      );
      await waitFor('A to elect a new gateway', () => gatewayOf(runDir, 'cluster-a') === second.name);
      const result = await during;
      process.stdout.write(
        `      gateway failover: ${result.transmitted - result.received} of ${result.transmitted} pings lost, longest gap ${result.longestGapMs} ms\n`,
      );
      // The old gateway's datapath stays while its agent is stopped, so traffic goes through it until both
      // clusters have moved; what is lost is the moment the nodes apply their new roles. Bound: 0.5 s
      // without replies (measured 73-256 ms, the kernel fallback the slower; agents that applied a new
      // spec only at their next 2 s tick took 0.8-1 s).
      assert.ok(result.longestGapMs <= 500, `the handover cost at most 500 ms without replies; it cost ${result.longestGapMs} ms`);
      const after = await pingFor('b-w1-p', podOn(second), 50);
      assert.equal(after.received, after.transmitted, 'traffic flows through the new gateway');
      const bGateway = gatewayOf(runDir, 'cluster-b');
      const sendsToNewGateway =
        dataplane === 'ebpf'
          ? inspectNode(nodePinRoot(bGateway)).peers.some((p) => p.endpoint === second.publicAddress)
          : run(['ip', '-n', nodeNetns(bGateway), '-d', 'link']).includes(`remote ${second.publicAddress} `);
      assert.ok(sendsToNewGateway, "B's gateway now sends to the new gateway's public address");

      // 3. The new gateway's node dies: its agent is killed with its supervisor (stopProcess with no grace:
      //    nothing restarts it) and its links go down at once; nobody reports it, its heartbeat ages out.
      //    The first node (its agent back) takes over.
      startAgent(topology, runDir, first.name, dataplane);
      await waitFor(`${first.name}'s agent`, () => heartbeatOf(runDir, 'cluster-a', first.name).ready);
      await stopProcess(runDir, `agent-${second.name}`, 0);
      for (const link of ['ul0', 'pub0']) run(['ip', '-n', nodeNetns(second.name), 'link', 'set', link, 'down']);
      // Both directions of the peered path, and A's side of the hub path (A's pod to C's, reflected by B).
      const fromA = first.pods[0]!.name;
      const paths = {
        'B to A': pingFor('b-w1-p', podOn(first), 600),
        'A to B': pingFor(fromA, target, 600),
        'A to C through the hub': pingFor(fromA, hubTarget, 600),
      };
      await paths['B to A'];
      assert.equal(gatewayOf(runDir, 'cluster-a'), first.name, `A elected ${first.name} again`);
      for (const [path, pinging] of Object.entries(paths)) {
        const pinged = await pinging;
        process.stdout.write(
          `      gateway node failure, ${path}: ${pinged.transmitted - pinged.received} of ${pinged.transmitted} pings lost, longest gap ${pinged.longestGapMs} ms (probes 50 ms × 3)\n`,
        );
        // Every node of A and B's gateway see the dead node's datapath stop answering within 3 to 4 probe
        // intervals (50 ms) and switch on their own (docs/liveness.md), before any controller. Measured
        // 198-226 ms; the goal is 300 ms, the bound leaves room for a loaded machine.
        assert.ok(
          pinged.longestGapMs <= 450,
          `${path}: the dead gateway cost at most 0.45 s without replies; it cost ${pinged.longestGapMs} ms`,
        );
      }
      const recovered = await pingFor('b-w1-p', podOn(first), 50);
      assert.equal(recovered.received, recovered.transmitted, 'traffic flows through the surviving gateway');
      assert.ok(knownProcesses(runDir).includes('controller-cluster-a'));
    });
  });
