/**
 * A lab across machines (docs/lab.md, "A lab across machines"): each machine — a VM of vagrant/, or a
 * real host — is one node of the topology. Its root network namespace is the node; its pods are
 * namespaces in it, as in the netns lab; its two NICs, found by the MACs of the machine plan, become
 * `ul0` and `pub0`. The run directory, the standalone control plane, is one directory shared by every
 * machine. `strait-lab up|test|down --node` run on the machine itself; `strait-lab report` anywhere
 * that sees the run directory.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupNodeDataplanes } from '../../src/dataplane/open';
import { runDirPaths } from '../../src/api/run-dir';
import { StateError } from '../../src/errors';
import { describeMissing, encryptionRequirements } from '../../src/probe/features';
import { probeKernel } from '../../src/probe/probe';
import { run } from '../../src/kernel/command';
import { dumpLinks } from '../../src/kernel/rtnetlink';
import { deleteNetns, netnsPath } from '../../src/kernel/netns';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { type TrafficCheck, planChecks } from './checks';
import {
  type LabDataplane,
  type Say,
  agentDataplane,
  machineHost,
  nodePinRoot,
  readHeartbeat,
  readLabState,
  savedTopology,
  secretsDir,
  standaloneControllerConfig,
  startAgent,
  startEchoServers,
  startStandaloneController,
  waitForConvergence,
  writePeeringSecret,
} from './lab';
import { clusterViews, reportOutcome, runPlannedChecks } from './lab-test';
import { openLabState } from './lab-state';
import { type MachineNic, machinePlan } from './machine-plan';
import { type MetricsResult, checkAgentMetrics, metricsLine } from './metrics-check';
import { labPinRoot, podNetns } from './names';
import { detachPod, podLeaseDir, podNetworkConfig } from './pod-network';
import { batch, buildPods, forwarding, podRoutes, strictReversePath, sysctl, underlayLinkLocalLines } from './network';
import { type LabPaceName, labPaces } from './pace';
import { knownProcesses, stopProcess, writeRestartPolicy } from './processes';
import { type RestartPolicy, defaultRestartPolicy } from './restart-backoff';
import type { CheckResult } from './run-checks';
import { type LabTopology, findNode, loadTopology } from './topology';

const topologyFile = (runDir: string) => join(runDir, runDirPaths.topology);
const resultsFile = (runDir: string, node: string) => join(runDir, runDirPaths.results(node));

/**
 * Every machine writes the same topology.json (atomically: a reader never sees half of it); one that
 * finds another topology there refuses, since its clusters would not be the ones the others run.
 */
function publishTopology(runDir: string, topology: LabTopology, node: string): void {
  const text = JSON.stringify(topology, null, 2);
  if (existsSync(topologyFile(runDir)) && readFileSync(topologyFile(runDir), 'utf8') !== text) {
    throw new StateError(
      `${topologyFile(runDir)} holds another topology: the run directory belongs to another lab ('strait-lab down --node' on its machines, or another --run-dir)`,
    );
  }
  writeFileAtomic(topologyFile(runDir), text, 0o644, node);
}

/**
 * This machine's interface for each of the plan's NICs, found by MAC in one link dump (rtnetlink); throws
 * naming the first that is missing, or a name already taken by another interface.
 */
function findNics(nics: readonly MachineNic[]): { nic: MachineNic; dev: string }[] {
  const links = dumpLinks();
  return nics.map((nic) => {
    const dev = links.find((l) => l.address?.toLowerCase() === nic.mac)?.ifname;
    if (dev === undefined)
      throw new StateError(
        `no interface of this machine has the MAC ${nic.mac} that the plan gives ${nic.name} (network ${nic.network}): is this machine the node, and its NICs made with the plan's MACs (strait-lab plan)?`,
      );
    if (dev !== nic.name && links.some((l) => l.ifname === nic.name))
      throw new StateError(`${nic.name} exists and is not the interface of MAC ${nic.mac} (${dev}); rename or remove it first`);
    return { nic, dev };
  });
}

/**
 * The NICs renamed to ul0 and pub0 (so the agents and checks see the names of the netns lab), given the
 * lab's MTU and their address. Idempotent: a second run finds them named already.
 */
function configureNics(found: readonly { nic: MachineNic; dev: string }[], mtu: number): void {
  for (const { nic, dev } of found) {
    if (dev !== nic.name) batch('this machine', [`link set dev ${dev} down`, `link set dev ${dev} name ${nic.name}`]);
    batch('this machine', [
      `link set dev ${nic.name} mtu ${mtu}`,
      `addr replace ${nic.address} dev ${nic.name}`,
      `link set dev ${nic.name} up`,
    ]);
  }
}

/**
 * The secret of each encrypted peering, written once for the lab by one machine: the controller machine
 * of the cluster named first in the peering, which writes it for both clusters; the other cluster's
 * agents find it there when it appears (the agent reads its secrets at each apply).
 */
