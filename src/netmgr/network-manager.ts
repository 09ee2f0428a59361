/**
 * The Network Manager, pure: for each peer, our NetworkConfig (spec: our networks, replicated to the
 * peer), our answer to the peer's (status: where we placed its networks, replicated back) and, once the
 * peer has answered ours too, the TunnelEndpoint. The controller runs one step per peer each round with
 * what replication brought; the step changes the IPAM and says what to replicate, and never sends.
 */
import type { GatewayEndpoint, NetworkConfigSpec, NetworkConfigStatus } from '../api/network-config';
import { notRemapped } from '../api/not-remapped';
import { InputError } from '../errors';
import { addPeer, setRemoteView } from '../network-ipam/peers';
import type { IpamState } from '../network-ipam/state';
import { carriedCidr, carriedIp } from '../net/carried';
import { cidrsEqual, formatCidr } from '../net/cidr';
import type { TunnelEndpoint } from '../api/tunnel-endpoint';
import { tunnelEndpoint } from './tunnel-endpoint';

/**
 * waiting-for-peer: no NetworkConfig of the peer yet; refused: the peer's NetworkConfig cannot be used
 * (`reason` says why: a network or gateway our dataplanes cannot carry, no free network to remap it to);
 * remapped: its networks are placed and our answer is written, but it has not answered ours (or its
 * answer cannot be used: `reason`); ready: both directions are known, the TunnelEndpoint exists.
 */
export type Peering =
  | { state: 'waiting-for-peer'; clusterId: string; ours: NetworkConfigSpec }
  | { state: 'refused'; clusterId: string; ours: NetworkConfigSpec; reason: string }
  | { state: 'remapped'; clusterId: string; ours: NetworkConfigSpec; answer: NetworkConfigStatus; reason?: string }
  | { state: 'ready'; clusterId: string; ours: NetworkConfigSpec; answer: NetworkConfigStatus; tunnel: TunnelEndpoint };

export interface PeeringInput {
  ipam: IpamState;
  /** This cluster. */
  clusterId: string;
  peer: string;
  /** Our gateway, as the peer must reach it. */
  endpoint: GatewayEndpoint;
  /** The peer's NetworkConfig for us, as replicated here (checked by its schema). */
  theirs?: NetworkConfigSpec;
  /** Why the peer's NetworkConfig, which is there, cannot be read (not JSON, against its schema); absent `theirs` only. */
  theirsUnreadable?: string;
  /** The peer's status on our NetworkConfig (checked by its schema). */
  theirAnswer?: NetworkConfigStatus;
  /** Why the peer's status on ours, which is there, cannot be read; absent `theirAnswer` only. */
  theirAnswerUnreadable?: string;
}

