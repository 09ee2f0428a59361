/**
 * `strait-lab`: clusters of nodes and pods in network namespaces on this machine, a controller per
 * cluster and an agent per node, the same NetworkConfig exchange as in Kubernetes (through files, see
 * docs/lab.md), and traffic across it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { InputError, StateError } from '../../src/errors';
import { type NodeDataplaneStatus, canonicalSpecText, specDigest } from '../../src/api/node-dataplane';
import { runDirPaths } from '../../src/api/run-dir';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { describeMissing, encryptionRequirements } from '../../src/probe/features';
import { probeKernel } from '../../src/probe/probe';
import { echoPort, labPinRoot, labPrefix, nodeNetns, podNetns, servicePort, whoamiPort } from './names';
import { formatIp, parseCidr } from '../../src/net/cidr';
import { podInterfacePattern } from './pod-network';
import { buildNetworks, labNamespaces, removeNetworks } from './network';
import { installWireCounters } from './wire';
import { labMetricsPort } from './metrics-endpoint';
import { type ControllerConfigDocument, defaultHeartbeatTimeout } from '../../src/api/controller-config';
import type { ExportedServiceDocument } from '../../src/api/exported-service-schema';
import { openLabState } from './lab-state';
import type { ClusterState, LabState } from './lab-state-port';
import { defaultNamespace } from '../../src/k8s/names';
import { type ControlPlane, identityKubeconfigPath, labConfigDir, runsOnKubernetes } from './control-plane';
import { knownProcesses, logsDir, startProcess, startSupervised, stopProcess, writeRestartPolicy } from './processes';
import { type RestartPolicy, defaultRestartPolicy } from './restart-backoff';
import { SpecsSeen, controllerDecisions } from './convergence-story';
import { type LabCluster, type LabNode, type LabTopology, findNode, findPod, isEncrypted, loadTopology } from './topology';

/** The product's CLI (its controllers and agents), and the lab's own (its API servers). */
const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');
const labCli = join(__dirname, 'main.js');
const echoServer = join(__dirname, 'echo-server.js');
const serviceProxy = join(__dirname, 'service-proxy.js');
const clusterDns = join(__dirname, 'cluster-dns.js');
const topologyFile = (runDir: string) => join(runDir, runDirPaths.topology);

export type Say = (line: string) => void;

export type LabDataplane = 'auto' | 'ebpf' | 'kernel';

export interface LabOptions {
  runDir: string;
  dataplane: LabDataplane;
  /** Default files. */
  controlPlane?: ControlPlane;
  say: Say;
  /**
   * Seconds without a heartbeat before a node is not Ready (default 0.6), and how long `up` waits for the
   * lab to converge (default 30 s): longer on a slow machine, such as an emulated VM.
   */
  heartbeatTimeout?: number;
  convergeTimeoutMs?: number;
  /**
   * Seconds between a controller's rounds (default 0.2; on Kubernetes 0.1) and between an agent's
   * reconciles (default 0.2). An emulated VM wants them longer: there each round costs ten times the
   * CPU, and nine processes at rest would take most of the two CPUs the traffic checks need.
   */
  controllerInterval?: number;
  agentInterval?: number;
  /**
   * Seconds between an agent's probes of each gateway candidate (default the agent's, 0.05: a dead
   * gateway costs 0.15 s). An emulated VM wants them longer: there an agent's round or a packet's trip can
   * stall for longer than three probes, and a node would fail over from a live gateway and back.
   */
  agentProbeInterval?: number;
  /**
   * How a crashed agent or controller is restarted (its supervisor's delays, restart-backoff.ts; default
   * 1 s doubling to 10 s): `--restart-delay`, `--restart-delay-max` (restartPolicyOf checks them).
   */
  restart?: RestartPolicy;
}

