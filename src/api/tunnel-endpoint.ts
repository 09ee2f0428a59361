/**
 * TunnelEndpoint: a peering, and what a dataplane needs to reach the peer once both directions of the
 * NetworkConfig exchange are known (docs/packet-contract.md: the four prefixes and the peer's gateway). Written by the
 * controller, named after the peer. Checked by the validator the build compiled from
 * tunnel-endpoint-schema.ts.
 */
import { type Cidr, type Ip, formatCidr, formatIp, parseCidr, parseIp } from '../net/cidr';
import { InputError } from '../errors';
import { checkCompiled } from './compiled-validators';
import type { PeerFamilyNetworks } from '../nodespec/spec';
import type { TunnelEndpointSpecDocument } from './tunnel-endpoint-schema';

export type { TunnelEndpointSpecDocument } from './tunnel-endpoint-schema';

/** A TunnelEndpoint's spec, typed (readTunnelEndpoint, writeTunnelEndpoint): the primary family's four networks, and the secondary's. */
export interface TunnelEndpoint extends PeerFamilyNetworks {
  clusterId: string;
  secondary?: PeerFamilyNetworks;
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
    ...(doc.secondary
      ? {
          secondary: {
            remotePodCIDR: parseCidr(`${root}.secondary.remotePodCIDR`, doc.secondary.remotePodCIDR),
            remoteExternalCIDR: parseCidr(`${root}.secondary.remoteExternalCIDR`, doc.secondary.remoteExternalCIDR),
            localNATPodCIDR: parseCidr(`${root}.secondary.localNATPodCIDR`, doc.secondary.localNATPodCIDR),
            localNATExternalCIDR: parseCidr(`${root}.secondary.localNATExternalCIDR`, doc.secondary.localNATExternalCIDR),
          },
        }
      : {}),
    endpoint: {
      address: parseIp(`${root}.endpoint.address`, endpoint.address),
      ...(endpoint.port !== undefined ? { port: endpoint.port } : {}),
      standbyAddresses: (endpoint.standbyAddresses ?? []).map((a, i) => parseIp(`${root}.endpoint.standbyAddresses[${i}]`, a)),
    },
  };
}

const writeNetworks = (n: PeerFamilyNetworks) => ({
  remotePodCIDR: formatCidr(n.remotePodCIDR),
  remoteExternalCIDR: formatCidr(n.remoteExternalCIDR),
  localNATPodCIDR: formatCidr(n.localNATPodCIDR),
  localNATExternalCIDR: formatCidr(n.localNATExternalCIDR),
});

export function writeTunnelEndpoint(te: TunnelEndpoint): TunnelEndpointSpecDocument {
  return {
    clusterId: te.clusterId,
    ...writeNetworks(te),
    ...(te.secondary ? { secondary: writeNetworks(te.secondary) } : {}),
    endpoint: {
      address: formatIp(te.endpoint.address),
      ...(te.endpoint.port !== undefined ? { port: te.endpoint.port } : {}),
      ...(te.endpoint.standbyAddresses.length > 0 ? { standbyAddresses: te.endpoint.standbyAddresses.map(formatIp) } : {}),
    },
  };
}
