/**
 * TunnelEndpoint: a peering, and what a dataplane needs to reach the peer once both directions of the
 * NetworkConfig exchange are known (docs/packet-contract.md: the four prefixes and the peer's gateway). Written by the
 * controller, named after the peer. Checked by the validator the build compiled from
 * tunnel-endpoint-schema.ts.
 */
import { type Cidr, type Ip, formatCidr, formatIp, parseCidr, parseIp } from '../net/cidr';
import { InputError } from '../errors';
import { checkCompiled } from './compiled-validators';
import type { TunnelEndpointSpecDocument } from './tunnel-endpoint-schema';

export type { TunnelEndpointSpecDocument } from './tunnel-endpoint-schema';

/** A TunnelEndpoint's spec, typed (readTunnelEndpoint, writeTunnelEndpoint). */
export interface TunnelEndpoint {
  clusterId: string;
  /** The peer's networks as seen here. */
  remotePodCIDR: Cidr;
  remoteExternalCIDR: Cidr;
  /** Our networks as seen by the peer. */
  localNATPodCIDR: Cidr;
  localNATExternalCIDR: Cidr;
  /** The peer's gateway (no port: the default VXLAN port), and its standbys in failover order. */
  endpoint: { address: Ip; port?: number; standbyAddresses: Ip[] };
}

/** An established peering's TunnelEndpoint (every field there). */
export function readTunnelEndpoint(value: unknown, root = 'spec'): TunnelEndpoint {
  const doc = checkCompiled('tunnelEndpointSpec', value, root);
  const required = <T>(name: string, field: T | undefined): T => {
    if (field === undefined) throw new InputError(`${root}.${name}`, undefined, 'is required once the peering is established');
    return field;
  };
  const cidr = (name: 'remotePodCIDR' | 'remoteExternalCIDR' | 'localNATPodCIDR' | 'localNATExternalCIDR'): Cidr =>
    parseCidr(`${root}.${name}`, required(name, doc[name]));
  const endpoint = required('endpoint', doc.endpoint);
  return {
    clusterId: doc.clusterId,
    remotePodCIDR: cidr('remotePodCIDR'),
    remoteExternalCIDR: cidr('remoteExternalCIDR'),
    localNATPodCIDR: cidr('localNATPodCIDR'),
    localNATExternalCIDR: cidr('localNATExternalCIDR'),
    endpoint: {
      address: parseIp(`${root}.endpoint.address`, endpoint.address),
      ...(endpoint.port !== undefined ? { port: endpoint.port } : {}),
      standbyAddresses: (endpoint.standbyAddresses ?? []).map((a, i) => parseIp(`${root}.endpoint.standbyAddresses[${i}]`, a)),
    },
  };
}

export function writeTunnelEndpoint(te: TunnelEndpoint): TunnelEndpointSpecDocument {
  return {
    clusterId: te.clusterId,
    remotePodCIDR: formatCidr(te.remotePodCIDR),
    remoteExternalCIDR: formatCidr(te.remoteExternalCIDR),
    localNATPodCIDR: formatCidr(te.localNATPodCIDR),
    localNATExternalCIDR: formatCidr(te.localNATExternalCIDR),
    endpoint: {
      address: formatIp(te.endpoint.address),
      ...(te.endpoint.port !== undefined ? { port: te.endpoint.port } : {}),
      ...(te.endpoint.standbyAddresses.length > 0 ? { standbyAddresses: te.endpoint.standbyAddresses.map(formatIp) } : {}),
    },
  };
}
