/**
 * The Network Manager, pure: for each peer, our NetworkConfig (spec: our networks, replicated to the
 * peer), our answer to the peer's (status: where we placed its networks, replicated back) and, once the
 * peer has answered ours too, the TunnelEndpoint. The controller runs one step per peer each round with
 * what replication brought; the step changes the IPAM and says what to replicate, and never sends.
 */
import {
  type FamilyAnswer,
  type GatewayEndpoint,
  type NetworkConfigSpec,
  type NetworkConfigStatus,
  primaryAnswer,
} from '../api/network-config';
import { notRemapped } from '../api/not-remapped';
import { networkFamily, requireOtherFamily } from '../api/secondary-family';
import { InputError } from '../errors';
import { addPeer, removePeer, setRemoteView } from '../network-ipam/peers';
import { type IpamPlanes, planesOf, withPlane } from '../network-ipam/planes';
import type { IpamState } from '../network-ipam/state';
import { carriedCidr, requireUnderlayFamily, underlayIp } from '../net/carried';
import { type IpFamily, cidrsEqual, formatCidr, parseIp } from '../net/cidr';
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
 * Refuses the peer's gateway addresses unless each is a tunnel end of our gateway's family: the peering's
 * tunnel runs over one family (a failover to a standby too), and where the clusters' gateways share none,
 * no tunnel can join them.
 */
