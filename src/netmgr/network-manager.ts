/**
 * The Network Manager, pure: for each peer, our NetworkConfig (spec: our networks, replicated to the
 * peer), our answer to the peer's (status: where we placed its networks, replicated back) and, once the
 * peer has answered ours too, the TunnelEndpoint. The controller runs one step per peer each round with
 * what replication brought; the step changes the IPAM and says what to replicate, and never sends.
 */
import { type GatewayEndpoint, type NetworkConfigSpec, type NetworkConfigStatus, notRemapped } from '../api/network-config';
import { InputError } from '../errors';
import { addPeer, setRemoteView } from '../ipam/peers';
import type { IpamState } from '../ipam/state';
import { cidrsEqual, formatCidr, parseCidr } from '../net/cidr';
import { type TunnelEndpoint, tunnelEndpoint } from './tunnel-endpoint';

/**
 * waiting-for-peer: no NetworkConfig of the peer placed yet; remapped: its networks are placed and our
 * answer is written, but it has not answered ours; ready: both directions are known, the TunnelEndpoint exists.
 */
export type Peering =
  | { state: 'waiting-for-peer'; clusterId: string; ours: NetworkConfigSpec }
  | { state: 'remapped'; clusterId: string; ours: NetworkConfigSpec; answer: NetworkConfigStatus }
  | { state: 'ready'; clusterId: string; ours: NetworkConfigSpec; answer: NetworkConfigStatus; tunnel: TunnelEndpoint };

export type PeerState = Peering['state'];

export interface PeeringInput {
  ipam: IpamState;
  /** This cluster. */
  clusterId: string;
  peer: string;
  /** Our gateway, as the peer must reach it. */
  endpoint: GatewayEndpoint;
  /** The peer's NetworkConfig for us, as replicated here (checked by its schema). */
  theirs?: NetworkConfigSpec;
  /** The peer's status on our NetworkConfig (checked by its schema). */
  theirAnswer?: NetworkConfigStatus;
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
  return { clusterId, remoteClusterId: peer, podCIDR: formatCidr(ipam.home.podCIDR), externalCIDR: formatCidr(ipam.home.externalCIDR), endpoint };
}

/** The peer's NetworkConfig: its networks placed in our IPAM (kept, or remapped when they collide), and our answer. */
function placeTheirNetworks(ipam: IpamState, clusterId: string, theirs: NetworkConfigSpec): { ipam: IpamState; answer: NetworkConfigStatus } {
  if (theirs.remoteClusterId !== clusterId) throw new InputError('spec.remoteClusterId', theirs.remoteClusterId, `this NetworkConfig is not for us (${clusterId})`);
  if (theirs.clusterId === clusterId) throw new InputError('spec.clusterId', theirs.clusterId, 'a cluster does not peer with itself');
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
  if (!theirAnswer.processed || theirAnswer.observed.podCIDR !== ours.podCIDR || theirAnswer.observed.externalCIDR !== ours.externalCIDR) return undefined;
  const pod = parseCidr('status.remappedPodCIDR', theirAnswer.remappedPodCIDR === notRemapped ? ours.podCIDR : theirAnswer.remappedPodCIDR);
  const external = parseCidr('status.remappedExternalCIDR', theirAnswer.remappedExternalCIDR === notRemapped ? ours.externalCIDR : theirAnswer.remappedExternalCIDR);
  const record = ipam.peers.get(ours.remoteClusterId);
  if (record?.localNATPodCIDR && record.localNATExternalCIDR && cidrsEqual(record.localNATPodCIDR, pod) && cidrsEqual(record.localNATExternalCIDR, external)) return ipam;
  return setRemoteView(ipam, { clusterId: ours.remoteClusterId, localNATPodCIDR: formatCidr(pod), localNATExternalCIDR: formatCidr(external) }).state;
}

/** One round of one peering with what replication brought. */
export function reconcilePeering(input: PeeringInput): PeeringStep {
  const { clusterId, peer } = input;
  let { ipam } = input;
  const problems: string[] = [];
  const ours = ourNetworkConfig(ipam, clusterId, peer, input.endpoint);
  if (!input.theirs) return { ipam, peering: { state: 'waiting-for-peer', clusterId: peer, ours }, problems };
  let answer: NetworkConfigStatus;
  try {
    ({ ipam, answer } = placeTheirNetworks(ipam, clusterId, input.theirs));
  } catch (err) {
    return { ipam, peering: { state: 'waiting-for-peer', clusterId: peer, ours }, problems: [`NetworkConfig from ${peer}: ${message(err)}`] };
  }
  const remapped: Peering = { state: 'remapped', clusterId: peer, ours, answer };
  if (!input.theirAnswer) return { ipam, peering: remapped, problems };
  try {
    const recorded = recordTheirView(ipam, ours, input.theirAnswer);
    if (!recorded) return { ipam, peering: remapped, problems };
    ipam = recorded;
  } catch (err) {
    return { ipam, peering: remapped, problems: [`status from ${peer} on our NetworkConfig: ${message(err)}`] };
  }
  const tunnel = tunnelEndpoint(ipam, peer, input.theirs.endpoint);
  return { ipam, peering: tunnel ? { ...remapped, state: 'ready', tunnel } : remapped, problems };
}
