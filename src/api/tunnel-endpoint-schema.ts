/** The TunnelEndpoint resource (tunnel-endpoint.ts): its spec and status schemas, the spec's document type, its CRD's columns. */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { tunnelEndpointNames } from './resource-names';
import { CidrText, ClusterIdText, Conditions, IpText, Port, Strict } from './schema';

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
  ...tunnelEndpointNames,
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