function requireTheirEndpoint(theirs: GatewayEndpoint, ours: GatewayEndpoint): void {
  const family = parseIp('endpoint.address', ours.address).family;
  const ofOurs = `our gateway's address ${ours.address}`;
  const fields = [
    ['spec.endpoint.address', theirs.address] as const,
    ...(theirs.standbyAddresses ?? []).map((a, i) => [`spec.endpoint.standbyAddresses[${i}]`, a] as const),
  ];
  for (const [field, text] of fields) requireUnderlayFamily(field, underlayIp(field, text), family, ofOurs);
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
        `is IPv${cidr.family}, not the family of ${at}podCIDR ${theirs.podCIDR} (IPv${family}): each family's networks sit together`,
      );
  }
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
  const answer = primaryAnswer(theirAnswer);
  if (!theirAnswer.processed || !answer || answer.observed.podCIDR !== ours.podCIDR || answer.observed.externalCIDR !== ours.externalCIDR)
    return undefined;
  // Our pods' sources leaving for the peer are translated into these: they must be unicast space.
  const pod = carriedCidr(`${at}remappedPodCIDR`, answer.remappedPodCIDR === notRemapped ? ours.podCIDR : answer.remappedPodCIDR);
  const external = carriedCidr(
    `${at}remappedExternalCIDR`,
    answer.remappedExternalCIDR === notRemapped ? ours.externalCIDR : answer.remappedExternalCIDR,
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

/** Where a family's networks sit in a NetworkConfig (or its answer): its own fields, or under `secondary`. */
type Place = 'own' | 'secondary';

const placeNames: Record<Place, FamilyPlace> = {
  own: { spec: 'spec.', status: 'status.' },
  secondary: { spec: 'spec.secondary.', status: 'status.secondary.' },
};

/** Where the peer's NetworkConfig has its networks of `family`, if it has that family (a text that is no network is refused where it is parsed). */
function placeOfFamily(theirs: NetworkConfigSpec, family: IpFamily): Place | undefined {
  if (networkFamily(theirs.podCIDR) === family) return 'own';
  return theirs.secondary && networkFamily(theirs.secondary.podCIDR) === family ? 'secondary' : undefined;
}

/** The peer's NetworkConfig projected onto one place: that place's networks as its own. */
const projectedSpec = (theirs: NetworkConfigSpec, place: Place): NetworkConfigSpec =>
  place === 'own' ? withoutSecondary(theirs) : { ...withoutSecondary(theirs), ...theirs.secondary! };

/** The peer's answer about the family we have in `place` (an answer mirrors the NetworkConfig it answers). */
const projectedAnswer = (answer: NetworkConfigStatus, place: Place): NetworkConfigStatus | undefined => {
  const part = place === 'own' ? primaryAnswer(answer) : answer.secondary;
  return part && { processed: answer.processed, ...part };
};

/**
 * One round of one peering with what replication brought. A peering carries the families both clusters
 * have, matched by value whatever place each cluster gives them (a dual-stack cluster with IPv4 first
 * peers an IPv6-only one in IPv6): each shared family's step runs on its plane with the documents
 * projected onto it, and the results merge into one NetworkConfig (ours: our families in our places), one
 * answer (theirs: in the places of their NetworkConfig) and one TunnelEndpoint (the peering's first family
 * as its own, the other under `secondary` once both its directions are known). The first family is the
 * first of ours, in our order, whose networks are placed; the peering's state is its. A family the peer
 * lacks keeps nothing of the peer in its plane; a family refused changes nothing in it; a peer sharing no
 * family is refused.
 */
export function reconcilePeering(input: PeeringInput): PeeringStep {
  // Each family's step gets the answer projected onto it, never the whole one.
  const { planes: before, theirAnswer, ...rest } = input;
  const { theirs } = input;
  // A NetworkConfig refused whole changes nothing, as any input refused.
  const refusedWhole = (reason: string): PeeringStep => ({
    planes: before,
    peering: { state: 'refused', clusterId: input.peer, ours: ourSpec(before, rest), reason },
    problems: [reason],
  });
  if (!theirs) {
    // Nothing to match families with yet (or unreadable): every plane stays as it is.
    const waiting = reconcileFamily({ ...rest, ipam: before.primary }, placeNames.own);
    return { planes: before, peering: { ...waiting.peering, ours: ourSpec(before, rest) }, problems: waiting.problems };
  }
  try {
    if (theirs.secondary) requireOtherFamily(['spec.podCIDR', theirs.podCIDR], ['spec.secondary.podCIDR', theirs.secondary.podCIDR]);
    requireTheirEndpoint(theirs.endpoint, input.endpoint);
  } catch (err) {
    return refusedWhole(`NetworkConfig from ${input.peer}: ${message(err)}`);
  }
  // Our families in our order, each with where the peer has it (undefined: it does not).
  const families = planesOf(before).map(([name, plane]) => {
    const family = plane.home.podCIDR.family;
    return {
      name,
      plane,
      family,
      ours: (name === 'primary' ? 'own' : 'secondary') as Place,
      theirs: placeOfFamily(theirs, family),
    };
  });
  const shared = families.filter((f) => f.theirs !== undefined);
  if (shared.length === 0) {
    const ourFamilies = families.map((f) => `IPv${f.family}`).join(' and ');
    const err = new InputError(
      'spec.podCIDR',
      theirs.podCIDR,
      `shares no IP family with this cluster, which has ${ourFamilies}${theirs.secondary ? ` (nor does spec.secondary.podCIDR ${theirs.secondary.podCIDR})` : ''}: a peering carries the families both clusters have`,
    );
    return refusedWhole(`NetworkConfig from ${input.peer}: ${err.message}`);
  }
  let planes = before;
  let answerOfTheirs: Pick<NetworkConfigStatus, 'processed'> & Partial<NetworkConfigStatus> = { processed: true };
  const steps: Peering[] = [];
  const problems: string[] = [];
  for (const f of families) {
    if (f.theirs === undefined) {
      // A family the peer lacks keeps nothing of the peer.
      planes = withPlane(planes, f.name, removePeer(f.plane, input.peer).state);
      continue;
    }
    let projectedTheirAnswer: NetworkConfigStatus | undefined;
    let answerUnreadable: string | undefined;
    try {
      projectedTheirAnswer = theirAnswer && projectedAnswer(theirAnswer, f.ours);
    } catch (err) {
      answerUnreadable = `status from ${input.peer} on our NetworkConfig: ${message(err)}`;
      problems.push(answerUnreadable);
    }
    const step = reconcileFamily(
      {
        ...rest,
        ipam: f.plane,
        theirs: projectedSpec(theirs, f.theirs),
        ...(projectedTheirAnswer ? { theirAnswer: projectedTheirAnswer } : {}),
        // A status that cannot be read at all is said once, by the first family.
        theirAnswerUnreadable: answerUnreadable ?? (steps.length === 0 ? input.theirAnswerUnreadable : undefined),
      },
      { spec: placeNames[f.theirs].spec, status: placeNames[f.ours].status },
    );
    planes = withPlane(planes, f.name, step.ipam);
    problems.push(...step.problems);
    steps.push(step.peering);
    if ('answer' in step.peering) answerOfTheirs = { ...answerOfTheirs, ...answerIn(familyAnswer(step.peering.answer), f.theirs) };
  }
  // The peering's first family is the first, in our order, that is placed (either side may fail to place
  // one family and both still agree on the other); none placed: the first shared one says why.
  const placed = steps.findIndex((p) => p.state === 'remapped' || p.state === 'ready');
  const first = placed < 0 ? 0 : placed;
  const other = steps.find((_, i) => i !== first);
  return { planes, peering: mergeFamilies(steps[first]!, other, ourSpec(planes, rest), answerOfTheirs), problems };
}

/** Our NetworkConfig for the peer: each of our families in its place. */
function ourSpec(
  planes: IpamPlanes,
  { clusterId, peer, endpoint }: Pick<PeeringInput, 'clusterId' | 'peer' | 'endpoint'>,
): NetworkConfigSpec {
  const ours = ourNetworkConfig(planes.primary, clusterId, peer, endpoint);
  return planes.secondary ? { ...ours, secondary: familyNetworks(ourNetworkConfig(planes.secondary, clusterId, peer, endpoint)) } : ours;
}

const withoutSecondary = <T extends { secondary?: unknown }>({ secondary: _secondary, ...rest }: T) => rest;

/** A NetworkConfig's own networks (the family it was projected onto). */
const familyNetworks = (spec: NetworkConfigSpec) => ({ podCIDR: spec.podCIDR, externalCIDR: spec.externalCIDR });

/** The answer's part about one family. */
const familyAnswer = (answer: NetworkConfigStatus): FamilyAnswer => primaryAnswer(withoutSecondary(answer))!;

/** One family's answer in its place of the status. */
const answerIn = (answer: FamilyAnswer, place: Place): Partial<NetworkConfigStatus> => (place === 'own' ? answer : { secondary: answer });

/**
 * The peering's first family's step with the other family's networks and tunnel added where they exist,
 * our whole NetworkConfig, and the answer with every family placed.
 */
function mergeFamilies(first: Peering, other: Peering | undefined, ours: NetworkConfigSpec, answer: NetworkConfigStatus): Peering {
  // A family that cannot be placed leaves the peering single-family, and says why.
  const otherReason = other && 'reason' in other && other.reason !== undefined ? other.reason : undefined;
  const reason = (own?: string) => {
    const reasons = [own, otherReason].filter((r): r is string => r !== undefined);
    return reasons.length > 0 ? { reason: reasons.join('; ') } : {};
  };
  if (first.state === 'waiting-for-peer' || first.state === 'refused') return { ...first, ours };
  if (first.state === 'remapped') return { ...first, ours, answer, ...reason(first.reason) };
  const tunnel = other?.state === 'ready' ? { ...first.tunnel, secondary: familyTunnel(other.tunnel) } : first.tunnel;
  return { ...first, ours, answer, tunnel, ...reason() };
}

/** A TunnelEndpoint's four networks. */
const familyTunnel = (t: TunnelEndpoint) => ({
  remotePodCIDR: t.remotePodCIDR,
  remoteExternalCIDR: t.remoteExternalCIDR,
  localNATPodCIDR: t.localNATPodCIDR,
  localNATExternalCIDR: t.localNATExternalCIDR,
});
