/**
 * The Kubernetes side of a reconcile, pure: the strait.io objects a controller wants in its own API
 * server and in each peer's, the ExchangeView read back from the NetworkConfigs there, and the writes
 * that turn what a cache holds into what is wanted. The controller's Kubernetes adapter runs these
 * writes; ../files/exchange.ts is the same for the run directory.
 *
 * Who writes what (docs/kubernetes.md): a NetworkConfig `<owner>.<recipient>` lives in the recipient's
 * API server; its spec is written by the owner's controller, its status by the recipient's. Everything
 * else a controller writes is in its own API server and carries `managedBy`, so what it no longer
 * wants is found and deleted, and nothing it did not write is ever touched.
 */
import { isDeepStrictEqual } from 'node:util';
import { type FamilyAnswer, type NetworkConfigStatus, readNetworkConfigSpec, readNetworkConfigStatus } from '../../api/network-config';
import type { IpamState } from '../../network-ipam/state';
import type { IpamPlanes } from '../../network-ipam/planes';
import { cidrsEqual, formatCidr } from '../../net/cidr';
import { writeGateways, writeNodeDataplaneObjectSpec } from '../../api/node-dataplane';
import { notRemapped } from '../../api/not-remapped';
import { apiVersion, networkConfigNames, nodeDataplaneNames, straitGatewayNames, tunnelEndpointNames } from '../../api/resource-names';
import { type TunnelEndpoint, writeTunnelEndpoint } from '../../api/tunnel-endpoint';
import { InputError } from '../../errors';
import { type ExchangeView, emptyExchange } from '../exchange-view';
import type { ReconcileResult } from '../reconcile';

/** The label on every object a Strait controller owns (the standard label, with the writer's name). */
const managedByLabel = 'app.kubernetes.io/managed-by';
const managedBy = 'strait-controller';
/** The cluster whose controller wrote the object: a peer's controller writes into our API server too. */
const clusterLabel = 'strait.io/cluster-id';

/** An object as the API server returns it; only what these planners read. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: unknown;
  status?: unknown;
}

export interface WantedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels: Record<string, string> };
  spec: unknown;
}

export type ObjectWrite =
  | { op: 'create'; object: WantedObject }
  /** An apply of the spec and our labels, with the resourceVersion read (a 409 means: read again). */
  | { op: 'update'; object: WantedObject; resourceVersion: string }
  | { op: 'delete'; name: string; resourceVersion: string };

export const networkConfigName = (owner: string, recipient: string) => `${owner}.${recipient}`;

function wanted(kind: string, name: string, clusterId: string, spec: unknown): WantedObject {
  return { apiVersion, kind, metadata: { name, labels: { [managedByLabel]: managedBy, [clusterLabel]: clusterId } }, spec };
}

/** Whether the controller of `clusterId` wrote the object (objects of others are never written). */
export function ownedBy(object: KubeObject, clusterId: string): boolean {
  const labels = object.metadata.labels ?? {};
  return labels[managedByLabel] === managedBy && labels[clusterLabel] === clusterId;
}

/**
 * The writes that make one kind's objects what is wanted: create what is missing, update what differs
 * (spec or our labels), delete what we own and no longer want. An object of the same name that we do
 * not own is left alone and reported: taking it over could undo another writer's work.
 */
export function objectWrites(
  wantedObjects: readonly WantedObject[],
  existing: readonly KubeObject[],
  clusterId: string,
): { writes: ObjectWrite[]; conflicts: string[] } {
  const byName = new Map(existing.map((o) => [o.metadata.name, o]));
  const writes: ObjectWrite[] = [];
  const conflicts: string[] = [];
  const wantedNames = new Set<string>();
  for (const object of wantedObjects) {
    wantedNames.add(object.metadata.name);
    const current = byName.get(object.metadata.name);
    if (!current) {
      writes.push({ op: 'create', object });
    } else if (!ownedBy(current, clusterId)) {
      conflicts.push(`${object.kind} ${object.metadata.name}: exists and is not managed by the controller of ${clusterId}; left as it is`);
    } else if (!isDeepStrictEqual(current.spec, object.spec)) {
      writes.push({ op: 'update', object, resourceVersion: current.metadata.resourceVersion ?? '' });
    }
  }
  for (const current of existing) {
    if (wantedNames.has(current.metadata.name) || !ownedBy(current, clusterId)) continue;
    writes.push({ op: 'delete', name: current.metadata.name, resourceVersion: current.metadata.resourceVersion ?? '' });
  }
  return { writes, conflicts };
}

/**
 * What one reconcile wants in our own API server, by kind. A NodeDataplane holds neither the node list
 * nor the gateways: each agent makes the list from the Node objects (k8s/node-list.ts) and reads the
 * gateways, ours and each peer's, from the one StraitGateway named after the cluster
 * (k8s/gateway-view.ts). So a Node added, changed or removed rewrites only the NodeDataplanes whose own
 * content changed, and a gateway move, here or in a peer, is one write.
 */