function writeMachineSecrets(topology: LabTopology, runDir: string, clusterId: string, writer: string): void {
  for (const peering of topology.encryptedPeerings.filter(([first]) => first === clusterId)) writePeeringSecret(runDir, peering, writer);
}

export interface MachineOptions {
  runDir: string;
  node: string;
  dataplane: LabDataplane;
  pace: LabPaceName;
  say: Say;
  /** How this machine's agent and controller are restarted after a crash (LabOptions.restart). */
  restart?: RestartPolicy;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Makes this machine the node `options.node` of the topology: NICs, forwarding and strict reverse-path
 * filtering, the routes to the other nodes' pods, its pods and their echo servers, its cluster's
 * controller when it is the cluster's first node, and its agent; returns once the agent is Ready (the
 * peerings converge as the other machines come up: `strait-lab test --node` waits for them).
 */
export async function machineUp(topologyPath: string, options: MachineOptions): Promise<void> {
  const { runDir, say } = options;
  const topology = loadTopology(topologyPath);
  const { cluster, node } = findNode(topology, options.node);
  const dataplane = agentDataplane(topology, cluster.id, options.dataplane);
  if (topology.encryptedPeerings.some((p) => p.includes(cluster.id))) {
    const lacks = describeMissing(encryptionRequirements, await probeKernel());
    if (lacks.length > 0)
      throw new StateError(
        `${cluster.id} has encrypted peerings and this machine's kernel cannot run them: it lacks ${lacks.join(', ')} (see strait probe)`,
      );
  }
  const planned = machinePlan(topology).machines.find((m) => m.name === node.name)!;
  const host = machineHost(runDir, node.name);
  if (existsSync(host.processDir) || existsSync(nodePinRoot(node.name))) {
    throw new StateError(
      `${node.name} is already up on this machine (${host.processDir} or ${nodePinRoot(node.name)} exists); 'strait-lab down --node ${node.name}' first`,
    );
  }
  // Checked before anything is written: a machine that is not the node changes nothing.
  const nics = findNics(planned.nics);
  const { lab, test } = labPaces[options.pace];
  mkdirSync(runDir, { recursive: true });
  publishTopology(runDir, topology, node.name);
  mkdirSync(host.processDir, { recursive: true });
  writeRestartPolicy(host.processDir, options.restart ?? defaultRestartPolicy);
  mkdirSync(secretsDir(runDir, cluster.id), { recursive: true, mode: 0o700 });
  if (planned.controller) writeMachineSecrets(topology, runDir, cluster.id, node.name);
  say(`${node.name}: NICs ${planned.nics.map((n) => `${n.name} ${n.address}`).join(', ')}; ${node.pods.length} pods`);
  // The agents' and controllers' metrics servers listen on loopback (up on any machine but a bare namespace).
  batch('this machine', ['link set lo up']);
  configureNics(nics, topology.mtu);
  // The NICs existed before `default` was strict (and a distribution may make them loose): each is set too.
  sysctl('this machine', [...forwarding, ...strictReversePath, ...planned.nics.map((n) => `net.ipv4.conf.${n.name}.rp_filter=1`)]);
  batch('this machine', [...underlayLinkLocalLines(node), ...podRoutes(cluster, node)]);
  buildPods('this machine', node, topology.mtu, runDir);
  if (planned.controller) {
    mkdirSync(join(runDir, cluster.id), { recursive: true });
    startStandaloneController(topology, runDir, cluster.id, standaloneControllerConfig(topology, cluster, runDir, lab), host.processDir);
    say(`${node.name}: controller of ${cluster.id} started`);
  }
  startEchoServers(node, host);
  const started = Date.now();
  startAgent(topology, runDir, node.name, dataplane, lab, host);
  say(`${node.name}: agent (${dataplane}) started; waiting for it to be Ready`);
  for (;;) {
    const heartbeat = readHeartbeat(runDir, cluster.id, node.name);
    // The agent runs here: its heartbeat's time is this machine's clock.
    if (heartbeat?.ready && Date.parse(heartbeat.time) >= started) break;
    if (Date.now() - started > test.convergeTimeoutMs) {
      throw new StateError(
        `${node.name}'s agent was not Ready in ${test.convergeTimeoutMs / 1000} s${heartbeat?.error ? `: ${heartbeat.error}` : ''}; see ${join(host.processDir, 'logs')}`,
      );
    }
    await sleep(200);
  }
  say(`${node.name} is up`);
}

/** What `strait-lab test --node` leaves for `strait-lab report`. */
interface MachineResults {
  node: string;
  results: CheckResult[];
  metrics: MetricsResult[];
}

/**
 * Waits for the whole lab, then runs the checks whose source pod is on this machine (each once) and
 * checks this node's agent's /metrics; writes them for `strait-lab report`; returns how many failed.
 */