/**
 * Seconds without a heartbeat before a node is not Ready, standalone: 0.6 s, three of the agents'
 * heartbeats (every 0.2 s). A dead node's gateway then fails over in under a second of traffic
 * (BENCHMARKS.md, "Lab"). A restart does not count as a death: a stopping agent's last heartbeat keeps
 * its node Ready for 5 s (`validFor`), the time its successor may take.
 *
 * On Kubernetes the product's default, 1.5 s. There no agent renews a heartbeat: a node's liveness is its
 * Node's Ready condition and, for gateway candidates, the probes they report (docs/kubernetes.md), so the
 * timeout only bounds how long a gateway just elected is kept while it settles. (When candidates still
 * renewed Leases through the API server, the lab's start-up load on two cores made renewals take up to
 * 1.3 s; at 0.6 s gateways moved back and forth for as long as the load lasted.)
 */
const standaloneHeartbeatTimeout = 0.6;

export function savedTopology(runDir: string): LabTopology {
  try {
    return JSON.parse(readFileSync(topologyFile(runDir), 'utf8')) as LabTopology;
  } catch {
    throw new StateError(`no lab is up in ${runDir} (no topology.json); run 'strait-lab up' first`);
  }
}

export const nodePinRoot = (node: string) => join(labPinRoot, node);
export const nodeSpecPath = (runDir: string, cluster: string, node: string) => join(runDir, runDirPaths.nodeSpec(cluster, node));
export const nodeStatusPath = (runDir: string, cluster: string, node: string) => join(runDir, runDirPaths.heartbeat(cluster, node));

/** A node's last heartbeat (its agent writes one after each reconcile), or undefined before the first. */
export function readHeartbeat(runDir: string, cluster: string, node: string): NodeDataplaneStatus | undefined {
  try {
    return JSON.parse(readFileSync(nodeStatusPath(runDir, cluster, node), 'utf8')) as NodeDataplaneStatus;
  } catch {
    return undefined;
  }
}

/** The IPsec secrets of a cluster's encrypted peerings: a file per peer, as `strait agent --ipsec-secrets` reads. */
export const secretsDir = (runDir: string, cluster: string) => join(runDir, runDirPaths.secrets(cluster));

/**
 * The random secret of the encrypted peering [a, b], written for both clusters (owner-only, like a mounted
 * Kubernetes Secret with defaultMode 0400), atomically under the name of `writer`. A secret already there
 * (a lab across machines brought up before) is kept, so both sides keep agreeing.
 */
export function writePeeringSecret(runDir: string, [a, b]: readonly [string, string], writer: string): void {
  for (const cluster of [a, b]) mkdirSync(secretsDir(runDir, cluster), { recursive: true, mode: 0o700 });
  const mine = join(secretsDir(runDir, a), b);
  const theirs = join(secretsDir(runDir, b), a);
  if (!existsSync(mine)) writeFileAtomic(mine, randomBytes(32).toString('base64'), 0o600, writer);
  if (!existsSync(theirs)) writeFileAtomic(theirs, readFileSync(mine, 'utf8'), 0o600, writer);
}

/** Every encrypted peering's secret; every cluster gets a directory, empty without encryption. */
function writePeeringSecrets(topology: LabTopology, runDir: string): void {
  for (const cluster of topology.clusters) mkdirSync(secretsDir(runDir, cluster.id), { recursive: true, mode: 0o700 });
  for (const peering of topology.encryptedPeerings) writePeeringSecret(runDir, peering, 'lab');
}

/** Seconds between an agent's reconciles and heartbeats in the lab, by default. */
const defaultAgentInterval = 0.2;

