/**
 * One reconcile of a cluster's controller, with no I/O: what replication brought and the nodes' heartbeats
 * go in; the new IPAM state and every document the controller wants published come out, typed. An
 * adapter publishes them: to the run directory (files/exchange.ts, `runDirFiles`) or to API servers.
 */
import type { ControllerConfig, ReflectionConfig } from '../api/controller-config';
import {
  type Election,
  type GatewayTenure,
  type Heartbeat,
  aliveCandidates,
  electGateway,
  gatewayAddress,
  readyNodes,
  standbyOrder,
} from './election';
import type { ExchangeView } from './exchange-view';
import type { ControllerStatus, Reflection } from '../api/controller-status';
import type { NetworkConfigSpec, NetworkConfigStatus } from '../api/network-config';
import { formatIp, parseIp } from '../net/cidr';
import { maxStandbyGateways } from '../nodespec/spec';
import { mapEndpoint, unmapEndpoint } from '../network-ipam/endpoints';
import { type IpamPlanes, initializePlanes, planesOf, withPlane } from '../network-ipam/planes';
import { homePodIp, removePeer } from '../network-ipam/peers';
import type { IpamState } from '../network-ipam/state';
import { reconcilePeering } from '../netmgr/network-manager';
import type { TunnelEndpoint } from '../api/tunnel-endpoint';
import { clusterNodeSpecs, defaultTunnelPort, planNodeSpec } from '../nodespec/plan';
import type { NodeDataplaneSpec } from '../nodespec/spec';

export interface ReconcileInput {
  config: ControllerConfig;
  /** As last saved; undefined on the very first start. */
  ipam: IpamPlanes | undefined;
  exchange: ExchangeView;
  heartbeats: ReadonlyMap<string, Heartbeat>;
  /**
   * The last reconcile's `election` (or a gateway adopted from a former run): for one heartbeat timeout
   * after `since`, that gateway is kept while its last heartbeat said ready, however old (electGateway's
   * `settling`).
   */
  previous: GatewayTenure | undefined;
  /** Milliseconds since the epoch. */
  now: number;
  /**
   * When this controller started: for one heartbeat timeout after it, a gateway whose agent has not
   * reported at all yet is kept (start-up grace). Absent: no grace.
   */
  startedAt?: number;
}

