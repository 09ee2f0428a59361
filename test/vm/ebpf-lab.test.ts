/**
 * The eBPF lab on the VM's kernel (@vm-kernel), on the attach path that kernel gives the agents: Debian's
 * 6.1 has no tcx (it came in 6.6), so the datapath's programs go on clsact with cls_bpf filters; Debian's
 * 6.12 (bookworm-security, trixie's kernel) has tcx, which the agents then take, as on the host but on an
 * older tcx. Every check of `lab test` must pass, and an agent upgraded to a build whose map layouts
 * changed must replace those maps and swap its programs in (a clsact filter replaced in place, or a tcx
 * link updated) without losing a ping. The path expected is the kernel version's, not the probe's, so a
 * probe that got tcx wrong fails here.
 *
 * On 6.1, the oldest kernel Strait supports, the mixed topology: the dual-stack lab's clusters, checks and
 * reflection, with A and C on eBPF peered through a hub B on the kernel fallback, every check in both
 * families. On 6.12, whose TCG runs on one host thread, the smallest lab (two-clusters.yaml, on eBPF):
 * what 6.12 adds over the host's newer kernel is its verifier and its tcx, which every agent's load and
 * the upgrade exercise; the checks' logic is the host's and 6.1's. One lab per kernel: each costs minutes
 * under TCG, and eBPF peered with eBPF on 6.1 is the multi-VM lab's (test/multivm).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { release } from 'node:os';
import { join } from 'node:path';
import { findAttachments } from '../../src/dataplane/ebpf/attachments';
import { netnsPath } from '../../src/kernel/netns';
import { addressSeenFrom } from '../../lab/src/checks';
import { labUp, nodePinRoot } from '../../lab/src/lab';
import { type LabTestOutcome, clusterViews, failureSummary, labTest } from '../../lab/src/lab-test';
import { defaultTopologyPath, nodeNetns } from '../../lab/src/names';
import { logsDir } from '../../lab/src/processes';
import { requireKernel, requireRoot } from '../support/kernel';
import { buildNextRelease } from '../support/next-build';
import {
  assertMixedLab,
  checksByKind,
  emulatedLab,
  emulatedPace,
  gatewayOf,
  labSuiteHooks,
  pingUntil,
  podVethOf,
  restartAgent,
} from '../support/lab-suite';

const runDir = `/run/strait/lab-vm-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The attach path the agents must take on this kernel: tcx from 6.6 on, clsact + cls_bpf before. */
function expectedKind(): 'tcx' | 'clsact' {
  const [major = 0, minor = 0] = release().split('.').map(Number);
  return major > 6 || (major === 6 && minor >= 6) ? 'tcx' : 'clsact';
}
const kind = expectedKind();

/** The lab this kernel runs (see above), with the count of checks of each kind it must pass. */
const lab =
  kind === 'clsact'
    ? {
        name: 'mixed',
        topology: join(defaultTopologyPath, '..', 'mixed.yaml'),
        ebpfNodes: ['a-gw', 'a-w1', 'c-gw', 'c-w1'],
        podOfB: '10.0.1.10', // b-w1-p
        assertOutcome: (outcome: LabTestOutcome) => assertMixedLab(runDir, outcome),
      }
    : {
        name: 'two-clusters',
        topology: join(defaultTopologyPath, '..', 'two-clusters.yaml'),
        ebpfNodes: ['a-gw', 'a-w1', 'b-gw'],
        podOfB: '10.0.0.10', // b-gw-p
        // The exact count: a check that silently drops out shows.
        assertOutcome: async (outcome: LabTestOutcome) => assert.deepEqual(checksByKind(outcome.results), { peered: 24, intra: 10 }),
      };