function controllerConfig(
  topology: LabTopology,
  cluster: LabCluster,
  runDir: string,
  options: Pick<LabOptions, 'heartbeatTimeout' | 'controllerInterval'>,
  onKubernetes: boolean,
): ControllerConfigDocument {
  const peers = topology.peerings
    .filter((p) => p.includes(cluster.id))
    .map(([a, b]) => (a === cluster.id ? b : a))
    .map((peer) => (isEncrypted(topology, cluster.id, peer) ? { clusterId: peer, encryption: 'ipsec' as const } : peer));
  return {
    clusterId: cluster.id,
    ...(onKubernetes ? {} : { runDir }),
    podCIDR: cluster.podCIDR,
    externalCIDR: cluster.externalCIDR,
    ...(cluster.serviceCIDR ? { serviceCIDR: cluster.serviceCIDR } : {}),
    ...(cluster.secondary ? { secondary: cluster.secondary } : {}),
    peers,
    reflections: topology.reflections
      .filter((r) => r.hub === cluster.id)
      .map((r) => {
        const where = findPod(topology, r.pod);
        return { to: r.to, fromPeer: where.cluster.id, podIP: where.pod.ip };
      }),
    // On Kubernetes the nodes are the Node objects (kubernetes-control-plane.ts).
    ...(onKubernetes
      ? {}
      : {
          nodes: cluster.nodes.map((n) => ({
            name: n.name,
            underlayAddress: n.underlayAddress,
            podCIDRs: [n.podCIDR, ...(n.secondaryPodCIDR ? [n.secondaryPodCIDR] : [])],
            publicAddress: n.publicAddress,
          })),
        }),
    // standaloneHeartbeatTimeout says why these values.
    heartbeatTimeout: options.heartbeatTimeout ?? (onKubernetes ? defaultHeartbeatTimeout : standaloneHeartbeatTimeout),
    interval: options.controllerInterval ?? (onKubernetes ? 0.1 : 0.2),
  };
}

/**
 * What a node's agent runs: the cluster's own `dataplane` when the topology pins one, else the lab's;
 * encrypted peerings are the kernel fallback's, so `auto` picks it for every node of a cluster with
 * one (as an operator would; the agent's own `auto` looks at the kernel only).
 */
export function agentDataplane(topology: LabTopology, cluster: string, requested: LabDataplane): LabDataplane {
  const encrypts = topology.encryptedPeerings.some((p) => p.includes(cluster));
  const pinned = topology.clusters.find((c) => c.id === cluster)?.dataplane;
  const wanted = pinned ?? requested;
  if (encrypts && wanted === 'ebpf') {
    throw new InputError(
      pinned ? `${cluster}.dataplane` : '--dataplane',
      wanted,
      `${cluster} has encrypted peerings, which the eBPF dataplane does not carry; use kernel or auto`,
    );
  }
  return encrypts ? 'kernel' : wanted;
}

const metricsServer = (topology: LabTopology, name: string) => [
  '--metrics-address',
  '127.0.0.1',
  '--metrics-port',
  String(labMetricsPort(topology, name)),
];

/**
 * Where a node's agent and its pods' echo servers run and keep their pid files, logs and probe report:
 * in the node's namespace of this machine with the lab's files, or, in a lab across machines, on the
 * machine that is the node, with its files under machines/<node> of the shared run directory (pids are
 * only meaningful on the machine that wrote them).
 */
export interface NodeHost {
  netns?: string;
  processDir: string;
}
export const netnsHost = (runDir: string, node: string): NodeHost => ({ netns: nodeNetns(node), processDir: runDir });
export const machineHost = (runDir: string, node: string): NodeHost => ({ processDir: join(runDir, runDirPaths.machine(node)) });

/**
 * Starts one node's agent, supervised (restarted after a crash: processes.ts), working in the node's
 * namespace through --netns. Not `ip netns exec`: that gives the process a mount namespace with its own
 * /sys, so its bpffs pins would be invisible to inspect, cleanup and the next agent. `build`: the CLI of
 * another build of Strait (an upgrade, as a DaemonSet's new image), default this one's.
 */
export function startAgent(
  topology: LabTopology,
  runDir: string,
  node: string,
  dataplane: LabDataplane,
  pace: AgentPace = {},
  host = netnsHost(runDir, node),
  build = cli,
): void {
  startSupervised(host.processDir, `agent-${node}`, [
    process.execPath,
    build,
    'agent',
    ...agentFlags(topology, runDir, node, dataplane, pace, host),
  ]);
}

/** How fast an agent goes: its reconciles and its probes of the gateway candidates. */
export type AgentPace = Pick<LabOptions, 'agentInterval' | 'agentProbeInterval'>;