export function localObjects(
  result: ReconcileResult,
  clusterId: string,
): { gateways: WantedObject[]; nodeDataplanes: WantedObject[]; tunnelEndpoints: WantedObject[] } {
  const specs = [...result.nodeSpecs.values()];
  const tunnels = tunnelsByPeer(result);
  return {
    // The same in every node's spec; none without nodes.
    gateways: specs.slice(0, 1).map((spec) => wanted(straitGatewayNames.kind, clusterId, clusterId, writeGateways(spec))),
    nodeDataplanes: specs.map((spec) => wanted(nodeDataplaneNames.kind, spec.node.name, clusterId, writeNodeDataplaneObjectSpec(spec))),
    // One per configured peer, ready or not: its status says why not (peering-conditions.ts).
    tunnelEndpoints: result.status.peers.map(({ clusterId: peer }) => {
      const tunnel = tunnels.get(peer);
      return wanted(tunnelEndpointNames.kind, peer, clusterId, tunnel ? writeTunnelEndpoint(tunnel) : { clusterId: peer });
    }),
  };
}

/** The established peerings' tunnels by peer: looked up once per configured peer (a thousand peers). */
export const tunnelsByPeer = (result: ReconcileResult): Map<string, TunnelEndpoint> => new Map(result.tunnels.map((t) => [t.clusterId, t]));

/** Our NetworkConfig for each peer, to be written into that peer's API server. */
export function peerNetworkConfigs(result: ReconcileResult, clusterId: string): Map<string, WantedObject> {
  const objects = new Map<string, WantedObject>();
  for (const [peer, spec] of result.ourNetworkConfigs)
    objects.set(peer, wanted(networkConfigNames.kind, networkConfigName(clusterId, peer), clusterId, spec));
  return objects;
}

/** Our answers, as the status of each peer's NetworkConfig in our API server, by object name. */
export function answerStatuses(result: ReconcileResult, clusterId: string): Map<string, NetworkConfigStatus> {
  const statuses = new Map<string, NetworkConfigStatus>();
  for (const [peer, answer] of result.answers) statuses.set(networkConfigName(peer, clusterId), answer);
  return statuses;
}

function checked<T>(read: () => T, problems: string[], where: string): T | undefined {
  try {
    return read();
  } catch (err) {
    problems.push(`${where}: ${(err as Error).message}`);
    return undefined;
  }
}

/**
 * The peer's answer to our NetworkConfig as our IPAM recorded it (its view of our networks), or
 * undefined when it never answered. What to go on while the peer's API server has not been read: a new
 * leader, or a peer whose API server is down, must not tear down a peering that works.
 */
function recordedAnswer(ipam: IpamPlanes | undefined, peer: string): NetworkConfigStatus | undefined {
  if (!ipam) return undefined;
  // In the places of our NetworkConfig: the primary family's as the answer's own fields, the secondary's under it.
  const primary = recordedFamilyAnswer(ipam.primary, peer);
  const secondary = ipam.secondary && recordedFamilyAnswer(ipam.secondary, peer);
  if (!primary && !secondary) return undefined;
  return { processed: true, ...primary, ...(secondary ? { secondary } : {}) };
}

/** One plane's part of `recordedAnswer`. */
function recordedFamilyAnswer(plane: IpamState, peer: string): FamilyAnswer | undefined {
  const record = plane.peers.get(peer);
  if (!record?.localNATPodCIDR || !record.localNATExternalCIDR) return undefined;
  const { podCIDR, externalCIDR } = plane.home;
  return {
    remappedPodCIDR: cidrsEqual(record.localNATPodCIDR, podCIDR) ? notRemapped : formatCidr(record.localNATPodCIDR),
    remappedExternalCIDR: cidrsEqual(record.localNATExternalCIDR, externalCIDR) ? notRemapped : formatCidr(record.localNATExternalCIDR),
    observed: { podCIDR: formatCidr(podCIDR), externalCIDR: formatCidr(externalCIDR) },
  };
}

/** Our NetworkConfig in a peer's API server: the object (undefined: not there), or `unread` when that server has not been read yet. */
export type OursInPeer = KubeObject | undefined | 'unread';

/**
 * The exchange as the API servers hold it: `local` are the NetworkConfigs in our API server (the peers'
 * offers to us), `ours` our NetworkConfig in each peer's API server as last read; for one not read yet,
 * the answer our IPAM recorded stands. An object whose name does not match its spec is a problem, not an offer.
 */
export function exchangeFromObjects(
  local: readonly KubeObject[],
  ours: ReadonlyMap<string, OursInPeer>,
  clusterId: string,
  ipam: IpamPlanes | undefined,
): ExchangeView {
  const view = emptyExchange();
  for (const object of local) {
    const where = `NetworkConfig ${object.metadata.name}`;
    const spec = checked(() => readNetworkConfigSpec(object.spec), view.problems, where);
    if (!spec) continue;
    if (spec.remoteClusterId !== clusterId) continue; // another recipient's: not ours to read
    if (object.metadata.name !== networkConfigName(spec.clusterId, clusterId)) {
      view.problems.push(
        `${where}: ${new InputError('metadata.name', object.metadata.name, `expected ${networkConfigName(spec.clusterId, clusterId)} for spec.clusterId ${spec.clusterId}`).message}`,
      );
      continue;
    }
    if (spec.clusterId === clusterId) continue;
    view.specsForUs.set(spec.clusterId, spec);
  }
  for (const [peer, object] of ours) {
    if (object === 'unread') {
      const recorded = recordedAnswer(ipam, peer);
      if (recorded) view.statusesOfOurs.set(peer, recorded);
      continue;
    }
    if (object?.status === undefined) continue;
    const status = checked(
      () => readNetworkConfigStatus(object.status),
      view.problems,
      `NetworkConfig ${networkConfigName(clusterId, peer)} in ${peer}`,
    );
    if (status) view.statusesOfOurs.set(peer, status);
  }
  return view;
}
