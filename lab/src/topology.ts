/**
 * The lab topology: clusters of nodes and pods, peerings and reflections, read from YAML. Addresses that
 * a person would only have to compute by hand (pod IPs, underlay and public addresses) are derived, so a
 * topology file states only what a scenario is about. The file is checked by the validator the build
 * compiled from topology-schema.ts (lab/src/write-validators.ts), then for what a schema cannot say.
 */
import { compiledChecker } from '../../src/api/compiled-validators';
import { loadYamlFile } from '../../src/api/document';
import { InputError } from '../../src/errors';
import { requireOtherFamily } from '../../src/api/secondary-family';
import { type Cidr, cidrSize, containsIp, formatCidr, formatIp, parseCidr } from '../../src/net/cidr';
import { defaultMtu } from './link-mtu';
import type { LabTopologyDocument } from './topology-schema';

/** The lab's validators (one: the topology's), loaded at the first check. */
export interface LabValidatorTypes {
  labTopology: LabTopologyDocument;
}

const checkLabDocument = compiledChecker<LabValidatorTypes>((name) => require(`./generated-validators/${name}.js`));

export interface LabPod {
  name: string;
  ip: string;
  /** Dual-stack: the pod's IPv6 address. */
  secondaryIp?: string;
}

export interface LabNode {
  name: string;
  podCIDR: string;
  /** Dual-stack: the node's IPv6 pod network. */
  secondaryPodCIDR?: string;
  underlayAddress: string;
  publicAddress: string;
  pods: LabPod[];
}

