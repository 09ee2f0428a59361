/**
 * The Network Manager, pure: for each peer, our NetworkConfig (spec: our networks, replicated to the
 * peer), our answer to the peer's (status: where we placed its networks, replicated back) and, once the
 * peer has answered ours too, the TunnelEndpoint. The controller runs one step per peer each round with
 * what replication brought; the step changes the IPAM and says what to replicate, and never sends.
 */
import type { GatewayEndpoint, NetworkConfigSpec, NetworkConfigStatus } from '../api/network-config';
import { notRemapped } from '../api/not-remapped';
import { InputError } from '../errors';
import { addPeer, removePeer, setRemoteView } from '../network-ipam/peers';
import { type IpamPlanes, withPlane } from '../network-ipam/planes';
import type { IpamState } from '../network-ipam/state';
import { carriedCidr, underlayIp } from '../net/carried';
import { cidrsEqual, formatCidr } from '../net/cidr';
import type { TunnelEndpoint } from '../api/tunnel-endpoint';
import { tunnelEndpoint } from './tunnel-endpoint';

/**
 * waiting-for-peer: no NetworkConfig of the peer yet; refused: the peer's NetworkConfig cannot be used
 * (`reason` says why: a network or gateway our dataplanes cannot carry, no free network to remap it to);
 * remapped: its networks are placed and our answer is written, but it has not answered ours (or its
 * answer cannot be used: `reason`); ready: both directions are known, the TunnelEndpoint exists (and
 * `reason` says why its secondary family does not carry traffic, where it cannot).
 */
export type Peering =
  | { state: 'waiting-for-peer'; clusterId: string; ours: NetworkConfigSpec }
  | { state: 'refused'; clusterId: string; ours: NetworkConfigSpec; reason: string }
  | { state: 'remapped'; clusterId: string; ours: NetworkConfigSpec; answer: NetworkConfigStatus; reason?: string }
  | { state: 'ready'; clusterId: string; ours: NetworkConfigSpec; answer: NetworkConfigStatus; tunnel: TunnelEndpoint; reason?: string };

/** One peering's inputs; `planes`: the IPAM, a plane per family (src/network-ipam/planes.ts). */
export interface PeeringInput extends Omit<FamilyPeeringInput, 'ipam'> {
  planes: IpamPlanes;
}

export interface PeeringStep {
  /** The same object as the input when nothing changed, so the caller saves only real changes. */
  planes: IpamPlanes;
  peering: Peering;
  /** Inputs that could not be used this round, and why. */
  problems: string[];
}

