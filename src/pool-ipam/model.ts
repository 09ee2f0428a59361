/**
 * The pool IPAM's view of the world, parsed and checked (src/api/pool-ipam-objects.ts turns the strait.io
 * objects into these): the pure core (candidates, filter, sort, pick) works on these alone.
 */
import type { Cidr, Ip, IpFamily } from '../net/cidr';

/** metav1.LabelSelector: every matchLabels pair and every expression must hold (empty selects all). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** An inclusive range of addresses of one family. */
export interface IpRange {
  family: IpFamily;
  first: bigint;
  last: bigint;
}

export interface Route {
  dst: Cidr;
  gw?: Ip;
}

/** The addresses a StraitIPPool or a StraitSubnet holds, and what is handed to pods with them. */
interface Addressing {
  name: string;
  family: IpFamily;
  subnet: Cidr;
  /** `spec.ips` (addresses and ranges, inside `subnet`), sorted and merged. */
  ips: readonly IpRange[];
  /** `spec.excludeIPs`, sorted and merged. */
  excludeIps: readonly IpRange[];
  gateway?: Ip;
  routes: readonly Route[];
  vlan?: number;
}

export interface Pool extends Addressing {
  /** A cluster default pool (rule 5). */
  default: boolean;
  disable: boolean;
  /** metadata.deletionTimestamp is set: nothing more is allocated from it, releases still are. */
  terminating: boolean;
  /** Empty: any (the same for the other lists). */
  nodeName: readonly string[];
  nodeAffinity?: LabelSelector;
  namespaceName: readonly string[];
  namespaceAffinity?: LabelSelector;
  podAffinity?: LabelSelector;
  multusName: readonly string[];
  /** Per-pool switches of the probes; undefined: the network configuration decides. */
  detectConflict?: boolean;
  detectGateway?: boolean;
}

/** The controller of a pod (its controller ownerReference; for a ReplicaSet, the Deployment above it when known). */
export interface ApplicationRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

/** A StraitSubnet: the addresses application pools are carved from. */
export type Subnet = Addressing;

/** What the rules read about the pod being given addresses. */
export interface PodContext {
  namespace: string;
  name: string;
  uid: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  nodeName: string;
  nodeLabels: Readonly<Record<string, string>>;
  namespaceLabels: Readonly<Record<string, string>>;
  namespaceAnnotations: Readonly<Record<string, string>>;
  /** The pod's controller, if any (a StatefulSet pod keeps its addresses). */
  owner?: ApplicationRef;
  /** The attachment's interface in the pod (CNI_IFNAME) and network name (pools' multusName). */
  ifname: string;
  network: string;
}

/** Which rule gave the candidates (the first that names a pool wins, for both families). */
type CandidateSource = 'subnet-annotation' | 'ippool-annotation' | 'namespace-default' | 'cni-default' | 'cluster-default';

/** The candidates of one attachment: pool names per family, in the order the rule gives them. */
export interface Candidates {
  source: CandidateSource;
  ipv4: string[];
  ipv6: string[];
  /** For a subnet annotation: the StraitSubnets named (ipv4/ipv6 are then the application pools made from them). */
  subnets?: { ipv4: string[]; ipv6: string[]; ipNumber: IpNumber };
}

/** `ipam.strait.io/ippool-ip-number`: a fixed count ("2") or the application's replicas plus a margin ("+1"). */
export type IpNumber = { fixed: number } | { flexible: number };