export interface ReconcileResult {
  /** The same object as the input when nothing changed, so the caller saves only real changes. */
  ipam: IpamPlanes;
  /** With `since`: now when the gateway changed, else the previous tenure's. Pass it as the next `previous`. */
  election: Election & GatewayTenure;
  tunnels: TunnelEndpoint[];
  nodeSpecs: Map<string, NodeDataplaneSpec>;
  reflections: Reflection[];
  status: ControllerStatus;
  /** Our NetworkConfig for each configured peer, to replicate to it. */
  ourNetworkConfigs: Map<string, NetworkConfigSpec>;
  /** Our answers (status) on the NetworkConfigs the peers sent us, by peer. */
  answers: Map<string, NetworkConfigStatus>;
  /** Peers released from the IPAM in this step (no longer configured). */
  removedPeers: string[];
  /** Inputs that could not be used this round, and why. */
  problems: string[];
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function reconcile(input: ReconcileInput): ReconcileResult {
  const { config, exchange } = input;
  const us = config.clusterId;
  let ipam = initializePlanes(input.ipam, config.home).planes;
  const problems = [...exchange.problems];

  const removed = new Set<string>();
  for (const [name, plane] of planesOf(ipam)) {
    let kept = plane;
    for (const peer of [...plane.peers.values()]) {
      if (config.peers.includes(peer.clusterId)) continue;
      kept = removePeer(kept, peer.clusterId).state;
      removed.add(peer.clusterId);
    }
    ipam = withPlane(ipam, name, kept);
  }
  const removedPeers = [...removed];

  const ready = readyNodes(config.nodes, input.heartbeats, input.now, config.heartbeatTimeout);
  const within = (since: number | undefined) => since !== undefined && input.now - since < config.heartbeatTimeout * 1000;
  const candidates = config.nodes.filter((n) => n.gatewayCandidate);
  const awaiting = within(input.startedAt) ? candidates.filter((n) => !input.heartbeats.has(n.name)).map((n) => n.name) : [];
  const { previous } = input;
  const settling = previous !== undefined && within(previous.since) && input.heartbeats.get(previous.gateway)?.ready === true;
  const alive = aliveCandidates(candidates, input.heartbeats, input.now, config.heartbeatTimeout);
  const elected = electGateway(candidates, alive, previous?.gateway, awaiting, settling);
  const since = elected.gateway === previous?.gateway ? previous.since : input.now;
  const election = { ...elected, ...(since !== undefined ? { since } : {}) };
  const gatewayNode = config.nodes.find((n) => n.name === election.gateway)!;
  const standbyGateways = standbyOrder(candidates, election.gateway).slice(0, maxStandbyGateways);
  const standbyAddresses = standbyGateways.map((name) => formatIp(gatewayAddress(config.nodes.find((n) => n.name === name)!)));
  const endpoint = {
    address: formatIp(gatewayAddress(gatewayNode)),
    port: defaultTunnelPort,
    ...(standbyAddresses.length > 0 ? { standbyAddresses } : {}),
  };

  const tunnels: TunnelEndpoint[] = [];
  const peerStates: ControllerStatus['peers'] = [];
  const ourNetworkConfigs = new Map<string, NetworkConfigSpec>();
  const answers = new Map<string, NetworkConfigStatus>();
  for (const peer of config.peers) {
    const step = reconcilePeering({
      planes: ipam,
      clusterId: us,
      peer,
      endpoint,
      theirs: exchange.specsForUs.get(peer),
      theirsUnreadable: exchange.unreadableSpecs.get(peer),
      theirAnswer: exchange.statusesOfOurs.get(peer),
      theirAnswerUnreadable: exchange.unreadableStatuses.get(peer),
    });
    ipam = step.planes;
    problems.push(...step.problems);
    const { peering } = step;
    ourNetworkConfigs.set(peer, peering.ours);
    if ('answer' in peering) answers.set(peer, peering.answer);
    if (peering.state === 'ready') tunnels.push(peering.tunnel);
    peerStates.push({
      clusterId: peer,
      state: peering.state,
      ...('reason' in peering && peering.reason !== undefined ? { reason: peering.reason } : {}),
    });
  }

  const reflections: Reflection[] = [];
  const readyPeers = new Set(tunnels.map((t) => t.clusterId));
  for (const [name, plane] of planesOf(ipam)) {
    // Each reflection in the plane of its pod's family; the other plane unmaps what none of its family wants.
    const family = plane.home.podCIDR.family;
    const wanted = config.reflections.filter((r) => parseIp('podIP', r.podIP).family === family);
    const reflected = reflect(plane, wanted, readyPeers, problems);
    ipam = withPlane(ipam, name, reflected.ipam);
    reflections.push(...reflected.reflections);
  }

  const nodeSpecs = new Map<string, NodeDataplaneSpec>();
  const nodeList = clusterNodeSpecs(config.nodes);
  const encryptedPeers = new Set(config.encryptedPeers);
  for (const node of config.nodes) {
    const spec = planNodeSpec({
      clusterId: us,
      ipam,
      tunnels,
      nodes: config.nodes,
      nodeList,
      nodeName: node.name,
      gatewayName: election.gateway,
      standbyGateways,
      encryptedPeers,
      ...(config.tunnelMTU !== undefined ? { tunnelMTU: config.tunnelMTU } : {}),
    });
    nodeSpecs.set(node.name, spec);
  }
  const status: ControllerStatus = {
    clusterId: us,
    gateway: election.gateway,
    peers: peerStates,
    readyNodes: ready,
    time: new Date(input.now).toISOString(),
  };

  return {
    ipam,
    election,
    tunnels,
    nodeSpecs,
    reflections,
    status,
    ourNetworkConfigs,
    answers,
    removedPeers,
    problems,
  };
}

/**
 * Maps every configured reflection whose two peers are ready, and unmaps the NatMappings no reflection
 * wants any more. A reflection waiting for a peer keeps its mapping, so its address does not move.
 */
function reflect(
  ipam: IpamState,
  wanted: readonly ReflectionConfig[],
  readyPeers: ReadonlySet<string>,
  problems: string[],
): { ipam: IpamState; reflections: Reflection[] } {
  const reflections: Reflection[] = [];
  const kept = new Set<string>();
  for (const r of wanted) {
    if (!ipam.peers.has(r.fromPeer)) continue;
    let endpoint: string;
    try {
      endpoint = homePodIp(ipam, r.fromPeer, r.podIP);
    } catch (err) {
      problems.push(`reflection of ${r.podIP} from ${r.fromPeer} to ${r.to}: ${message(err)}`);
      continue;
    }
    kept.add(`${r.to} ${endpoint}`);
    if (!readyPeers.has(r.to) || !readyPeers.has(r.fromPeer)) continue;
    try {
      const outcome = mapEndpoint(ipam, r.to, endpoint);
      ipam = outcome.state;
      reflections.push({ ...r, endpoint, address: outcome.result.ip });
    } catch (err) {
      problems.push(`reflection of ${r.podIP} from ${r.fromPeer} to ${r.to}: ${message(err)}`);
    }
  }
  for (const peer of [...ipam.peers.values()]) {
    for (const [endpoint] of [...peer.natMappings.entries()]) {
      if (!kept.has(`${peer.clusterId} ${endpoint}`)) ipam = unmapEndpoint(ipam, peer.clusterId, endpoint).state;
    }
  }
  return { ipam, reflections };
}