/** One family's inputs: the NetworkConfigs projected onto it, and its plane. */
interface FamilyPeeringInput {
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

interface FamilyPeeringStep {
  ipam: IpamState;
  peering: Peering;
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
  at: string,
): { ipam: IpamState; answer: NetworkConfigStatus } {
  if (theirs.remoteClusterId !== clusterId)
    throw new InputError('spec.remoteClusterId', theirs.remoteClusterId, `this NetworkConfig is not for us (${clusterId})`);
  if (theirs.clusterId === clusterId) throw new InputError('spec.clusterId', theirs.clusterId, 'a cluster does not peer with itself');
  const family = ipam.home.podCIDR.family;
  for (const name of ['podCIDR', 'externalCIDR'] as const) {
    const cidr = carriedCidr(`${at}${name}`, theirs[name]);
    // Each family is placed in its own plane: a network of the other family has no place here.
    if (cidr.family !== family)
      throw new InputError(
        `${at}${name}`,
        theirs[name],
        `is IPv${cidr.family} where our ${at === 'spec.' ? 'primary' : 'secondary'} family is IPv${family}; ` +
          'a peering carries the families both clusters have, each in the same place (IPv4 first)',
      );
  }
  underlayIp('spec.endpoint.address', theirs.endpoint.address);
  theirs.endpoint.standbyAddresses?.forEach((a, i) => underlayIp(`spec.endpoint.standbyAddresses[${i}]`, a));
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
function recordTheirView(ipam: IpamState, ours: NetworkConfigSpec, theirAnswer: NetworkConfigStatus, at: string): IpamState | undefined {
  if (!theirAnswer.processed || theirAnswer.observed.podCIDR !== ours.podCIDR || theirAnswer.observed.externalCIDR !== ours.externalCIDR)
    return undefined;
  // Our pods' sources leaving for the peer are translated into these: they must be unicast space.
  const pod = carriedCidr(`${at}remappedPodCIDR`, theirAnswer.remappedPodCIDR === notRemapped ? ours.podCIDR : theirAnswer.remappedPodCIDR);
  const external = carriedCidr(
    `${at}remappedExternalCIDR`,
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

/** Where a family's networks sit in the two NetworkConfig documents, for error messages. */
interface FamilyPlace {
  spec: string;
  status: string;
}

/** One round of one family of one peering (the NetworkConfigs projected onto that family). */
function reconcileFamily(input: FamilyPeeringInput, at: FamilyPlace): FamilyPeeringStep {
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
    ({ ipam, answer } = placeTheirNetworks(ipam, clusterId, input.theirs, at.spec));
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
    const recorded = recordTheirView(ipam, ours, input.theirAnswer, at.status);
    if (!recorded) return { ipam, peering: remapped, problems };
    ipam = recorded;
  } catch (err) {
    const reason = `status from ${peer} on our NetworkConfig: ${message(err)}`;
    return { ipam, peering: { ...remapped, reason }, problems: [reason] };
  }
  const tunnel = tunnelEndpoint(ipam, peer, input.theirs.endpoint);
  return { ipam, peering: tunnel ? { ...remapped, state: 'ready', tunnel } : remapped, problems };
}

/**
 * One round of one peering with what replication brought: the primary family's step on the primary plane
 * and, where both clusters are dual-stack, the secondary family's on the secondary plane, merged into one
 * NetworkConfig, one answer and one TunnelEndpoint. The peering's state is the primary family's: the
 * secondary family joins the TunnelEndpoint once both of its directions are known too.
 */
export function reconcilePeering(input: PeeringInput): PeeringStep {
  const { planes: before, ...rest } = input;
  const primary = reconcileFamily({ ...rest, ipam: before.primary }, { spec: 'spec.', status: 'status.' });
  const planes = withPlane(before, 'primary', primary.ipam);
  if (!planes.secondary) return { planes, peering: primary.peering, problems: primary.problems };

  const theirs = input.theirs;
  const placed = primary.peering.state === 'remapped' || primary.peering.state === 'ready';
  if (!theirs?.secondary || !placed) {
    // A single-stack peer (or one that dropped its secondary family), or one whose primary networks have
    // no place: none of its networks in this plane, which holds a peer's only beside its primary ones.
    const secondary = removePeer(planes.secondary, input.peer).state;
    const ours = {
      ...primary.peering.ours,
      secondary: familyNetworks(ourNetworkConfig(secondary, rest.clusterId, input.peer, input.endpoint)),
    };
    return { planes: withPlane(planes, 'secondary', secondary), peering: { ...primary.peering, ours }, problems: primary.problems };
  }
  const secondary = reconcileFamily(
    {
      ...rest,
      ipam: planes.secondary,
      theirs: { ...withoutSecondary(theirs), ...theirs.secondary },
      theirAnswer: input.theirAnswer?.secondary && { processed: input.theirAnswer.processed, ...input.theirAnswer.secondary },
      theirsUnreadable: undefined,
      theirAnswerUnreadable: undefined,
    },
    { spec: 'spec.secondary.', status: 'status.secondary.' },
  );
  return {
    planes: withPlane(planes, 'secondary', secondary.ipam),
    peering: mergeFamilies(primary.peering, secondary.peering),
    problems: [...primary.problems, ...secondary.problems],
  };
}

const withoutSecondary = <T extends { secondary?: unknown }>({ secondary: _secondary, ...rest }: T) => rest;

/** A NetworkConfig's own networks (the family it was projected onto). */
const familyNetworks = (spec: NetworkConfigSpec) => ({ podCIDR: spec.podCIDR, externalCIDR: spec.externalCIDR });

/** The answer's part about one family. */
const familyAnswer = ({ processed: _processed, ...answer }: NetworkConfigStatus) => withoutSecondary(answer);

/** The primary family's peering with the secondary family's networks, answer and tunnel added where they exist. */
function mergeFamilies(primary: Peering, secondary: Peering): Peering {
  const ours = { ...primary.ours, secondary: familyNetworks(secondary.ours) };
  // A secondary family that cannot be placed leaves the peering single-stack, and says why.
  const secondaryReason = 'reason' in secondary && secondary.reason !== undefined ? secondary.reason : undefined;
  const reason = (own?: string) => {
    const reasons = [own, secondaryReason].filter((r): r is string => r !== undefined);
    return reasons.length > 0 ? { reason: reasons.join('; ') } : {};
  };
  if (primary.state === 'waiting-for-peer' || primary.state === 'refused') return { ...primary, ours };
  const answer = 'answer' in secondary ? { ...primary.answer, secondary: familyAnswer(secondary.answer) } : primary.answer;
  if (primary.state === 'remapped') return { ...primary, ours, answer, ...reason(primary.reason) };
  const tunnel = secondary.state === 'ready' ? { ...primary.tunnel, secondary: familyTunnel(secondary.tunnel) } : primary.tunnel;
  return { ...primary, ours, answer, tunnel, ...reason() };
}

/** A TunnelEndpoint's four networks. */
const familyTunnel = (t: TunnelEndpoint) => ({
  remotePodCIDR: t.remotePodCIDR,
  remoteExternalCIDR: t.remoteExternalCIDR,
  localNATPodCIDR: t.localNATPodCIDR,
  localNATExternalCIDR: t.localNATExternalCIDR,
});
