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

/** The cluster's nodes as `spec.nodes` lists them; `clusterPodCIDR` is the NodeDataplane's `spec.podCIDR`. Nodes with bad input are left out (the controller says why, in Events). */
export function nodeList(nodes: readonly V1Node[], clusterPodCIDR: Cidr): ClusterNodeDocument[] {
  return writeClusterNodes(clusterNodeSpecs(clusterNodes(nodes, clusterPodCIDR).nodes.map((n) => n.config)));
}

/** The `spec.podCIDR` text of a NodeDataplane, if it has one. */
export function podCIDRText(object: NodeDataplaneObject): string | undefined {
  const text = (object.spec as { podCIDR?: unknown } | undefined)?.podCIDR;
  return typeof text === 'string' ? text : undefined;
}

/** The cluster PodCIDR from its text; undefined when it is no CIDR (the spec's reader then says why). */
export function parsePodCIDR(text: string | undefined): Cidr | undefined {
  try {
    return text === undefined ? undefined : parseCidr('spec.podCIDR', text);
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