/** What a node's agent is given. */
function agentFlags(
  topology: LabTopology,
  runDir: string,
  node: string,
  dataplane: LabDataplane,
  pace: AgentPace,
  host: NodeHost,
): string[] {
  const { cluster } = findNode(topology, node, 'node');
  // On Kubernetes the settings are the chart's ConfigMap (lab-chart.ts); only what differs per process here is given.
  const settings = runsOnKubernetes(runDir, topology)
    ? [
        '--flags-file',
        join(labConfigDir(runDir, cluster.id), 'agent.yaml'),
        '--kubeconfig',
        identityKubeconfigPath(runDir, cluster.id, `agent-${node}`),
        '--namespace',
        defaultNamespace,
      ]
    : [
        '--spec',
        nodeSpecPath(runDir, cluster.id, node),
        '--status',
        nodeStatusPath(runDir, cluster.id, node),
        '--pod-interfaces',
        podInterfacePattern,
        '--dataplane',
        agentDataplane(topology, cluster.id, dataplane),
        '--interval',
        String(pace.agentInterval ?? defaultAgentInterval),
        ...(pace.agentProbeInterval === undefined ? [] : ['--probe-interval', String(pace.agentProbeInterval)]),
      ];
  return [
    '--node',
    node,
    ...settings,
    '--pin-root',
    nodePinRoot(node),
    // The lab's own, so \`lab down\` takes it with the run directory.
    '--probe-cache',
    join(host.processDir, 'probe-cache.json'),
    ...(host.netns ? ['--netns', host.netns] : []),
    '--ipsec-secrets',
    secretsDir(runDir, cluster.id),
    ...metricsServer(topology, `agent-${node}`),
  ];
}

/**
 * What stands in for a cluster's API objects of its exported services: each one's ServiceExport, Service
 * (one TCP port, `servicePort`) and EndpointSlices (its pods on `whoamiPort`, one slice per family), in
 * the run directory file its controller reads (docs/services.md). `unready`: pods whose endpoints are
 * not ready (their readiness probe failing).
 */
export function writeServiceExports(topology: LabTopology, runDir: string, unready: ReadonlySet<string> = new Set()): void {
  topology.services.forEach((service, i) => {
    const pods = service.pods.map((p) => findPod(topology, p).pod);
    const slice = (addressType: 'IPv4' | 'IPv6', addresses: string[]) => ({
      addressType,
      ports: [{ name: 'whoami', protocol: 'TCP' as const, port: whoamiPort }],
      endpoints: addresses.map((address) => ({
        addresses: [address],
        conditions: { ready: !unready.has(pods.find((p) => p.ip === address || p.secondaryIp === address)!.name) },
      })),
    });
    const families = [pods.map((p) => p.ip), pods.flatMap((p) => (p.secondaryIp ? [p.secondaryIp] : []))];
    const document: ExportedServiceDocument = {
      namespace: service.namespace,
      name: service.name,
      // In the topology's order: the first export of a name is the oldest (KEP-1645's conflict rule).
      created: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      service: { type: 'ClusterIP', ports: [{ name: 'whoami', protocol: 'TCP', port: servicePort }] },
      endpointSlices: families
        .filter((addresses) => addresses.length > 0)
        .map((addresses) => slice(addresses[0]!.includes(':') ? 'IPv6' : 'IPv4', addresses)),
    };
    writeFileAtomic(
      join(runDir, runDirPaths.exportedService(service.cluster, service.namespace, service.name)),
      JSON.stringify(document, null, 2),
    );
  });
}

/**
 * Where the lab has services: each cluster's service proxy (the lab's kube-proxy: service-proxy.ts), a
 * clusterset DNS server on every node (the lab's CoreDNS: cluster-dns.ts), and each pod's resolv.conf
 * naming its node's (`ip netns exec` mounts /etc/netns/<namespace>/resolv.conf over /etc/resolv.conf).
 */
