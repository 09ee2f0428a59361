/**
 * Garbage collection of given addresses (the source document's "IP Garbage Collection"), pure: which
 * IPClaims to release and which StraitEndpoints are outdated, from what the API server holds now.
 *
 * A node collects the claims of its own pods, and those of nodes that are gone or not Ready (their own
 * service cannot): two nodes releasing the same claim is harmless, each delete carries the claim's uid.
 * A StatefulSet pod's claim is never released while the StatefulSet exists and the pod's ordinal is below
 * its replicas, whatever its pod is doing (gone, terminating, recreated elsewhere): its next incarnation
 * takes the address over (Spiderpool #2526 and #3751 gave duplicate addresses exactly there).
 */
import type { Claim } from './claim';

export interface GcPod {
  uid: string;
  nodeName: string;
  phase: string;
  /** ms since the epoch: when its grace period ends (metadata.deletionTimestamp), if it is terminating. */
  deletionTimestamp?: number;
}

export interface GcEndpoint {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  podUID: string;
  created: number;
}

export interface GcSettings {
  /** A stateless pod terminating on a Ready node is released this long after its grace period (Spiderpool: SPIDERPOOL_GC_ADDITIONAL_GRACE_DELAY). */
  additionalGraceDelayMs: number;
  /** Release stateless pods terminating past their grace period on a Ready node (a pod stuck; the runtime never called DEL). */
  terminatingOnReadyNode: boolean;
  /** Release stateless pods terminating past their grace period on a node not Ready (the node is down). */
  terminatingOnNotReadyNode: boolean;
  /** How long an address that another host answered for stays held. */
  conflictHoldMs: number;
  /** A claim or StraitEndpoint younger than this is kept when its pod is unknown or another incarnation (the pod informer may lag an ADD). */
  freshMs: number;
  /** Delete StraitEndpoints no claim refers to. */
  cleanOutdatedEndpoints: boolean;
}

export const defaultGcSettings: GcSettings = {
  additionalGraceDelayMs: 5_000,
  terminatingOnReadyNode: true,
  terminatingOnNotReadyNode: true,
  conflictHoldMs: 10 * 60_000,
  freshMs: 60_000,
  cleanOutdatedEndpoints: true,
};

export interface GcInput {
  node: string;
  now: number;
  claims: readonly Claim[];
  endpoints: readonly GcEndpoint[];
  /** By `namespace/name`. */
  pods: ReadonlyMap<string, GcPod>;
  /** Ready per node name (a node absent from the map is gone). */
  nodes: ReadonlyMap<string, boolean>;
  /** Replicas per `namespace/name`. */
  statefulSets: ReadonlyMap<string, number>;
  /** Uids of pods seen deleted (a watch event): their claims go at once, however fresh. */
  deletedPods?: ReadonlySet<string>;
  settings: GcSettings;
}

export interface GcPlan {
  release: { claim: Claim; reason: string }[];
  deleteEndpoints: { endpoint: GcEndpoint; reason: string }[];
}

/** Whether this node collects for `node`: its own, or one that is gone or not Ready. */
const collectsFor = (input: Pick<GcInput, 'node' | 'nodes'>, node: string) => node === input.node || input.nodes.get(node) !== true;

/** A StatefulSet pod `<set>-<ordinal>`: why its address is no longer kept, or undefined while it is. */
export function statefulSetGone(
  statefulSets: ReadonlyMap<string, number>,
  namespace: string,
  setName: string,
  podName: string,
): string | undefined {
  const replicas = statefulSets.get(`${namespace}/${setName}`);
  if (replicas === undefined) return `StatefulSet ${namespace}/${setName} is gone`;
  const ordinal = podName.startsWith(`${setName}-`) ? Number(podName.slice(setName.length + 1)) : NaN;
  if (!Number.isInteger(ordinal)) return `pod ${namespace}/${podName} is not an ordinal pod of StatefulSet ${setName}`;
  if (ordinal >= replicas) return `StatefulSet ${namespace}/${setName} has ${replicas} replicas, below ordinal ${ordinal}`;
  return undefined;
}

/** Why the claim is released now, or undefined to keep it. */
function claimReleaseReason(input: GcInput, claim: Claim): string | undefined {
  const { now, settings } = input;
  if (claim.conflict)
    return now >= claim.conflict.detectedAt + settings.conflictHoldMs
      ? `the conflict seen ${Math.round((now - claim.conflict.detectedAt) / 1000)} s ago is over its hold`
      : undefined;
  const key = `${claim.podNamespace}/${claim.podName}`;
  if (claim.owner?.kind === 'StatefulSet') return statefulSetGone(input.statefulSets, claim.podNamespace, claim.owner.name, claim.podName);
  const pod = input.pods.get(key);
  if (!pod) return input.deletedPods?.has(claim.podUID) || now - claim.created >= settings.freshMs ? `pod ${key} is gone` : undefined;
  // A fresh claim of another uid may be the next incarnation's, made while the informer still holds the last.
  if (pod.uid !== claim.podUID)
    return now - claim.created >= settings.freshMs
      ? `pod ${key} is a new incarnation (uid ${pod.uid}, the address was given to ${claim.podUID})`
      : undefined;
  if (pod.phase === 'Succeeded' || pod.phase === 'Failed') return `pod ${key} has ${pod.phase}`;
  if (pod.deletionTimestamp === undefined) return undefined;
  const ready = input.nodes.get(pod.nodeName) === true;
  if (ready) {
    const due = pod.deletionTimestamp + settings.additionalGraceDelayMs;
    return settings.terminatingOnReadyNode && now >= due
      ? `pod ${key} is terminating ${Math.round((now - pod.deletionTimestamp) / 1000)} s past its grace period on Ready node ${pod.nodeName}`
      : undefined;
  }
  return settings.terminatingOnNotReadyNode && now >= pod.deletionTimestamp
    ? `pod ${key} is terminating past its grace period on node ${pod.nodeName}, which is not Ready`
    : undefined;
}

export function planGarbageCollection(input: GcInput): GcPlan {
  const release: GcPlan['release'] = [];
  const kept = new Set<string>();
  for (const claim of input.claims) {
    if (!collectsFor(input, claim.node)) {
      if (!claim.conflict) kept.add(`${claim.podNamespace}/${claim.podName}`);
      continue;
    }
    const reason = claimReleaseReason(input, claim);
    if (reason !== undefined) release.push({ claim, reason });
    else if (!claim.conflict) kept.add(`${claim.podNamespace}/${claim.podName}`);
  }
  const deleteEndpoints: GcPlan['deleteEndpoints'] = [];
  if (input.settings.cleanOutdatedEndpoints) {
    for (const endpoint of input.endpoints) {
      const key = `${endpoint.namespace}/${endpoint.name}`;
      const fresh = input.now - endpoint.created < input.settings.freshMs && !input.deletedPods?.has(endpoint.podUID);
      if (kept.has(key) || !collectsFor(input, endpoint.node) || fresh) continue;
      deleteEndpoints.push({ endpoint, reason: `no address is given to pod ${key} any more` });
    }
  }
  return { release, deleteEndpoints };
}
