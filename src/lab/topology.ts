/**
 * The lab topology: clusters of nodes and pods, peerings and reflections, read from YAML. Addresses that
 * a person would only have to compute by hand (pod IPs, underlay and public addresses) are derived, so a
 * topology file states only what a scenario is about.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { InputError } from '../errors';
import { type Cidr, cidrSize, containsIp, formatCidr, formatIp, parseCidr } from '../ipam/cidr';
import { parseClusterId } from '../ipam/cluster-id';

export interface LabPod {
  name: string;
  ip: string;
}

export interface LabNode {
  name: string;
  podCIDR: string;
  underlayAddress: string;
  publicAddress: string;
  pods: LabPod[];
}

export interface LabCluster {
  id: string;
  podCIDR: string;
  externalCIDR: string;
  underlay: string;
  /** Pins the cluster's dataplane whatever `lab up --dataplane` says (a lab of mixed clusters). */
  dataplane?: 'ebpf' | 'kernel';
  nodes: LabNode[];
}

export interface LabReflection {
  /** The cluster that reflects (the hub). */
  hub: string;
  /** The cluster the endpoint is reflected to. */
  to: string;
  /** The reflected pod (in a third cluster). */
  pod: string;
}

export interface LabTopology {
  public: string;
  clusters: LabCluster[];
  peerings: [string, string][];
  /** The peerings whose gateways encrypt (IPsec), as listed in `peerings`. */
  encryptedPeerings: [string, string][];
  reflections: LabReflection[];
}

/** Whether the peering of `a` and `b` is encrypted (either order). */
export const isEncrypted = (topology: LabTopology, a: string, b: string) =>
  topology.encryptedPeerings.some(([x, y]) => (x === a && y === b) || (x === b && y === a));

export const defaultTopologyPath = join(__dirname, '..', '..', '..', 'src', 'lab', 'topologies', 'default.yaml');

// Interface and namespace names are derived from node and pod names: keep them short and plain.
const NAME = /^[a-z][a-z0-9-]{0,10}$/;

function name(field: string, value: unknown): string {
  if (typeof value !== 'string' || !NAME.test(value)) throw new InputError(field, value, 'must be 1-11 characters: a-z, 0-9, -, starting with a letter');
  return value;
}

function list(field: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new InputError(field, value, 'must be a list');
  return value;
}

function object(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError(field, value, 'must be a mapping');
  return value as Record<string, unknown>;
}

/** The n-th host of a network (n from 1), refused when it does not fit. */
function host(field: string, cidr: Cidr, n: number): string {
  if (BigInt(n) >= cidrSize(cidr) - 1n) throw new InputError(field, formatCidr(cidr), `is too small for ${n} hosts`);
  return formatIp({ family: cidr.family, value: cidr.base + BigInt(n) });
}

