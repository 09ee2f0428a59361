/**
 * One reconcile of a cluster's controller, with no I/O: what was read from the run directory goes in,
 * the new IPAM state and every file the controller wants (with its content) come out. The loop in
 * controller.ts reads and writes; the tests run several clusters' steps against an in-memory run dir.
 */
import type { ControllerConfig, ReflectionConfig } from './config';
import { type Election, type Heartbeat, electGateway, gatewayAddress, readyNodes } from './election';
import { type ExchangeView, type StatusDocument, jsonText, runDirPaths } from './exchange';
import { cidrsEqual, parseCidr } from '../ipam/cidr';
import { mapEndpoint, unmapEndpoint } from '../ipam/endpoints';
import { initializeIpam } from '../ipam/initialize';
import { homePodIp, removePeer } from '../ipam/peers';
import type { IpamState } from '../ipam/state';
import { type NetworkConfig, type NetworkConfigSpec, acceptStatus, createLocalNetworkConfig, notRemapped, processRemoteNetworkConfig } from '../netmgr/network-config';
import { type TunnelEndpoint, tunnelEndpointFor } from '../netmgr/tunnel-endpoint';
import { defaultTunnelPort, planNodeSpec } from '../nodespec/plan';
import type { NodeDataplaneSpec } from '../nodespec/spec';

/**
 * waiting-for-peer: we have not processed a NetworkConfig from the peer; remapped: we have (its networks
 * are placed and our status is written) but it has not answered ours yet; ready: the TunnelEndpoint exists.
 */
export type PeerState = 'waiting-for-peer' | 'remapped' | 'ready';

export interface ControllerStatus {
  clusterId: string;
  gateway: string;
  peers: { clusterId: string; state: PeerState }[];
  readyNodes: string[];
  time: string;
}

export interface Reflection extends ReflectionConfig {
  /** The pod as this (hub) cluster sees it. */
  endpoint: string;
  /** What a pod in `to` dials to reach it. */
  address: string;
}

