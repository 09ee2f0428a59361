/**
 * The controller's configuration (docs/lab.md, "Controller"): one YAML or JSON file a person writes,
 * checked whole before anything runs, so a typo is an InputError naming the field and value rather than
 * a controller that peers with the wrong networks. The schema is controller-config-schema.ts; the build
 * compiles the validator this module checks with.
 */
import { InputError } from '../errors';
import { type HomeNetworksSpec, parseFamilies } from './home-networks';
import { carriedCidr, carriedIp, requireUnderlayFamily, underlayIp } from '../net/carried';
import { type Cidr, type Ip, containsIp, formatCidr, formatIp, parseCidr } from '../net/cidr';
import { RangeIndex } from '../net/range-index';
import { checkCompiled } from './compiled-validators';
import { loadYamlFile } from './document';

export type { ControllerConfigDocument } from './controller-config-schema';

export interface NodeConfig {
  name: string;
  underlayAddress: Ip;
  podCIDRs: Cidr[];
  /** Reachable from the other clusters' gateways; preferred when electing the gateway. */
  publicAddress?: Ip;
  /** May be elected the gateway; its agent then reports on a fast heartbeat. */
  gatewayCandidate: boolean;
}

/** An endpoint of `fromPeer` reflected to `to`, both peers of ours (we are their hub). */
export interface ReflectionConfig {
  to: string;
  fromPeer: string;
  /** In fromPeer's own view (its CNI's address), canonical text. */
  podIP: string;
}

export interface ControllerConfig {
  clusterId: string;
  runDir: string;
  home: HomeNetworksSpec;
  peers: string[];
  /** The peers whose traffic the gateways encrypt (IPsec); both clusters of a peering must say so. */
  encryptedPeers: string[];
  reflections: ReflectionConfig[];
  nodes: NodeConfig[];
  /** On Kubernetes: the labels (all of them) that make a Node a gateway candidate. */
  gatewayNodeSelector: Readonly<Record<string, string>>;
  heartbeatTimeout: number;
  interval: number;
  /** The override of the tunnels' MTU handed to every node; absent: each node derives it. */
  tunnelMTU?: number;
}

const defaultRunDir = '/run/strait/lab';
export const defaultHeartbeatTimeout = 1.5;
const defaultInterval = 0.2;
/** A person labels the candidates (`kubectl label node n1 strait.io/gateway-candidate=true`). */
export const defaultGatewayNodeSelector: Readonly<Record<string, string>> = { 'strait.io/gateway-candidate': 'true' };

/** The first index at which `key` repeats an earlier item, with that earlier index. */
function repeated<T>(items: readonly T[], key: (item: T) => string): [number, number] | undefined {
  const first = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    const k = key(item);
    const earlier = first.get(k);
    if (earlier !== undefined) return [i, earlier];
    first.set(k, i);
  }
  return undefined;
}

/**
 * Where the nodes come from: the file itself (the standalone controller), or the cluster's Node objects
 * (the controller on Kubernetes, which fills `nodes` at every reconcile).
 */
export type NodeSource = 'file' | 'kubernetes';