export function parseTopology(doc: unknown): LabTopology {
  const top = object('topology', doc);
  const publicNet = parseCidr('public', top.public);
  const seen = new Set<string>();
  const unique = (field: string, n: string) => {
    if (seen.has(n)) throw new InputError(field, n, 'is used twice (node, pod and cluster names share one namespace)');
    seen.add(n);
    return n;
  };
  const clusters = list('clusters', top.clusters).map((c, ci): LabCluster => {
    const f = `clusters[${ci}]`;
    const o = object(f, c);
    const podCIDR = parseCidr(`${f}.podCIDR`, o.podCIDR);
    const underlay = parseCidr(`${f}.underlay`, o.underlay);
    parseCidr(`${f}.externalCIDR`, o.externalCIDR);
    const id = unique(`${f}.id`, parseClusterId(`${f}.id`, o.id));
    const nodes = list(`${f}.nodes`, o.nodes).map((n, ni): LabNode => {
      const nf = `${f}.nodes[${ni}]`;
      const no = object(nf, n);
      const nodePods = parseCidr(`${nf}.podCIDR`, no.podCIDR);
      if (!containsIp(podCIDR, { family: nodePods.family, value: nodePods.base })) throw new InputError(`${nf}.podCIDR`, no.podCIDR, `is not inside the cluster's PodCIDR ${formatCidr(podCIDR)}`);
      return {
        name: unique(`${nf}.name`, name(`${nf}.name`, no.name)),
        podCIDR: formatCidr(nodePods),
        underlayAddress: host(`${f}.underlay`, underlay, ni + 1),
        publicAddress: host('public', publicNet, 10 * (ci + 1) + ni + 1),
        pods: list(`${nf}.pods`, no.pods ?? []).map((p, pi) => ({ name: unique(`${nf}.pods[${pi}]`, name(`${nf}.pods[${pi}]`, p)), ip: host(`${nf}.podCIDR`, nodePods, 10 + pi) })),
      };
    });
    if (nodes.length === 0) throw new InputError(`${f}.nodes`, o.nodes, 'a cluster needs at least one node');
    if (o.dataplane !== undefined && o.dataplane !== 'ebpf' && o.dataplane !== 'kernel') throw new InputError(`${f}.dataplane`, o.dataplane, 'must be ebpf or kernel');
    return {
      id,
      podCIDR: formatCidr(podCIDR),
      externalCIDR: formatCidr(parseCidr(`${f}.externalCIDR`, o.externalCIDR)),
      underlay: formatCidr(underlay),
      ...(o.dataplane !== undefined ? { dataplane: o.dataplane } : {}),
      nodes,
    };
  });
  const clusterIds = new Set(clusters.map((c) => c.id));
  const clusterRef = (field: string, v: unknown) => {
    if (typeof v !== 'string' || !clusterIds.has(v)) throw new InputError(field, v, `is not a cluster of the topology (${[...clusterIds].join(', ')})`);
    return v;
  };
  const encryptedPeerings: [string, string][] = [];
  // A peering is `[a, b]`, or `{between: [a, b], encryption: ipsec|none}`.
  const peerings = list('peerings', top.peerings ?? []).map((p, i): [string, string] => {
    let field = `peerings[${i}]`;
    let pairValue = p;
    let encryption: unknown = 'none';
    if (!Array.isArray(p)) {
      const o = object(field, p);
      for (const key of Object.keys(o)) if (key !== 'between' && key !== 'encryption') throw new InputError(`${field}.${key}`, o[key], 'unknown setting; expected between, encryption');
      pairValue = o.between;
      encryption = o.encryption ?? 'none';
      field = `${field}.between`;
      if (encryption !== 'none' && encryption !== 'ipsec') throw new InputError(`peerings[${i}].encryption`, encryption, 'must be none or ipsec');
    }
    const pair = list(field, pairValue);
    if (pair.length !== 2 || pair[0] === pair[1]) throw new InputError(field, pairValue, 'must be two different clusters');
    const peering: [string, string] = [clusterRef(`${field}[0]`, pair[0]), clusterRef(`${field}[1]`, pair[1])];
    if (encryption === 'ipsec') encryptedPeerings.push(peering);
    return peering;
  });
  const peered = (a: string, b: string) => peerings.some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  const podCluster = new Map(clusters.flatMap((c) => c.nodes.flatMap((n) => n.pods.map((p) => [p.name, c.id] as const))));
  const reflections = list('reflections', top.reflections ?? []).map((r, i): LabReflection => {
    const o = object(`reflections[${i}]`, r);
    const hub = clusterRef(`reflections[${i}].hub`, o.hub);
    const to = clusterRef(`reflections[${i}].to`, o.to);
    const from = podCluster.get(o.pod as string);
    if (!from) throw new InputError(`reflections[${i}].pod`, o.pod, 'is not a pod of the topology');
    if (to === from || to === hub || from === hub) throw new InputError(`reflections[${i}]`, r, 'the hub, the cluster reflected to and the pod\'s cluster must be three different clusters');
    if (!peered(hub, to) || !peered(hub, from)) throw new InputError(`reflections[${i}]`, r, `the hub ${hub} must be peered with ${to} and with ${from}`);
    return { hub, to, pod: o.pod as string };
  });
  return { public: formatCidr(publicNet), clusters, peerings, encryptedPeerings, reflections };
}

export function loadTopology(path: string): LabTopology {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError('--topology', path, `cannot be read (${(err as Error).message})`);
  }
  return parseTopology(parseYaml(text));
}

/** Where each pod lives. */
export function findPod(topology: LabTopology, pod: string): { cluster: LabCluster; node: LabNode; pod: LabPod } {
  for (const cluster of topology.clusters) for (const node of cluster.nodes) for (const p of node.pods) if (p.name === pod) return { cluster, node, pod: p };
  throw new InputError('pod', pod, 'is not a pod of the topology');
}