export interface ReconcileInput {
  config: ControllerConfig;
  /** As last saved; undefined on the very first start. */
  ipam: IpamState | undefined;
  exchange: ExchangeView;
  heartbeats: ReadonlyMap<string, Heartbeat>;
  previousGateway: string | undefined;
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
  ipam: IpamState;
  election: Election;
  tunnels: TunnelEndpoint[];
  nodeSpecs: Map<string, NodeDataplaneSpec>;
  reflections: Reflection[];
  status: ControllerStatus;
  /** Peers released from the IPAM in this step (no longer configured). */
  removedPeers: string[];
  /** Every file this controller wants, path (relative to the run dir) → content. */
  files: Map<string, string>;
  /** Files it wrote before and no longer wants. */
  deletes: string[];
  /** Inputs that could not be used this round, and why. */
  problems: string[];
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** How the peer sees our networks according to its status ("None": as we number them). */
function viewInStatus(ours: NetworkConfigSpec, status: StatusDocument): { pod: string; external: string } {
  return {
    pod: status.remappedPodCIDR === notRemapped ? ours.podCIDR : status.remappedPodCIDR,
    external: status.remappedExternalCIDR === notRemapped ? ours.externalCIDR : status.remappedExternalCIDR,
  };
}

/** Records the peer's view of us unless already recorded (then the IPAM state object stays the same). */
function acceptPeerStatus(ipam: IpamState, ours: NetworkConfigSpec, status: StatusDocument): IpamState {
  const record = ipam.peers.get(ours.remoteClusterId);
  const view = viewInStatus(ours, status);
  const known =
    record?.localNATPodCIDR !== undefined &&
    record.localNATExternalCIDR !== undefined &&
    cidrsEqual(record.localNATPodCIDR, parseCidr('status.remappedPodCIDR', view.pod)) &&
    cidrsEqual(record.localNATExternalCIDR, parseCidr('status.remappedExternalCIDR', view.external));
  return known ? ipam : acceptStatus(ipam, { spec: ours, status });
}

function answersCurrentSpec(ours: NetworkConfigSpec, status: StatusDocument): boolean {
  return status.observed.podCIDR === ours.podCIDR && status.observed.externalCIDR === ours.externalCIDR;
}

export function reconcile(input: ReconcileInput): ReconcileResult {
  const { config, exchange } = input;
  const us = config.clusterId;
  let ipam = initializeIpam(input.ipam, config.home).state;
  const files = new Map<string, string>();
  const problems = [...exchange.problems];

  const removedPeers: string[] = [];
  for (const peer of [...ipam.peers.values()]) {
    if (config.peers.includes(peer.clusterId)) continue;
    ipam = removePeer(ipam, peer.clusterId).state;
    removedPeers.push(peer.clusterId);
  }

  const ready = readyNodes(config.nodes, input.heartbeats, input.now, config.heartbeatTimeout);
  const starting = input.startedAt !== undefined && input.now - input.startedAt < config.heartbeatTimeout * 1000;
  const awaiting = starting ? config.nodes.filter((n) => !input.heartbeats.has(n.name)).map((n) => n.name) : [];
  const election = electGateway(config.nodes, ready, input.previousGateway, awaiting);
  const gatewayNode = config.nodes.find((n) => n.name === election.gateway)!;
  const endpoint = { address: gatewayAddress(gatewayNode), port: defaultTunnelPort };

  const tunnels: TunnelEndpoint[] = [];
  const peerStates: ControllerStatus['peers'] = [];
  for (const peer of config.peers) {
    const ours = createLocalNetworkConfig(ipam, us, peer, endpoint).spec;
    files.set(runDirPaths.spec(us, peer), jsonText(ours));
    let state: PeerState = 'waiting-for-peer';
    let remote: NetworkConfig | undefined;
    const theirs = exchange.specsForUs.get(peer);
    if (theirs) {
      try {
        const processed = processRemoteNetworkConfig(ipam, us, { spec: theirs });
        ipam = processed.ipam;
        remote = processed.config;
        const status: StatusDocument = { ...processed.config.status!, observed: { podCIDR: theirs.podCIDR, externalCIDR: theirs.externalCIDR } };
        files.set(runDirPaths.status(peer, us), jsonText(status));
        state = 'remapped';
      } catch (err) {
        problems.push(`NetworkConfig from ${peer}: ${message(err)}`);
      }
    }
    const status = exchange.statusesOfOurs.get(peer);
    let local: NetworkConfig = { spec: ours };
    if (remote && status?.processed && answersCurrentSpec(ours, status)) {
      try {
        ipam = acceptPeerStatus(ipam, ours, status);
        local = { spec: ours, status };
      } catch (err) {
        problems.push(`status from ${peer} on our NetworkConfig: ${message(err)}`);
      }
    }
    const tunnel = tunnelEndpointFor(ipam, local, remote);
    if (tunnel) {
      tunnels.push(tunnel);
      state = 'ready';
    }
    peerStates.push({ clusterId: peer, state });
  }

  const reflected = reflect(ipam, config.reflections, new Set(tunnels.map((t) => t.clusterId)), problems);
  ipam = reflected.ipam;

  const nodeSpecs = new Map<string, NodeDataplaneSpec>();
  for (const node of config.nodes) {
    const spec = planNodeSpec({ clusterId: us, ipam, tunnels, nodes: config.nodes, nodeName: node.name, gatewayName: election.gateway, encryptedPeers: new Set(config.encryptedPeers) });
    nodeSpecs.set(node.name, spec);
    files.set(runDirPaths.nodeSpec(us, node.name), jsonText(spec));
  }
  files.set(runDirPaths.reflections(us), jsonText(reflected.reflections));
  const status: ControllerStatus = { clusterId: us, gateway: election.gateway, peers: peerStates, readyNodes: ready, time: new Date(input.now).toISOString() };
  files.set(runDirPaths.controllerStatus(us), jsonText(status));

  return {
    ipam,
    election,
    tunnels,
    nodeSpecs,
    reflections: reflected.reflections,
    status,
    removedPeers,
    files,
    deletes: exchange.written.filter((path) => !files.has(path)),
    problems,
  };
}

/**
 * Maps every configured reflection whose two peers are ready, and unmaps the NatMappings no reflection
 * wants any more. A reflection waiting for a peer keeps its mapping, so its address does not move.
 */
function reflect(ipam: IpamState, wanted: readonly ReflectionConfig[], readyPeers: ReadonlySet<string>, problems: string[]): { ipam: IpamState; reflections: Reflection[] } {
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
