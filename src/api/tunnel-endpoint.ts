/**
 * TunnelEndpoint: what a dataplane needs to reach one peer once both directions of the NetworkConfig
 * exchange are known (docs/packet-contract.md: the four prefixes and the peer's gateway). Written by the
 * controller, named after the peer.
 */
import { type Static, Type } from '@sinclair/typebox';
import { type Cidr, type Ip, formatCidr, formatIp, parseCidr, parseIp } from '../net/cidr';
import type { ResourceDefinition } from './resource';
import { CidrText, ClusterIdText, Conditions, IpText, Port, Strict } from './schema';
import { checkDocument } from './validate';

/** A TunnelEndpoint's spec, typed (readTunnelEndpoint, writeTunnelEndpoint). */
export interface TunnelEndpoint {
  clusterId: string;
  /** The peer's networks as seen here. */
  remotePodCIDR: Cidr;
  remoteExternalCIDR: Cidr;
  /** Our networks as seen by the peer. */
  localNATPodCIDR: Cidr;
  localNATExternalCIDR: Cidr;
  /** The peer's gateway (no port: the default VXLAN port). */
  endpoint: { address: Ip; port?: number };
}

export const TunnelEndpointSpecSchema = Strict({
  clusterId: ClusterIdText({ description: 'The peer.' }),
  remotePodCIDR: CidrText({ description: "The peer's PodCIDR as seen here." }),
  remoteExternalCIDR: CidrText({ description: "The peer's ExternalCIDR as seen here." }),
  localNATPodCIDR: CidrText({ description: 'Our PodCIDR as the peer sees it.' }),
  localNATExternalCIDR: CidrText({ description: 'Our ExternalCIDR as the peer sees it.' }),
  endpoint: Strict({ address: IpText(), port: Type.Optional(Port()) }, { description: "The peer's gateway." }),
});

export const TunnelEndpointStatusSchema = Strict({ conditions: Type.Optional(Conditions()) });

export type TunnelEndpointSpecDocument = Static<typeof TunnelEndpointSpecSchema>;

export const tunnelEndpointResource: ResourceDefinition<typeof TunnelEndpointSpecSchema, typeof TunnelEndpointStatusSchema> = {
  kind: 'TunnelEndpoint',
  plural: 'tunnelendpoints',
  shortNames: ['ste'],
  description: 'What a dataplane needs to reach one peer: its networks as seen here, ours as it sees them, its gateway.',
  spec: TunnelEndpointSpecSchema,
  status: TunnelEndpointStatusSchema,
  columns: [
    { name: 'Peer', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'Remote Pod', type: 'string', jsonPath: '.spec.remotePodCIDR' },
    { name: 'Remote External', type: 'string', jsonPath: '.spec.remoteExternalCIDR' },
    { name: 'Local NAT Pod', type: 'string', jsonPath: '.spec.localNATPodCIDR' },
    { name: 'Local NAT External', type: 'string', jsonPath: '.spec.localNATExternalCIDR', priority: 1 },
    { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpoint.address' },
  ],
};

export function readTunnelEndpoint(value: unknown, root = 'spec'): TunnelEndpoint {
  const doc = checkDocument(TunnelEndpointSpecSchema, value, root);
  const cidr = (name: 'remotePodCIDR' | 'remoteExternalCIDR' | 'localNATPodCIDR' | 'localNATExternalCIDR'): Cidr => parseCidr(`${root}.${name}`, doc[name]);
  return {
    clusterId: doc.clusterId,
    remotePodCIDR: cidr('remotePodCIDR'),
    remoteExternalCIDR: cidr('remoteExternalCIDR'),
    localNATPodCIDR: cidr('localNATPodCIDR'),
    localNATExternalCIDR: cidr('localNATExternalCIDR'),
    endpoint: { address: parseIp(`${root}.endpoint.address`, doc.endpoint.address), ...(doc.endpoint.port !== undefined ? { port: doc.endpoint.port } : {}) },
  };
}

export function writeTunnelEndpoint(te: TunnelEndpoint): TunnelEndpointSpecDocument {
  return {
    clusterId: te.clusterId,
    remotePodCIDR: formatCidr(te.remotePodCIDR),
    remoteExternalCIDR: formatCidr(te.remoteExternalCIDR),
    localNATPodCIDR: formatCidr(te.localNATPodCIDR),
    localNATExternalCIDR: formatCidr(te.localNATExternalCIDR),
    endpoint: { address: formatIp(te.endpoint.address), ...(te.endpoint.port !== undefined ? { port: te.endpoint.port } : {}) },
  };
}