/** Checks a parsed document (the YAML or JSON file's content): the schema, then what it cannot say. */
export function readControllerConfig(value: unknown, nodeSource: NodeSource = 'file'): ControllerConfig {
  const doc = checkCompiled('controllerConfig', value);
  if (nodeSource === 'file' && doc.nodes === undefined)
    throw new InputError('nodes', undefined, 'is required: the standalone controller has no Node objects to read');
  if (nodeSource === 'kubernetes' && doc.nodes !== undefined)
    throw new InputError('nodes', `${doc.nodes.length} nodes`, "come from the cluster's Node objects on Kubernetes; remove them");
  if (nodeSource === 'file' && doc.gatewayNodeSelector !== undefined)
    throw new InputError(
      'gatewayNodeSelector',
      doc.gatewayNodeSelector,
      'selects Node objects on Kubernetes; the standalone controller takes nodes[*].gatewayCandidate',
    );
  const home: HomeNetworksSpec = {
    podCIDR: doc.podCIDR,
    externalCIDR: doc.externalCIDR,
    ...(doc.serviceCIDR !== undefined ? { serviceCIDR: doc.serviceCIDR } : {}),
    ...(doc.secondary !== undefined ? { secondary: doc.secondary } : {}),
    ...(doc.reserved !== undefined ? { reserved: doc.reserved } : {}),
    ...(doc.pools !== undefined ? { pools: doc.pools } : {}),
  };
  // Every node's spec carries these: a family or block the dataplanes cannot carry would have every
  // agent refuse its spec. The IPAM checks the rest again on start; here the file is refused before anything runs.
  for (const field of ['podCIDR', 'externalCIDR', 'serviceCIDR'] as const) {
    if (doc[field] !== undefined) carriedCidr(field, doc[field]);
    if (doc.secondary?.[field] !== undefined) carriedCidr(`secondary.${field}`, doc.secondary[field]);
  }
  const clusterPods = parseFamilies(home).map((family) => family.podCIDR);

  const peerList = doc.peers ?? [];
  const peers = peerList.map((p) => (typeof p === 'string' ? p : p.clusterId));
  const encryptedPeers = peerList.flatMap((p) => (typeof p !== 'string' && p.encryption === 'ipsec' ? [p.clusterId] : []));
  peers.forEach((id, i) => {
    if (id === doc.clusterId) throw new InputError(`peers[${i}]`, id, 'is this cluster; a cluster does not peer with itself');
  });
  const twice = repeated(peers, (id) => id);
  if (twice) throw new InputError(`peers[${twice[0]}]`, peers[twice[0]], 'listed twice');

  const reflections = (doc.reflections ?? []).map((r, i) => {
    for (const key of ['to', 'fromPeer'] as const) {
      if (!peers.includes(r[key]))
        throw new InputError(
          `reflections[${i}].${key}`,
          r[key],
          `is not one of our peers (${peers.join(', ') || 'none'}); only a hub peered with both reflects`,
        );
    }
    if (r.to === r.fromPeer) throw new InputError(`reflections[${i}].to`, r.to, 'equals fromPeer; a peer reaches its own pods directly');
    const podIP = carriedIp(`reflections[${i}].podIP`, r.podIP);
    // Reflected in the IPAM plane of its family: one the cluster has.
    if (!clusterPods.some((pods) => pods.family === podIP.family))
      throw new InputError(`reflections[${i}].podIP`, r.podIP, `is IPv${podIP.family}, a family this cluster has no podCIDR of`);
    return { to: r.to, fromPeer: r.fromPeer, podIP: formatIp(podIP) };
  });
  const sameReflection = repeated(reflections, (r) => `${r.to} ${r.fromPeer} ${r.podIP}`);
  if (sameReflection)
    throw new InputError(
      `reflections[${sameReflection[0]}]`,
      doc.reflections![sameReflection[0]],
      `repeats reflections[${sameReflection[1]}]`,
    );

  const nodes: NodeConfig[] = (doc.nodes ?? []).map((n, i) => ({
    name: n.name,
    underlayAddress: underlayIp(`nodes[${i}].underlayAddress`, n.underlayAddress),
    podCIDRs: (n.podCIDRs ?? []).map((text, j) => {
      const cidr = parseCidr(`nodes[${i}].podCIDRs[${j}]`, text);
      // A node's pods outside the cluster PodCIDR of their family would be neither translated nor routed.
      const inside = clusterPods.find((pods) => containsIp(pods, { family: cidr.family, value: cidr.base }) && cidr.prefix >= pods.prefix);
      if (!inside) {
        const names = clusterPods.map(formatCidr).join(' nor ');
        throw new InputError(`nodes[${i}].podCIDRs[${j}]`, text, `is not inside the cluster podCIDR ${names}`);
      }
      return cidr;
    }),
    ...(n.publicAddress !== undefined ? { publicAddress: underlayIp(`nodes[${i}].publicAddress`, n.publicAddress) } : {}),
    gatewayCandidate: n.gatewayCandidate ?? true,
  }));
  if (nodeSource === 'file' && !nodes.some((n) => n.gatewayCandidate))
    throw new InputError('nodes[*].gatewayCandidate', false, 'no node may be the gateway; at least one must be a candidate');
  const sameName = repeated(nodes, (n) => n.name);
  if (sameName) throw new InputError(`nodes[${sameName[0]}].name`, nodes[sameName[0]]!.name, `repeats nodes[${sameName[1]}].name`);
  // Tunnels and routes to a node go to its underlay address: two nodes on one would get each other's traffic.
  const sameUnderlay = repeated(nodes, (n) => String(n.underlayAddress.value));
  if (sameUnderlay)
    throw new InputError(
      `nodes[${sameUnderlay[0]}].underlayAddress`,
      doc.nodes![sameUnderlay[0]]!.underlayAddress,
      `is also nodes[${sameUnderlay[1]}].underlayAddress`,
    );
  // A cluster's nodes tunnel to each other, and its gateways to peers, over one family: its first node's.
  const underlay = nodes[0]?.underlayAddress;
  if (underlay) {
    const ofFirst = `nodes[0].underlayAddress ${formatIp(underlay)}`;
    nodes.forEach((n, i) => {
      requireUnderlayFamily(`nodes[${i}].underlayAddress`, n.underlayAddress, underlay.family, ofFirst);
      if (n.publicAddress) requireUnderlayFamily(`nodes[${i}].publicAddress`, n.publicAddress, underlay.family, ofFirst);
    });
  }
  const podCIDRs = new RangeIndex<string>();
  nodes.forEach((node, i) =>
    node.podCIDRs.forEach((cidr, j) => {
      const field = `nodes[${i}].podCIDRs[${j}]`;
      const other = podCIDRs.overlapping(cidr)[0];
      if (other !== undefined) throw new InputError(field, formatCidr(cidr), `overlaps ${other}; a pod lives on one node`);
      podCIDRs.add(cidr, `${field} ${formatCidr(cidr)}`);
    }),
  );

  return {
    clusterId: doc.clusterId,
    runDir: doc.runDir ?? defaultRunDir,
    home,
    peers,
    encryptedPeers,
    reflections,
    nodes,
    gatewayNodeSelector: doc.gatewayNodeSelector ?? defaultGatewayNodeSelector,
    heartbeatTimeout: doc.heartbeatTimeout ?? defaultHeartbeatTimeout,
    interval: doc.interval ?? defaultInterval,
    ...(doc.tunnelMTU !== undefined ? { tunnelMTU: doc.tunnelMTU } : {}),
  };
}

/** Reads FILE as YAML 1.2 (JSON is a subset of it) and checks it. */
export const loadControllerConfig = (path: string, nodeSource: NodeSource = 'file'): ControllerConfig =>
  readControllerConfig(loadYamlFile(path, 'config'), nodeSource);