export async function machineTest(runDir: string, nodeName: string, paceName: LabPaceName, say: Say): Promise<number> {
  const topology = savedTopology(runDir);
  const { node } = findNode(topology, nodeName);
  const pace = labPaces[paceName].test;
  await waitForConvergence(topology, runDir, say, pace.convergeTimeoutMs);
  const pods = new Set(node.pods.map((p) => p.name));
  const checks = planChecks(topology, await clusterViews(topology, runDir)).filter((c) => pods.has(c.from));
  const results = await runPlannedChecks(checks, say, pace);
  const state = await openLabState(runDir, topology);
  // A node whose agent cannot be scraped or inspected fails its line; the traffic results still count.
  const metrics = await checkAgentMetrics(topology, await readLabState(topology, state), pace.scrapeTimeoutMs, node.name)
    .catch((err: Error) => [{ node: node.name, ok: false, detail: err.message }])
    .finally(() => state.close());
  mkdirSync(join(runDir, 'results'), { recursive: true });
  writeFileAtomic(resultsFile(runDir, node.name), JSON.stringify({ node: node.name, results, metrics } satisfies MachineResults));
  return reportOutcome(
    say,
    results,
    metrics.map((m) => ({ ok: m.ok, line: metricsLine(m) })),
  );
}

const sameCheck = (a: TrafficCheck, b: TrafficCheck) =>
  a.from === b.from && a.to === b.to && a.address === b.address && a.probe === b.probe;

/**
 * Every machine's results in one table, as `strait-lab test` prints it. Each planned check must have a
 * result from the machine of its source pod: a machine that did not test, or a check it did not run,
 * counts as a failure. Returns how many failed.
 */
export async function labReport(runDir: string, say: Say): Promise<number> {
  const topology = savedTopology(runDir);
  const planned = planChecks(topology, await clusterViews(topology, runDir));
  const machines = topology.clusters.flatMap((c) => c.nodes).filter((n) => n.pods.some((p) => planned.some((c) => c.from === p.name)));
  const results: CheckResult[] = [];
  const findings: { ok: boolean; line: string }[] = [];
  for (const node of machines) {
    let found: MachineResults;
    try {
      found = JSON.parse(readFileSync(resultsFile(runDir, node.name), 'utf8')) as MachineResults;
    } catch {
      findings.push({ ok: false, line: `FAIL ${node.name}: no results (run 'strait-lab test --node ${node.name}' on it)` });
      continue;
    }
    results.push(...found.results);
    findings.push(...found.metrics.map((m) => ({ ok: m.ok, line: metricsLine(m) })));
    const own = planned.filter((c) => node.pods.some((p) => p.name === c.from));
    const missing = own.filter((c) => !found.results.some((r) => sameCheck(r, c)));
    if (missing.length > 0)
      findings.push({
        ok: false,
        line: `FAIL ${node.name}: ${missing.length} of its ${own.length} checks have no result (${missing.map((c) => `${c.probe} ${c.from} -> ${c.to}`).join(', ')})`,
      });
  }
  return reportOutcome(say, results, findings);
}

/**
 * Takes this machine's node out of the lab: its processes (the agent first), everything Strait put on
 * the node (as `strait agent --cleanup`), its pods, the routes to the other nodes' pods, its pins, files
 * and results. NICs keep their names and addresses. Safe to run twice, and without a topology.
 */
export async function machineDown(runDir: string, nodeName: string, say: Say): Promise<void> {
  const host = machineHost(runDir, nodeName);
  const names = knownProcesses(host.processDir);
  let stopped = 0;
  for (const name of [...names.filter((n) => n.startsWith('agent-')), ...names.filter((n) => !n.startsWith('agent-'))])
    if (await stopProcess(host.processDir, name)) stopped++;
  const summary = cleanupNodeDataplanes(nodePinRoot(nodeName));
  let pods = 0;
  if (existsSync(topologyFile(runDir))) {
    const topology = savedTopology(runDir);
    const { cluster, node } = findNode(topology, nodeName);
    const config = podNetworkConfig(node, topology.mtu, podLeaseDir(runDir, nodeName));
    for (const pod of node.pods) {
      // CNI DEL first: it removes the pod's veth at once (deleting the pod's namespace removes it too, but
      // later: the kernel tears a namespace down in the background, so a check right after down could
      // still find it). Not attached (up stopped before its pods, or down ran before): nothing to delete.
      if (existsSync(netnsPath(podNetns(pod.name)))) detachPod('this machine', node, pod, config);
      if (deleteNetns(podNetns(pod.name))) pods++;
    }
    for (const route of podRoutes(cluster, node, 'del')) {
      try {
        run(['ip', ...route.split(' ')]);
      } catch {
        // not there: down ran before, or up stopped before the routes
      }
    }
  }
  rmSync(nodePinRoot(nodeName), { recursive: true, force: true });
  // The lab's pin directory goes with its last node on this machine.
  if (existsSync(labPinRoot) && readdirSync(labPinRoot).length === 0) rmdirSync(labPinRoot);
  rmSync(host.processDir, { recursive: true, force: true });
  rmSync(resultsFile(runDir, nodeName), { force: true });
  say(`${nodeName} down: ${stopped} processes stopped, ${summary.detached.length} programs detached, ${pods} pods removed`);
}
