/**
 * Core v1 Node objects as the cluster's nodes (the NodeConfig the controller's file configuration gives
 * today), pure. What Strait reads from a Node:
 * - name: metadata.name
 * - underlayAddress: the first InternalIP of status.addresses of the cluster's underlay family, a unicast
 *   address: a cluster's tunnels run over one family, IPv4 where any Node has an IPv4 InternalIP (a
 *   dual-stack cluster tunnels over IPv4, whichever family the pods' primary is), else IPv6
 * - podCIDRs: spec.podCIDRs (or the older spec.podCIDR), those of a family the cluster has a PodCIDR of
 *   (both on a dual-stack cluster); another family is not Strait's to route
 * - publicAddress: the annotation strait.io/public-address (reachable from the other clusters' gateways)
 * - ready: the Ready condition is "True" (the kubelet's view; the agent's heartbeat is a second signal)
 * - gatewayCandidate: the labels match the controller's gatewayNodeSelector (by default
 *   strait.io/gateway-candidate=true). Labels rather than an annotation so a person can list the
 *   candidates (`kubectl get nodes -l strait.io/gateway-candidate=true`) and schedule onto them; the
 *   strait.io label takes only the exact values "true" and "false", as Kubernetes' own boolean labels.
 *
 * A Node with bad input in any of these (no InternalIP, a bad or foreign pod CIDR, one overlapping another
 * node's, a bad annotation or label value) is left out whole, with a problem naming the node, the field and
 * the value, for a condition or an Event: a node half read would be routed or elected on a guess.
 */
import type { V1Node } from '@kubernetes/client-node';
import { type NodeConfig, defaultGatewayNodeSelector } from '../api/controller-config';
import { networkFamily } from '../api/secondary-family';
import { InputError } from '../errors';
import { requireUnderlayFamily, underlayIp } from '../net/carried';
import { type Cidr, type IpFamily, containsIp, formatCidr, parseCidr } from '../net/cidr';
import { RangeIndex } from '../net/range-index';

export const publicAddressAnnotation = 'strait.io/public-address';
export const gatewayCandidateLabel = Object.keys(defaultGatewayNodeSelector)[0]!;

interface ClusterNode {
  config: NodeConfig;
  ready: boolean;
  gatewayCandidate: boolean;
}

interface NodeProblem {
  node: string;
  field: string;
  value: unknown;
  reason: string;
  /** "Node <name>: <field>: <reason> (got <value>)". */
  message: string;
}

export interface ClusterNodes {
  /** Sorted by name. */
  nodes: ClusterNode[];
  /** One per Node left out, sorted by node name. */
  problems: NodeProblem[];
}

/**
 * The pod CIDRs of the nodes read so far (all of the cluster's family), owned by the node and its place
 * in name order. The controller and, on Kubernetes, every agent read all Nodes again when one changes:
 * a thousand nodes must not cost a million comparisons each time.
 */
class TakenPodCIDRs {
  private readonly index = new RangeIndex<{ node: string; order: number }>();

  /** The first node in name order whose pod CIDRs overlap `cidr`, if any. */
  overlapping(cidr: Cidr): string | undefined {
    const owners = this.index.overlapping(cidr);
    return owners.length === 0 ? undefined : owners.reduce((a, b) => (b.order < a.order ? b : a)).node;
  }

  /** The CIDRs of a node read whole. They overlap no other node's; two of its own may nest: one range for both. */
  add(cidrs: readonly Cidr[], node: string, order: number): void {
    for (const cidr of cidrs) this.index.add(cidr, { node, order });
  }
}

/** A Node's InternalIP addresses, in its order. */
const internalIps = (node: V1Node): string[] => (node.status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => a.address);