function startServiceProxies(topology: LabTopology, runDir: string): void {
  if (topology.services.length === 0) return;
  for (const cluster of topology.clusters) {
    startProcess(runDir, `svcproxy-${cluster.id}`, [
      process.execPath,
      serviceProxy,
      runDir,
      cluster.id,
      ...cluster.nodes.map((n) => n.name),
    ]);
    for (const node of cluster.nodes) {
      startProcess(runDir, `dns-${node.name}`, [process.execPath, clusterDns, runDir, cluster.id], nodeNetns(node.name));
      // The pods' gateway: the node's end of their veths holds its PodCIDR's first address (pod-network.ts).
      const cidr = parseCidr('podCIDR', node.podCIDR);
      const nameserver = formatIp({ family: cidr.family, value: cidr.base + 1n });
      for (const pod of node.pods) writeFileAtomic(join(podEtcDir(pod.name), 'resolv.conf'), `nameserver ${nameserver}\n`);
    }
  }
}

/** A pod's own /etc files, which `ip netns exec` mounts over the host's. */
const podEtcDir = (pod: string) => join('/etc/netns', podNetns(pod));

/** Removes the lab's /etc/netns directories (its pods' resolv.conf). */
function removePodEtc(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync('/etc/netns');
  } catch {
    return;
  }
  for (const entry of entries.filter((e) => e.startsWith(labPrefix))) rmSync(join('/etc/netns', entry), { recursive: true, force: true });
  // The directory too when the lab made it (nothing else is in it).
  if (readdirSync('/etc/netns').length === 0) rmSync('/etc/netns', { recursive: true, force: true });
}