/** What each "agent started" record of a node's agent log says about tcx (one record per start). */
function tcxAtStarts(node: string): unknown[] {
  return readFileSync(join(logsDir(runDir), `agent-${node}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; tcx?: unknown })
    .filter((r) => r.msg === 'agent started')
    .map((r) => r.tcx);
}

/** The maps each agent of `node` found pinned with another layout and replaced (its log says so at start). */
const replacedMaps = (node: string) =>
  readFileSync(join(logsDir(runDir), `agent-${node}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('pinned maps of another build'))
    .map((l) => [...(JSON.parse(l) as { maps: string[] }).maps].sort());

/** How many times a cluster's controller changed its gateway (its log's "gateway changed" records). */
const gatewayChanges = (cluster: string) =>
  readFileSync(join(logsDir(runDir), `controller-${cluster}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"msg":"gateway changed"')).length;

/** Strait's attachments on a node, found in the kernel: interface, program, mechanism, program id. */
const attachmentsOf = (node: string) =>
  findAttachments(nodePinRoot(node), netnsPath(nodeNetns(node)))
    .map(({ interface: ifname, program, kind, progId }) => ({ ifname, program, kind, progId }))
    .sort((x, y) => x.ifname.localeCompare(y.ifname) || x.program.localeCompare(y.program));

/**
 * Every eBPF node's agent started seeing tcx or not as this kernel has it, and its programs run on the
 * kernel's attach path: the overlay device's, its pod's, and the probe responder on its underlay device
 * (and its public one, where it has one).
 */
function assertAttachPath(nodes: string[]): void {
  for (const node of nodes) {
    assert.deepEqual(
      tcxAtStarts(node),
      [kind === 'tcx'],
      `${node}'s agent started once and saw tcx ${kind === 'tcx' ? 'present' : 'absent'} (${release()})`,
    );
    const found = attachmentsOf(node).map(({ progId: _, ...a }) => a);
    assert.deepEqual(
      found.filter((a) => a.program !== 'strait_liveness_reply'),
      [
        { ifname: 'strait0', program: 'strait_from_overlay', kind },
        { ifname: 'strait0', program: 'strait_to_overlay', kind },
        { ifname: podVethOf(node, `${node}-p`), program: 'strait_from_pod', kind },
      ],
      `${node}'s programs are attached through ${kind}`,
    );
    const responders = found.filter((a) => a.program === 'strait_liveness_reply');
    assert.ok(
      responders.some((a) => a.ifname === 'ul0') && responders.every((a) => ['ul0', 'pub0'].includes(a.ifname) && a.kind === kind),
      `${node}'s probe responder runs on its underlay (and public) device through ${kind}: ${JSON.stringify(responders)}`,
    );
  }
}

describe(`eBPF lab on the VM's kernel: every program on its attach path (clsact before 6.6, tcx from it; here ${kind}) @vm-kernel @vm-lab`, function () {
  requireRoot(this);
  // Measured under a loaded host: 6.5 min for the mixed topology without the restart.
  this.timeout(1_800_000);
  labSuiteHooks(runDir, lines, say);
  before(async function (this: Mocha.Context) {
    await requireKernel(this, kind === 'tcx' ? { has: ['clsact', 'tcx'] } : { has: ['clsact'], lacks: ['tcx'] });
  });

  it(`${lab.name} topology: the eBPF nodes on the kernel's attach path, every check passes the first time, and an agent upgraded to a build whose map layouts changed under a continuous ping loses none`, async () => {
    const topology = await labUp(lab.topology, { runDir, dataplane: 'ebpf', say, ...emulatedLab });
    assertAttachPath(lab.ebpfNodes);
    const outcome = await labTest(runDir, say, emulatedPace);
    assert.equal(outcome.failed, 0, failureSummary(outcome));
    await lab.assertOutcome(outcome);

    // Upgrade A's gateway agent while a ping crosses it, to a release whose map layouts changed (a field
    // appended to strait_peer and to the SNAT entry: test/support/next-build.ts; one upgrade: a node process
    // takes up to 40 s to start in the emulated VM on a loaded host): the new agent sets the old maps aside,
    // fills its own, and only then, finding the old programs' clsact filters in its slot (or their pinned
    // tcx links), replaces each (pod veth, overlay device, the probe responder's devices) in place.
    const views = await clusterViews(topology, runDir);
    const target = addressSeenFrom(topology, views, 'cluster-a', 'cluster-b', lab.podOfB); // as A sees it
    const restarted = [gatewayOf(runDir, 'cluster-a')];
    const before = Object.fromEntries(restarted.map((n) => [n, attachmentsOf(n).map((a) => a.progId)]));
    const gatewaysBefore = [gatewayOf(runDir, 'cluster-a'), gatewayOf(runDir, 'cluster-b')];
    const changesBefore = [gatewayChanges('cluster-a'), gatewayChanges('cluster-b')];
    // Pings 0.05 s apart from before the restart until a second after the restarted agent is Ready (a
    // node process takes 20 to 60 s to start there).
    const next = buildNextRelease();
    const restarting = (async () => {
      await sleep(1000);
      for (const node of restarted)
        await restartAgent(runDir, topology, node, 'ebpf', {
          pace: emulatedLab,
          timeoutMs: 1000 * emulatedLab.heartbeatTimeout,
          build: next,
        });
    })();
    const pinged = await pingUntil('a-w1-p', target, restarting, 0.05);
    await restarting;
    process.stdout.write(
      `      agent upgrade to changed map layouts on ${kind}: ping ${pinged.received}/${pinged.transmitted} answered (longest gap ${pinged.longestGapMs} ms)\n`,
    );
    // A restart slower than the heartbeat timeout is a node failure to the controller: a failover, with
    // its loss, and a second one back would leave the same gateway. Say so rather than blame the datapath.
    assert.deepEqual(
      [gatewayChanges('cluster-a'), gatewayChanges('cluster-b')],
      changesBefore,
      'no gateway changed, even for a while: every restart was faster than the heartbeat timeout',
    );
    assert.deepEqual([gatewayOf(runDir, 'cluster-a'), gatewayOf(runDir, 'cluster-b')], gatewaysBefore);
    assert.equal(pinged.received, pinged.transmitted, 'no ping lost across the agent upgrade');
    for (const node of restarted) {
      assert.deepEqual(
        replacedMaps(node),
        [['strait_peers', 'strait_snat']],
        `${node}'s new agent replaced the two maps whose layout changed`,
      );
      assert.deepEqual(tcxAtStarts(node), [kind === 'tcx', kind === 'tcx'], `${node}'s new agent saw tcx as the first did`);
      const now = attachmentsOf(node);
      assert.deepEqual(
        now.map((a) => a.kind),
        before[node]!.map(() => kind),
        `${node}'s programs (the pod's, the overlay's, the probe responder's) are still on ${kind}`,
      );
      assert.ok(
        now.every((a, i) => a.progId !== before[node]![i]),
        `${node} runs the new agent's programs: ${JSON.stringify(before[node])} -> ${JSON.stringify(now.map((a) => a.progId))}`,
      );
    }
  });
});
