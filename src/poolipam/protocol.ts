/**
 * What `strait-ipam` (the CNI plugin, a short-lived process per CNI call) and the node's pool IPAM service
 * (long-lived, holding the informers) say to each other: HTTP/1.1 with JSON bodies over a unix socket
 * (mode 0600, default `/run/strait/ipam.sock`). The plugin only translates the CNI call; every decision is
 * the service's, so a plugin binary never needs an API server credential.
 *
 * A 200 answer carries the call's response type (`{}` for check and del); every other status carries an
 * ErrorResponse. This module is loaded by the plugin at every CNI call: node built-ins at most, no packages.
 */

export const defaultIpamSocket = '/run/strait/ipam.sock';

/** Path of each call, POSTed (STATUS is a GET). */
export const ipamPaths = { add: '/v1/add', check: '/v1/check', del: '/v1/del', gc: '/v1/gc', status: '/v1/status' } as const;

/**
 * How long the plugin waits for an answer before it gives up with code 11: ADD's probes take 3 tries of
 * 100 ms per address tried, so a handler still busy after this is stuck, not slow.
 */
export const ipamRequestTimeoutMs = 30_000;

/*
 * The checks of what the plugin and the service read from outside, shared by both ends: the plugin checks
 * the runtime's input with them, the service checks every request again (anything can write the socket).
 */

/** A Kubernetes object name (DNS-1123 subdomain): a pool's, a pod's. */
export const isObjectName = (name: string) => name.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name);

/** A namespace's name (DNS-1123 label). */
export const isNamespaceName = (name: string) => name.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name);

/** A CNI network's name, as the spec allows it. */
export const isNetworkName = (name: string) => /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(name);

/** A path to open: absolute, without NUL (the kernel would open the shorter path before it). */
export const isAbsolutePath = (path: string) => path.startsWith('/') && !path.includes('\u0000');

/** CNI_CONTAINERID as the spec allows it (and libcni's skel checks it). */
export const isContainerId = (id: string) => /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(id);

/** CNI_IFNAME as Linux allows it: 1-15 bytes, not "." nor "..", no "/", ":" or white space. */
export const isInterfaceName = (name: string) => Buffer.byteLength(name) <= 15 && name !== '' && name !== '.' && name !== '..' && !/[/:\s]/.test(name);

/** The IPAM section of the network configuration, as the plugin forwards it (checked by both sides). */
export interface IpamNetworkOptions {
  /** Pools tried when no annotation names any (rule 4), in order. */
  defaultIpv4Pools: string[];
  defaultIpv6Pools: string[];
  /** ARP/NDP probe for the chosen address before ADD returns; per pool `spec.detectConflict` overrides. */
  detectConflict: boolean;
  /** ARP/NDP probe of the pool's gateway before ADD returns; per pool `spec.detectGateway` overrides. */
  detectGateway: boolean;
}

/** One attachment: what CNI identifies it by (containerId + ifname, within a network name). */
export interface Attachment {
  containerId: string;
  ifname: string;
}

export interface AddRequest extends Attachment {
  /** The network configuration's `name` (a Multus NetworkAttachmentDefinition's too: pools' `multusName`). */
  network: string;
  /** CNI_NETNS: where the probes are sent from (the interface `ifname` exists there, maybe down). */
  netns: string;
  /** From CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID; the uid may be absent on old runtimes). */
  podNamespace: string;
  podName: string;
  podUid?: string;
  options: IpamNetworkOptions;
}

export interface CheckRequest extends AddRequest {
  /** The `address` of each of `prevResult.ips` (what the runtime holds from ADD); absent without prevResult. */
  prevResultAddresses?: string[];
}

export interface DelRequest extends Attachment {
  network: string;
  podNamespace?: string;
  podName?: string;
}

export interface GcRequest {
  network: string;
  /** `cni.dev/valid-attachments`: every allocation of `network` not listed here is released. */
  validAttachments: Attachment[];
}

/** One address given to the attachment: `address` with its prefix length (CNI's ipConfig). */
export interface AllocatedIp {
  address: string;
  gateway?: string;
  pool: string;
  vlan?: number;
}

export interface AllocatedRoute {
  dst: string;
  gw?: string;
}

export interface AddResponse {
  ips: AllocatedIp[];
  routes: AllocatedRoute[];
}

export interface GcResponse {
  released: string[];
}

export interface StatusResponse {
  /** False while the informers are not synced: STATUS answers code 50 (the plugin is not available). */
  ready: boolean;
  message?: string;
}

/**
 * CNI error codes (spec 1.1.0 "Error"): 1-99 are the spec's, 100+ are Strait's. Every error carries a
 * message naming the pool, field or object concerned.
 */
export const cniErrorCodes = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnvironment: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidNetworkConfig: 7,
  tryAgainLater: 11,
  pluginNotAvailable: 50,
  /** No rule names a pool for the family (no annotation, namespace default, CNI default or cluster default). */
  noCandidatePool: 100,
  /** Every candidate pool was filtered out; the message lists each pool and why. */
  noUsablePool: 101,
  /** Every address of every usable pool is taken, reserved, excluded or conflicting. */
  poolsExhausted: 102,
  /** The pool's gateway did not answer the ARP/NDP probe. */
  gatewayUnreachable: 103,
  /** CHECK: the attachment has no allocation, or not the one the pod's interface holds. */
  allocationMismatch: 104,
  /** An annotation of the Pod or Namespace is not what its documentation says. */
  invalidAnnotation: 105,
  /** The Pod named in CNI_ARGS is not in the API server. */
  podNotFound: 106,
  /** A StatefulSet pod's recorded address is held by another pod (never given twice). */
  addressHeld: 107,
} as const;

export type CniErrorCode = (typeof cniErrorCodes)[keyof typeof cniErrorCodes];

/** The body of every non-2xx answer of the service; the plugin prints it as the CNI error. */
export interface ErrorResponse {
  code: number;
  msg: string;
  details?: string;
}