/** Starts the echo servers of a node's pods, each in its pod's namespace (unsupervised: processes.ts says why). */
export function startEchoServers(node: LabNode, host: NodeHost): void {
  for (const pod of node.pods)
    startProcess(host.processDir, `echo-${pod.name}`, [process.execPath, echoServer, String(echoPort), pod.name], podNetns(pod.name));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What is still missing before traffic can flow, or [] when the lab has converged (pure). */
export function convergenceGaps(topology: LabTopology, states: ReadonlyMap<string, ClusterState>): string[] {
  const gaps: string[] = [];
  for (const cluster of topology.clusters) {
    const state = states.get(cluster.id)!;
    const wantPeers = topology.peerings.filter((p) => p.includes(cluster.id)).length;
    for (const node of cluster.nodes) {
      const { spec, status, running } = state.nodes.get(node.name) ?? {};
      if (!spec) gaps.push(`${node.name}: no spec yet`);
      else if (spec.peers.length < wantPeers) gaps.push(`${node.name}: ${spec.peers.length}/${wantPeers} peers`);
      if (status?.error) gaps.push(`${node.name}: ${status.error}`);
      else if (!status?.ready) gaps.push(`${node.name}: agent not ready`);
      // The agent names the spec it runs: the spec as it is now must be that one.
      else if (spec && running !== specDigest(canonicalSpecText(spec))) gaps.push(`${node.name}: latest spec not applied yet`);
    }
    const wantReflections = topology.reflections.filter((r) => r.hub === cluster.id).length;
    if (state.reflections.length < wantReflections) gaps.push(`${cluster.id}: ${state.reflections.length}/${wantReflections} reflections`);
    for (const [key, exporters] of servicesSeenBy(topology, cluster.id)) {
      const imported = state.imports.find((i) => `${i.namespace}/${i.name}` === key);
      const families = cluster.secondary ? 2 : 1;
      if (!imported || imported.clusters.join() !== exporters.join() || imported.ips.length < families)
        gaps.push(`${cluster.id}: ${key} not imported from ${exporters.join(', ')} yet`);
    }
  }
  return gaps;
}

/** The services cluster `id` imports (its own exports and its peers'): the exporting clusters of each, by namespace/name, in name order. */
export function servicesSeenBy(topology: LabTopology, id: string): Map<string, string[]> {
  const peered = (x: string) => x === id || topology.peerings.some(([a, b]) => (a === id && b === x) || (b === id && a === x));
  const seen = new Map<string, string[]>();
  for (const s of topology.services.filter((s) => peered(s.cluster))) {
    const key = `${s.namespace}/${s.name}`;
    seen.set(key, [...(seen.get(key) ?? []), s.cluster].sort());
  }
  return seen;
}

/** Every cluster's state, read once. */
export async function readLabState(topology: LabTopology, state: LabState): Promise<Map<string, ClusterState>> {
  return new Map(await Promise.all(topology.clusters.map(async (c) => [c.id, await state.read(c)] as const)));
}

export async function waitForConvergence(topology: LabTopology, runDir: string, say: Say, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  let last = '';
  const state = await openLabState(runDir, topology);
  const seen = new SpecsSeen();
  try {
    for (;;) {
      const states = await readLabState(topology, state);
      for (const cluster of states.values())
        for (const [node, { spec }] of cluster.nodes) if (spec) seen.saw(node, specDigest(canonicalSpecText(spec)));
      const gaps = convergenceGaps(topology, states);
      if (gaps.length === 0) return;
      const line = `waiting: ${gaps.slice(0, 3).join('; ')}${gaps.length > 3 ? ` (+${gaps.length - 3})` : ''}`;
      if (line !== last) say(line);
      last = line;
      if (Date.now() - started > timeoutMs) {
        const changes = seen.changes();
        for (const decision of controllerDecisions(logsDir(runDir))) say(`  ${decision}`);
        throw new StateError(
          `the lab did not converge in ${timeoutMs / 1000} s: ${gaps.join('; ')}${changes ? `; specs given while waiting: ${changes}` : ''}; see the logs in ${join(runDir, 'logs')}`,
        );
      }
      await sleep(200);
    }
  } finally {
    await state.close();
  }
}

export async function labUp(topologyPath: string, options: LabOptions): Promise<LabTopology> {
  const { runDir, say } = options;
  const topology = loadTopology(topologyPath);
  // Refused before anything is built.
  for (const cluster of topology.clusters) agentDataplane(topology, cluster.id, options.dataplane);
  if (topology.encryptedPeerings.length > 0) {
    const lacks = describeMissing(encryptionRequirements, await probeKernel());
    if (lacks.length > 0)
      throw new StateError(
        `this topology has encrypted peerings and this kernel cannot run them: it lacks ${lacks.join(', ')} (see strait probe; npm run test:vm runs them in a VM with Debian's kernel)`,
      );
  }
  if (labNamespaces().length > 0 || existsSync(topologyFile(runDir))) {
    throw new StateError(`a lab is already up (namespaces sl-*, or ${topologyFile(runDir)}); run 'strait-lab down' first`);
  }
  if (topology.services.length > 0 && options.controlPlane === 'kubernetes')
    throw new InputError(
      'services',
      topology.services.length,
      'services run on the standalone control plane only so far (docs/services.md)',
    );
  mkdirSync(runDir, { recursive: true });
  writeFileAtomic(topologyFile(runDir), JSON.stringify(topology, null, 2));
  writeServiceExports(topology, runDir);
  writeRestartPolicy(runDir, options.restart ?? defaultRestartPolicy);
  writePeeringSecrets(topology, runDir);
  try {
    say(`networks: ${topology.clusters.length} clusters, ${topology.clusters.reduce((n, c) => n + c.nodes.length, 0)} nodes`);
    buildNetworks(topology, runDir);
    installWireCounters(topology);
    if (options.controlPlane === 'kubernetes') {
      say('control plane: an API server per cluster');
      await (await import('./kubernetes-control-plane')).prepareKubernetes(topology, runDir, labCli);
    }
    const startControllers = await Promise.all(topology.clusters.map((c) => prepareController(topology, c, runDir, options)));
    for (const [i, cluster] of topology.clusters.entries()) {
      startControllers[i]!();
      for (const node of cluster.nodes) {
        startEchoServers(node, netnsHost(runDir, node.name));
        startAgent(topology, runDir, node.name, options.dataplane, options);
      }
    }
    startServiceProxies(topology, runDir);
    say('controllers and agents started; waiting for the peerings');
    await waitForConvergence(topology, runDir, say, options.convergeTimeoutMs);
    say('lab is up');
    return topology;
  } catch (err) {
    say(
      `lab up failed: ${(err as Error).message}; the lab is left as it is for a look (logs in ${join(runDir, 'logs')}); 'strait-lab down' removes it`,
    );
    throw err;
  }
}

/**
 * Ends the peering of two clusters in a running lab, as an operator would: their controllers get a
 * configuration without it and restart.
 */
export async function removePeering(runDir: string, x: string, y: string): Promise<void> {
  const topology = savedTopology(runDir);
  const keep = (a: string, b: string) => !((a === x && b === y) || (a === y && b === x));
  const changed: LabTopology = {
    ...topology,
    peerings: topology.peerings.filter(([a, b]) => keep(a, b)),
    encryptedPeerings: topology.encryptedPeerings.filter(([a, b]) => keep(a, b)),
    reflections: topology.reflections.filter((r) => keep(r.hub, r.to) && keep(r.hub, findPod(topology, r.pod).cluster.id)),
  };
  writeFileAtomic(topologyFile(runDir), JSON.stringify(changed, null, 2));
  for (const cluster of changed.clusters.filter((c) => c.id === x || c.id === y)) {
    for (const name of controllerProcesses(runDir, changed, cluster.id)) await stopProcess(runDir, name);
    // The chart's values say which dataplane a lab on Kubernetes was installed with (lab-chart.ts, loaded for such a lab only).
    const dataplane = runsOnKubernetes(runDir, changed)
      ? ((await import('./lab-chart')).installedDataplane(runDir, cluster.id) as LabDataplane)
      : 'auto';
    (await prepareController(changed, cluster, runDir, { dataplane }))();
  }
}

/**
 * How long a cluster takes, after `helm uninstall` deleted a workload, to send its Pods their SIGTERM: the
 * garbage collector deletes the Pods of the deleted DaemonSet and Deployment, their kubelets see it.
 */
const podDeletionDelayMs = 500;
/** The chart's terminationGracePeriodSeconds (values.yaml, controller/deployment.yaml), after which the kubelet kills. */
const podGraceMs = { agent: 5_000, controller: 10_000 };

/**
 * Uninstalls Strait from a cluster of a lab on Kubernetes as a platform team does, `helm uninstall`, and
 * plays what the cluster does next: the Pods of the deleted workloads (here the cluster's agent and
 * controller processes) get their SIGTERM. What is left on the nodes and in the peers is the product's doing.
 */
export async function uninstallStrait(runDir: string, clusterId: string): Promise<void> {
  const topology = savedTopology(runDir);
  if (!runsOnKubernetes(runDir, topology)) throw new StateError('uninstallStrait runs a lab on Kubernetes only');
  const cluster = topology.clusters.find((c) => c.id === clusterId);
  if (!cluster) throw new StateError(`no cluster ${clusterId} in the lab`);
  (await import('./lab-chart')).uninstallChart(runDir, clusterId);
  await new Promise((resolve) => setTimeout(resolve, podDeletionDelayMs));
  await Promise.all([
    ...controllerProcesses(runDir, topology, clusterId).map((name) => stopProcess(runDir, name, podGraceMs.controller)),
    ...cluster.nodes.map((n) => stopProcess(runDir, `agent-${n.name}`, podGraceMs.agent)),
  ]);
}

/** The lab's controller processes of a cluster: one standalone, two replicas (leader and standby) on Kubernetes. */
export const controllerProcesses = (runDir: string, topology: LabTopology, cluster: string) =>
  runsOnKubernetes(runDir, topology) ? [`controller-${cluster}-0`, `controller-${cluster}-1`] : [`controller-${cluster}`];

type ControllerOptions = Pick<LabOptions, 'dataplane' | 'heartbeatTimeout' | 'controllerInterval' | 'agentInterval' | 'agentProbeInterval'>;

/**
 * A cluster's controller configuration put in place (on Kubernetes: the chart installed or upgraded);
 * returns what starts its controller processes, so that the clusters' installs can run side by side
 * before any process competes with them for the CPU.
 */
async function prepareController(
  topology: LabTopology,
  cluster: LabCluster,
  runDir: string,
  options: ControllerOptions,
): Promise<() => void> {
  mkdirSync(join(runDir, cluster.id), { recursive: true });
  const onKubernetes = runsOnKubernetes(runDir, topology);
  const config = controllerConfig(topology, cluster, runDir, options, onKubernetes);
  if (!onKubernetes) return () => startStandaloneController(topology, runDir, cluster.id, config);
  const settings = {
    config,
    dataplane: agentDataplane(topology, cluster.id, options.dataplane),
    agentInterval: options.agentInterval ?? defaultAgentInterval,
    ...(options.agentProbeInterval === undefined ? {} : { agentProbeInterval: options.agentProbeInterval }),
    podInterfaces: podInterfacePattern,
    encryption: topology.encryptedPeerings.some((p) => p.includes(cluster.id)),
  };
  const nodes = cluster.nodes.map((n) => n.name);
  const dir = await (await import('./kubernetes-control-plane')).installStrait(runDir, cluster.id, settings, nodes);
  return () => {
    for (const name of controllerProcesses(runDir, topology, cluster.id)) {
      startSupervised(runDir, name, [
        process.execPath,
        cli,
        'controller',
        '--flags-file',
        join(dir, 'controller.yaml'),
        '--kubeconfig',
        identityKubeconfigPath(runDir, cluster.id, 'controller'),
        '--namespace',
        defaultNamespace,
        '--identity',
        name,
        ...metricsServer(topology, name),
      ]);
    }
  };
}

/**
 * The standalone controller of a cluster, supervised, with its pid files and log in `processDir` (the
 * lab's, or its machine's).
 */
export function startStandaloneController(
  topology: LabTopology,
  runDir: string,
  clusterId: string,
  config: ControllerConfigDocument,
  processDir = runDir,
): void {
  const path = join(runDir, runDirPaths.controllerConfig(clusterId));
  writeFileAtomic(path, JSON.stringify(config, null, 2));
  startSupervised(processDir, `controller-${clusterId}`, [
    process.execPath,
    cli,
    'controller',
    '--config',
    path,
    ...metricsServer(topology, `controller-${clusterId}`),
  ]);
}

/** A standalone controller's configuration in a lab (files, not Kubernetes). */
export const standaloneControllerConfig = (
  topology: LabTopology,
  cluster: LabCluster,
  runDir: string,
  options: Pick<LabOptions, 'heartbeatTimeout' | 'controllerInterval'>,
) => controllerConfig(topology, cluster, runDir, options, false);

/**
 * Restarts a standalone lab's controller of `clusterId` with its configuration changed by `edit` (the e2e
 * bench gives a hub thousands of reflections this way). Its IPAM state and the datapath stay as they are.
 */
export async function reconfigureController(
  runDir: string,
  clusterId: string,
  edit: (config: ControllerConfigDocument) => ControllerConfigDocument,
): Promise<void> {
  const topology = savedTopology(runDir);
  if (runsOnKubernetes(runDir, topology)) throw new StateError('reconfigureController runs a standalone lab only');
  const config = JSON.parse(readFileSync(join(runDir, runDirPaths.controllerConfig(clusterId)), 'utf8')) as ControllerConfigDocument;
  await stopProcess(runDir, `controller-${clusterId}`);
  startStandaloneController(topology, runDir, clusterId, edit(config));
}

/** Kills the API server of a lab on Kubernetes (as a crash) and starts it again on its etcd, port and identity. */
export async function restartApiServer(runDir: string, clusterId: string): Promise<void> {
  await (await import('./kubernetes-control-plane')).restartApiServer(runDir, clusterId, labCli);
}

/** Removes every trace of a lab (processes, namespaces, pins, run directory); safe to run twice. */
export async function labDown(runDir: string, say: Say): Promise<{ processes: number; namespaces: number }> {
  const names = knownProcesses(runDir);
  // Agents first: they leave the datapath in place, which the namespaces take with them.
  const ordered = [...names.filter((n) => n.startsWith('agent-')), ...names.filter((n) => !n.startsWith('agent-'))];
  let processes = 0;
  for (const name of ordered) if (await stopProcess(runDir, name)) processes++;
  const namespaces = removeNetworks();
  removePodEtc();
  rmSync(labPinRoot, { recursive: true, force: true });
  rmSync(runDir, { recursive: true, force: true });
  say(`lab down: ${processes} processes stopped, ${namespaces} namespaces removed`);
  return { processes, namespaces };
}
