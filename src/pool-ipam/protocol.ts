/**
 * What `strait-ipam` (the CNI plugin, a short-lived process per CNI call) and the node's pool IPAM service
 * (long-lived, holding the informers) say to each other: HTTP/1.1 with JSON bodies over a unix socket
 * (mode 0600, default `/run/strait/ipam.sock`). The plugin only translates the CNI call; every decision is
 * the service's, so a plugin binary never needs an API server credential.
 *
 * A 200 answer carries the call's response type (`{}` for check and del); every other status carries an
 * ErrorResponse. This module is loaded by the plugin at every CNI call: no packages.
 */
import type { InputError } from '../errors';

export const defaultIpamSocket = '/run/strait/ipam.sock';

/** Path of each call, POSTed (STATUS is a GET). */
export const ipamPaths = { add: '/v1/add', check: '/v1/check', del: '/v1/del', gc: '/v1/gc', status: '/v1/status' } as const;

/**
 * How long the plugin waits for an answer before it gives up with code 11: ADD's probes take 3 tries of
 * 100 ms per address tried, so a handler still busy after this is stuck, not slow.
 */
export const ipamRequestTimeoutMs = 30_000;

/*
 * The documents both ends read are declared once, as schemas (src/api/pool-ipam-protocol-schema.ts, the
 * network configuration's in src/api/cni-network-config-schema.ts), and checked by the validators the build
 * compiled from them: the plugin checks the runtime's input, the service checks every request again
 * (anything can write the socket). The names' rules: src/api/cni-names.ts.
 */
export type {
  AddRequest,
  AddResponse,
  Attachment,
  CheckRequest,
  DelRequest,
  ErrorResponse,
  GcRequest,
  GcResponse,
  IpamNetworkOptions,
  StatusResponse,
} from '../api/pool-ipam-protocol-schema';

/** A refused field as both ends word it in a CNI error: `field: missing`, or `field: reason (got value)`. */
export const refusalMessage = (err: InputError) => (err.value === undefined ? `${err.field}: missing` : err.message);

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
