/** The TunnelEndpoint resource (tunnel-endpoint.ts): its spec and status schemas, the spec's document type, its CRD's columns. */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { tunnelEndpointNames } from './resource-names';
import { CidrText, ClusterIdText, Conditions, IpText, Port, StandbyAddresses, Strict } from './schema';

/** A peering's TunnelEndpoint exists while the peer is configured; all but `clusterId` once both directions are known. */
export const TunnelEndpointSpecSchema = Strict({
  clusterId: ClusterIdText({ description: 'The peer.' }),
  remotePodCIDR: Type.Optional(CidrText({ description: "The peer's PodCIDR as seen here." })),
  remoteExternalCIDR: Type.Optional(CidrText({ description: "The peer's ExternalCIDR as seen here." })),
  localNATPodCIDR: Type.Optional(CidrText({ description: 'Our PodCIDR as the peer sees it.' })),
  localNATExternalCIDR: Type.Optional(CidrText({ description: 'Our ExternalCIDR as the peer sees it.' })),
  secondary: Type.Optional(
    Strict(
      {
        remotePodCIDR: CidrText(),
        remoteExternalCIDR: CidrText(),
        localNATPodCIDR: CidrText(),
        localNATExternalCIDR: CidrText(),
      },
      {
        description: 'The same four networks of the secondary IP family, once both clusters are dual-stack and both directions are known.',
      },
    ),
  ),
  endpoint: Type.Optional(
    Strict(
      { address: IpText(), port: Type.Optional(Port()), standbyAddresses: Type.Optional(StandbyAddresses()) },
      { description: "The peer's gateway." },
    ),
  ),
});

export const TunnelEndpointStatusSchema = Strict({ conditions: Type.Optional(Conditions()) });

export type TunnelEndpointSpecDocument = Static<typeof TunnelEndpointSpecSchema>;

export const tunnelEndpointResource: ResourceDefinition<typeof TunnelEndpointSpecSchema, typeof TunnelEndpointStatusSchema> = {
  ...tunnelEndpointNames,
  shortNames: ['ste'],
  description:
    'A peering: whether it carries traffic and why not (status.conditions), and what a dataplane needs to reach the peer: its networks as seen here, ours as it sees them, its gateway.',
  spec: TunnelEndpointSpecSchema,
  status: TunnelEndpointStatusSchema,
  columns: [
    { name: 'Peer', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
    { name: 'Remote Pod', type: 'string', jsonPath: '.spec.remotePodCIDR' },
    { name: 'Remote External', type: 'string', jsonPath: '.spec.remoteExternalCIDR' },
    { name: 'Local NAT Pod', type: 'string', jsonPath: '.spec.localNATPodCIDR' },
    { name: 'Local NAT External', type: 'string', jsonPath: '.spec.localNATExternalCIDR', priority: 1 },
    { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpoint.address', priority: 1 },
    { name: 'Message', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].message', priority: 1 },
  ],
};