function readNode(
  node: V1Node,
  name: string,
  underlayFamily: IpFamily,
  clusterPodCIDRs: readonly Cidr[],
  selector: Readonly<Record<string, string>>,
  taken: TakenPodCIDRs,
): ClusterNode {
  // A dual-stack node lists an InternalIP per family, its primary first: the one of the cluster's underlay
  // family carries the tunnels, whichever family the pods' primary is (docs/dual-stack.md).
  const addresses = node.status?.addresses ?? [];
  const ofUnderlay = internalIps(node).find((a) => networkFamily(a) === underlayFamily);
  if (!ofUnderlay)
    throw new InputError(
      'status.addresses',
      addresses,
      underlayFamily === 4
        ? "no IPv4 InternalIP: the cluster's tunnels run over IPv4, as other Nodes have one"
        : 'no InternalIP: the tunnels to a node run to one',
    );
  const underlayAddress = underlayIp(`status.addresses[InternalIP]`, ofUnderlay);

  const listed = node.spec?.podCIDRs?.length
    ? node.spec.podCIDRs.map((text, i) => ({ field: `spec.podCIDRs[${i}]`, text }))
    : node.spec?.podCIDR
      ? [{ field: 'spec.podCIDR', text: node.spec.podCIDR }]
      : [];
  const podCIDRs = listed.flatMap(({ field, text }) => {
    const cidr = parseCidr(field, text);
    const ofFamily = clusterPodCIDRs.find((c) => c.family === cidr.family);
    if (!ofFamily) return [];
    // A node's pods outside the cluster PodCIDR would be neither translated nor routed.
    if (cidr.prefix < ofFamily.prefix || !containsIp(ofFamily, { family: cidr.family, value: cidr.base })) {
      throw new InputError(field, text, `is not inside the cluster podCIDR ${formatCidr(ofFamily)}`);
    }
    // A pod lives on one node: the later name is left out, so the answer does not depend on list order.
    const other = taken.overlapping(cidr);
    if (other !== undefined) throw new InputError(field, text, `overlaps the podCIDRs of Node ${other}`);
    return [cidr];
  });

  const annotation = node.metadata?.annotations?.[publicAddressAnnotation];
  const publicField = `metadata.annotations["${publicAddressAnnotation}"]`;
  const publicAddress = annotation === undefined ? undefined : underlayIp(publicField, annotation);
  if (publicAddress) requireUnderlayFamily(publicField, publicAddress, underlayFamily, `the cluster's underlay`);

  const label = node.metadata?.labels?.[gatewayCandidateLabel];
  if (label !== undefined && label !== 'true' && label !== 'false')
    throw new InputError(`metadata.labels["${gatewayCandidateLabel}"]`, label, 'expected "true" or "false"');

  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const labels = node.metadata?.labels ?? {};
  const gatewayCandidate = Object.entries(selector).every(([key, value]) => labels[key] === value);
  return {
    config: { name, underlayAddress, podCIDRs, ...(publicAddress ? { publicAddress } : {}), gatewayCandidate },
    ready,
    gatewayCandidate,
  };
}

/**
 * The cluster's nodes from its Node objects; `clusterPodCIDRs` are the controller's configured PodCIDRs
 * (the primary family's first), `gatewayNodeSelector` the labels of a gateway candidate.
 */
export function clusterNodes(
  nodes: readonly V1Node[],
  clusterPodCIDRs: readonly Cidr[],
  gatewayNodeSelector: Readonly<Record<string, string>> = defaultGatewayNodeSelector,
): ClusterNodes {
  const out: ClusterNode[] = [];
  const problems: NodeProblem[] = [];
  const taken = new TakenPodCIDRs();
  // One family for every Node, whatever their order: IPv4 when any Node can tunnel over it.
  const underlayFamily: IpFamily = nodes.some((n) => internalIps(n).some((a) => networkFamily(a) === 4)) ? 4 : 6;
  const byName = [...nodes].sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  for (const node of byName) {
    const name = node.metadata?.name ?? '';
    try {
      const read = readNode(node, name, underlayFamily, clusterPodCIDRs, gatewayNodeSelector, taken);
      taken.add(read.config.podCIDRs, name, out.length);
      out.push(read);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      problems.push({ node: name, field: err.field, value: err.value, reason: err.reason, message: `Node ${name}: ${err.message}` });
    }
  }
  return { nodes: out, problems };
}