export interface LabCluster {
  id: string;
  podCIDR: string;
  externalCIDR: string;
  /** Where the cluster's ClusterSetIPs come from (required where the lab has services). */
  serviceCIDR?: string;
  /** Dual-stack: the cluster's IPv6 networks (docs/dual-stack.md). */
  secondary?: { podCIDR: string; externalCIDR: string; serviceCIDR?: string };
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

/** A service exported by a cluster (docs/services.md), its endpoints some of the cluster's pods. */
export interface LabService {
  name: string;
  namespace: string;
  cluster: string;
  pods: string[];
}

export interface LabTopology {
  public: string;
  /** The MTU of every link of the lab: underlay, public network and pods (both ends of each veth). */
  mtu: number;
  clusters: LabCluster[];
  peerings: [string, string][];
  /** The peerings whose gateways encrypt (IPsec), as listed in `peerings`. */
  encryptedPeerings: [string, string][];
  reflections: LabReflection[];
  services: LabService[];
}

/** Whether the peering of `a` and `b` is encrypted (either order). */
export const isEncrypted = (topology: LabTopology, a: string, b: string) =>
  topology.encryptedPeerings.some(([x, y]) => (x === a && y === b) || (x === b && y === a));

/** The n-th host of a network (n from 1), refused when it does not fit. */
function host(field: string, cidr: Cidr, n: number): string {
  if (BigInt(n) >= cidrSize(cidr) - 1n) throw new InputError(field, formatCidr(cidr), `is too small for ${n} hosts`);
  return formatIp({ family: cidr.family, value: cidr.base + BigInt(n) });
}

export function parseTopology(value: unknown): LabTopology {
  const doc = checkLabDocument('labTopology', value);
  const publicNet = parseCidr('public', doc.public);
  const seen = new Set<string>();
  const unique = (field: string, n: string) => {
    if (seen.has(n)) throw new InputError(field, n, 'is used twice (node, pod and cluster names share one namespace)');
    seen.add(n);
    return n;
  };
  const clusters = doc.clusters.map((c, ci): LabCluster => {
    const f = `clusters[${ci}]`;
    const podCIDR = parseCidr(`${f}.podCIDR`, c.podCIDR);
    const secondary = c.secondary && {
      podCIDR: parseCidr(`${f}.secondary.podCIDR`, c.secondary.podCIDR),
      externalCIDR: parseCidr(`${f}.secondary.externalCIDR`, c.secondary.externalCIDR),
      ...(c.secondary.serviceCIDR !== undefined ? { serviceCIDR: parseCidr(`${f}.secondary.serviceCIDR`, c.secondary.serviceCIDR) } : {}),
    };
    const serviceCIDR = c.serviceCIDR === undefined ? undefined : parseCidr(`${f}.serviceCIDR`, c.serviceCIDR);
    if (serviceCIDR && serviceCIDR.family !== podCIDR.family)
      throw new InputError(`${f}.serviceCIDR`, c.serviceCIDR, `is not of the family of podCIDR ${c.podCIDR}`);
    if (secondary?.serviceCIDR && secondary.serviceCIDR.family !== secondary.podCIDR.family)
      throw new InputError(`${f}.secondary.serviceCIDR`, c.secondary!.serviceCIDR, `is not of the family of secondary.podCIDR`);
    if (secondary) requireOtherFamily([`${f}.podCIDR`, podCIDR], [`${f}.secondary.podCIDR`, secondary.podCIDR]);
    const underlay = parseCidr(`${f}.underlay`, c.underlay);
    // A cluster's nodes and gateways tunnel over one family (src/net/carried.ts): the lab's, its public network's.
    if (underlay.family !== publicNet.family)
      throw new InputError(
        `${f}.underlay`,
        c.underlay,
        `is IPv${underlay.family}, not the family of public ${doc.public}: a lab's tunnels run over one family`,
      );
    const id = unique(`${f}.id`, c.id);
    /** A node's pod network, inside the cluster's of its family. */
    const nodePodCIDR = (field: string, text: string, cluster: Cidr, clusterField: string) => {
      const cidr = parseCidr(field, text);
      if (!containsIp(cluster, { family: cidr.family, value: cidr.base }))
        throw new InputError(field, text, `is not inside the cluster's ${clusterField} ${formatCidr(cluster)}`);
      return cidr;
    };
    const nodes = c.nodes.map((n, ni): LabNode => {
      const nf = `${f}.nodes[${ni}]`;
      const nodePods = nodePodCIDR(`${nf}.podCIDR`, n.podCIDR, podCIDR, 'PodCIDR');
      if (secondary && n.secondaryPodCIDR === undefined)
        throw new InputError(`${nf}.secondaryPodCIDR`, undefined, 'is required: the cluster is dual-stack');
      if (!secondary && n.secondaryPodCIDR !== undefined)
        throw new InputError(`${nf}.secondaryPodCIDR`, n.secondaryPodCIDR, `needs ${f}.secondary: the cluster is single-stack`);
      const nodePods6 = secondary && nodePodCIDR(`${nf}.secondaryPodCIDR`, n.secondaryPodCIDR!, secondary.podCIDR, 'secondary PodCIDR');
      return {
        name: unique(`${nf}.name`, n.name),
        podCIDR: formatCidr(nodePods),
        ...(nodePods6 ? { secondaryPodCIDR: formatCidr(nodePods6) } : {}),
        underlayAddress: host(`${f}.underlay`, underlay, ni + 1),
        publicAddress: host('public', publicNet, 10 * (ci + 1) + ni + 1),
        pods: (n.pods ?? []).map((p, pi) => ({
          name: unique(`${nf}.pods[${pi}]`, p),
          ip: host(`${nf}.podCIDR`, nodePods, 10 + pi),
          ...(nodePods6 ? { secondaryIp: host(`${nf}.secondaryPodCIDR`, nodePods6, 10 + pi) } : {}),
        })),
      };
    });
    return {
      id,
      podCIDR: formatCidr(podCIDR),
      externalCIDR: formatCidr(parseCidr(`${f}.externalCIDR`, c.externalCIDR)),
      ...(serviceCIDR ? { serviceCIDR: formatCidr(serviceCIDR) } : {}),
      ...(secondary
        ? {
            secondary: {
              podCIDR: formatCidr(secondary.podCIDR),
              externalCIDR: formatCidr(secondary.externalCIDR),
              ...(secondary.serviceCIDR ? { serviceCIDR: formatCidr(secondary.serviceCIDR) } : {}),
            },
          }
        : {}),
      underlay: formatCidr(underlay),
      ...(c.dataplane ? { dataplane: c.dataplane } : {}),
      nodes,
    };
  });
  const clusterIds = new Set(clusters.map((c) => c.id));
  const clusterRef = (field: string, v: string) => {
    if (!clusterIds.has(v)) throw new InputError(field, v, `is not a cluster of the topology (${[...clusterIds].join(', ')})`);
    return v;
  };
  const encryptedPeerings: [string, string][] = [];
  // A peering is `[a, b]`, or `{between: [a, b], encryption: ipsec|none}`.
  const peerings = (doc.peerings ?? []).map((p, i): [string, string] => {
    const [field, pair, encryption] = Array.isArray(p)
      ? [`peerings[${i}]`, p, 'none']
      : [`peerings[${i}].between`, p.between, p.encryption ?? 'none'];
    if (pair[0] === pair[1]) throw new InputError(field, pair, 'must be two different clusters');
    const peering: [string, string] = [clusterRef(`${field}[0]`, pair[0]!), clusterRef(`${field}[1]`, pair[1]!)];
    if (encryption === 'ipsec') encryptedPeerings.push(peering);
    return peering;
  });
  const peered = (a: string, b: string) => peerings.some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  const podCluster = new Map(clusters.flatMap((c) => c.nodes.flatMap((n) => n.pods.map((p) => [p.name, c.id] as const))));
  const reflections = (doc.reflections ?? []).map((r, i): LabReflection => {
    const hub = clusterRef(`reflections[${i}].hub`, r.hub);
    const to = clusterRef(`reflections[${i}].to`, r.to);
    const from = podCluster.get(r.pod);
    if (!from) throw new InputError(`reflections[${i}].pod`, r.pod, 'is not a pod of the topology');
    if (to === from || to === hub || from === hub)
      throw new InputError(
        `reflections[${i}]`,
        r,
        "the hub, the cluster reflected to and the pod's cluster must be three different clusters",
      );
    if (!peered(hub, to) || !peered(hub, from))
      throw new InputError(`reflections[${i}]`, r, `the hub ${hub} must be peered with ${to} and with ${from}`);
    return { hub, to, pod: r.pod };
  });
  const services = (doc.services ?? []).map((s, i): LabService => {
    const cluster = clusterRef(`services[${i}].cluster`, s.cluster);
    s.pods.forEach((pod, p) => {
      if (podCluster.get(pod) !== cluster) throw new InputError(`services[${i}].pods[${p}]`, pod, `is not a pod of cluster ${cluster}`);
    });
    return { name: s.name, namespace: s.namespace ?? 'default', cluster, pods: s.pods };
  });
  const exported = new Set<string>();
  services.forEach((s, i) => {
    const key = `${s.cluster} ${s.namespace}/${s.name}`;
    if (exported.has(key)) throw new InputError(`services[${i}]`, `${s.namespace}/${s.name}`, `is exported twice by ${s.cluster}`);
    exported.add(key);
  });
  // Every cluster imports (its own exports, its peers'): each needs a service network per family to take ClusterSetIPs from.
  if (services.length > 0)
    clusters.forEach((c, ci) => {
      if (!c.serviceCIDR) throw new InputError(`clusters[${ci}].serviceCIDR`, undefined, 'is required where the lab has services');
      if (c.secondary && !c.secondary.serviceCIDR)
        throw new InputError(`clusters[${ci}].secondary.serviceCIDR`, undefined, 'is required where a dual-stack lab has services');
    });
  return { public: formatCidr(publicNet), mtu: doc.mtu ?? defaultMtu, clusters, peerings, encryptedPeerings, reflections, services };
}

export const loadTopology = (path: string): LabTopology => parseTopology(loadYamlFile(path, '--topology'));

/** Where each pod lives. */
export function findPod(topology: LabTopology, pod: string): { cluster: LabCluster; node: LabNode; pod: LabPod } {
  for (const cluster of topology.clusters)
    for (const node of cluster.nodes) for (const p of node.pods) if (p.name === pod) return { cluster, node, pod: p };
  throw new InputError('pod', pod, 'is not a pod of the topology');
}

/** Where a node is; `field` names the option or field that gave its name, for the error. */
export function findNode(topology: LabTopology, name: string, field = '--node'): { cluster: LabCluster; node: LabNode } {
  for (const cluster of topology.clusters) for (const node of cluster.nodes) if (node.name === name) return { cluster, node };
  throw new InputError(
    field,
    name,
    `is not a node of the topology (${topology.clusters.flatMap((c) => c.nodes.map((n) => n.name)).join(', ')})`,
  );
}
