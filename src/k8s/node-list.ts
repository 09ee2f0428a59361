/**
 * The node list of a NodeDataplane on Kubernetes, where the controller does not store it (a Node added
 * would rewrite every node's object): the Node objects read as the controller reads them
 * (`clusterNodes`), listed as the planner lists them (`clusterNodeSpecs`). The agent adds it to its
 * NodeDataplane before reading it, so its datapath gets the same typed spec as from a spec file; the lab
 * does the same to know which spec an agent should have applied. Pure.
 */
import type { KubernetesObject, V1Node } from '@kubernetes/client-node';
import { type ClusterNodeDocument, writeClusterNodes } from '../api/node-dataplane';
import { type Cidr, parseCidr } from '../net/cidr';
import { clusterNodeSpecs } from '../nodespec/plan';
import { clusterNodes } from './cluster-nodes';

type NodeDataplaneObject = KubernetesObject & { spec?: unknown };

/**
 * The cluster's nodes as `spec.nodes` lists them; `clusterPodCIDRs` are the NodeDataplane's `spec.podCIDR`
 * and `spec.secondary.podCIDR`. Nodes with bad input are left out (the controller says why, in Events).
 */
export function nodeList(nodes: readonly V1Node[], clusterPodCIDRs: readonly Cidr[]): ClusterNodeDocument[] {
  return writeClusterNodes(clusterNodeSpecs(clusterNodes(nodes, clusterPodCIDRs).nodes.map((n) => n.config)));
}

/** The texts of a NodeDataplane's `spec.podCIDR` and `spec.secondary.podCIDR`, as far as it has them, space separated. */
export function podCIDRText(object: NodeDataplaneObject): string | undefined {
  const spec = object.spec as { podCIDR?: unknown; secondary?: { podCIDR?: unknown } } | undefined;
  const texts = [spec?.podCIDR, spec?.secondary?.podCIDR].filter((t): t is string => typeof t === 'string');
  return texts.length > 0 ? texts.join(' ') : undefined;
}

/** The cluster PodCIDRs from `podCIDRText`; undefined when one is no CIDR (the spec's reader then says why). */
export function parsePodCIDR(text: string | undefined): Cidr[] | undefined {
  try {
    return text === undefined ? undefined : text.split(' ').map((t) => parseCidr('spec.podCIDR', t));
  } catch {
    return undefined;
  }
}

/** The object with `spec.nodes` set to `nodes`: on Kubernetes the Node objects are the truth, whatever the object holds. */
export function withNodeList<T extends NodeDataplaneObject>(object: T, nodes: ClusterNodeDocument[]): T {
  return { ...object, spec: { ...(object.spec as object), nodes } };
}

/** The object with the node list made from `nodes` for its own PodCIDR; as it is when it names none (its reader says why). */
export function withNodeListFrom<T extends NodeDataplaneObject>(object: T, nodes: readonly V1Node[]): T {
  const podCIDR = parsePodCIDR(podCIDRText(object));
  return podCIDR === undefined ? object : withNodeList(object, nodeList(nodes, podCIDR));
}