export interface PeeringStep {
  /** The same object as the input when nothing changed, so the caller saves only real changes. */
  ipam: IpamState;
  peering: Peering;
  /** Inputs that could not be used this round, and why. */
  problems: string[];
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Our NetworkConfig for the peer: our networks as the IPAM has them. */
function ourNetworkConfig(ipam: IpamState, clusterId: string, peer: string, endpoint: GatewayEndpoint): NetworkConfigSpec {
  if (clusterId === peer) throw new InputError('remoteClusterId', peer, 'a cluster does not peer with itself');
  return {
    clusterId,
    remoteClusterId: peer,
    podCIDR: formatCidr(ipam.home.podCIDR),
    externalCIDR: formatCidr(ipam.home.externalCIDR),
    endpoint,
  };
}

/**
 * The peer's NetworkConfig: its networks placed in our IPAM (kept, or remapped when they collide), and our
 * answer. Every node's spec would carry its networks and its gateway, and an agent refuses a spec whole:
 * what our dataplanes cannot carry is refused here, for this peer alone.
 */
function placeTheirNetworks(
  ipam: IpamState,
  clusterId: string,
  theirs: NetworkConfigSpec,
): { ipam: IpamState; answer: NetworkConfigStatus } {
  if (theirs.remoteClusterId !== clusterId)
    throw new InputError('spec.remoteClusterId', theirs.remoteClusterId, `this NetworkConfig is not for us (${clusterId})`);
  if (theirs.clusterId === clusterId) throw new InputError('spec.clusterId', theirs.clusterId, 'a cluster does not peer with itself');
  carriedCidr('spec.podCIDR', theirs.podCIDR);
  carriedCidr('spec.externalCIDR', theirs.externalCIDR);
  carriedIp('spec.endpoint.address', theirs.endpoint.address);
  theirs.endpoint.standbyAddresses?.forEach((a, i) => carriedIp(`spec.endpoint.standbyAddresses[${i}]`, a));
  const { state, result } = addPeer(ipam, { clusterId: theirs.clusterId, podCIDR: theirs.podCIDR, externalCIDR: theirs.externalCIDR });
  return {
    ipam: state,
    answer: {
      processed: true,
      remappedPodCIDR: result.remotePodCIDR === result.podCIDR ? notRemapped : result.remotePodCIDR,
      remappedExternalCIDR: result.remoteExternalCIDR === result.externalCIDR ? notRemapped : result.remoteExternalCIDR,
      observed: { podCIDR: theirs.podCIDR, externalCIDR: theirs.externalCIDR },
    },
  };
}

/**
 * The peer's answer to ours, recorded in our IPAM as its view of our networks (the same IPAM object when
 * already recorded). An answer about networks we no longer have is not one: the dataplane would
 * translate into the wrong networks.
 */
function recordTheirView(ipam: IpamState, ours: NetworkConfigSpec, theirAnswer: NetworkConfigStatus): IpamState | undefined {
  if (!theirAnswer.processed || theirAnswer.observed.podCIDR !== ours.podCIDR || theirAnswer.observed.externalCIDR !== ours.externalCIDR)
    return undefined;
  // Our pods' sources leaving for the peer are translated into these: they must be unicast space.
  const pod = carriedCidr(
    'status.remappedPodCIDR',
    theirAnswer.remappedPodCIDR === notRemapped ? ours.podCIDR : theirAnswer.remappedPodCIDR,
  );
  const external = carriedCidr(
    'status.remappedExternalCIDR',
    theirAnswer.remappedExternalCIDR === notRemapped ? ours.externalCIDR : theirAnswer.remappedExternalCIDR,
  );
  const record = ipam.peers.get(ours.remoteClusterId);
  if (
    record?.localNATPodCIDR &&
    record.localNATExternalCIDR &&
    cidrsEqual(record.localNATPodCIDR, pod) &&
    cidrsEqual(record.localNATExternalCIDR, external)
  )
    return ipam;
  return setRemoteView(ipam, {
    clusterId: ours.remoteClusterId,
    localNATPodCIDR: formatCidr(pod),
    localNATExternalCIDR: formatCidr(external),
  }).state;
}

/** One round of one peering with what replication brought. */
export function reconcilePeering(input: PeeringInput): PeeringStep {
  const { clusterId, peer } = input;
  let { ipam } = input;
  const problems: string[] = [];
  const ours = ourNetworkConfig(ipam, clusterId, peer, input.endpoint);
  if (!input.theirs) {
    const peering: Peering =
      input.theirsUnreadable === undefined
        ? { state: 'waiting-for-peer', clusterId: peer, ours }
        : { state: 'refused', clusterId: peer, ours, reason: input.theirsUnreadable };
    return { ipam, peering, problems };
  }
  let answer: NetworkConfigStatus;
  try {
    ({ ipam, answer } = placeTheirNetworks(ipam, clusterId, input.theirs));
  } catch (err) {
    const reason = `NetworkConfig from ${peer}: ${message(err)}`;
    return { ipam, peering: { state: 'refused', clusterId: peer, ours, reason }, problems: [reason] };
  }
  const remapped: Peering = { state: 'remapped', clusterId: peer, ours, answer };
  if (!input.theirAnswer)
    return {
      ipam,
      peering: input.theirAnswerUnreadable === undefined ? remapped : { ...remapped, reason: input.theirAnswerUnreadable },
      problems,
    };
  try {
    const recorded = recordTheirView(ipam, ours, input.theirAnswer);
    if (!recorded) return { ipam, peering: remapped, problems };
    ipam = recorded;
  } catch (err) {
    const reason = `status from ${peer} on our NetworkConfig: ${message(err)}`;
    return { ipam, peering: { ...remapped, reason }, problems: [reason] };
  }
  const tunnel = tunnelEndpoint(ipam, peer, input.theirs.endpoint);
  return { ipam, peering: tunnel ? { ...remapped, state: 'ready', tunnel } : remapped, problems };
}
