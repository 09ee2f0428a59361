/**
 * NatMapping: one endpoint reflected to one peer. Traffic from the peer to `externalAddress` (an address
 * of our ExternalCIDR, in our view) goes to `endpointAddress` (a local pod, or a pod of another peer, as we
 * see it). One small object per reflection, written by the controller.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { ClusterIdText, IpText, Strict } from './schema';
import { checkDocument } from './validate';

export const NatMappingSpecSchema = Strict({
  clusterId: ClusterIdText({ description: 'The peer the endpoint is reflected to.' }),
  externalAddress: IpText({ description: 'The address of our ExternalCIDR that stands for the endpoint.' }),
  endpointAddress: IpText({ description: 'The endpoint, as this cluster sees it.' }),
  fromPeer: Type.Optional(ClusterIdText({ description: 'The peer whose pod the endpoint is (hub and spoke); absent for a local pod.' })),
});

export type NatMappingSpec = Static<typeof NatMappingSpecSchema>;

export const natMappingResource: ResourceDefinition<typeof NatMappingSpecSchema, undefined> = {
  kind: 'NatMapping',
  plural: 'natmappings',
  shortNames: ['snm'],
  description: 'One endpoint reflected to one peer: the ExternalCIDR address it dials and the endpoint it reaches.',
  spec: NatMappingSpecSchema,
  status: undefined,
  columns: [
    { name: 'Peer', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'External', type: 'string', jsonPath: '.spec.externalAddress' },
    { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpointAddress' },
    { name: 'From', type: 'string', jsonPath: '.spec.fromPeer' },
  ],
};

export const readNatMapping = (value: unknown, root = 'spec'): NatMappingSpec => checkDocument(NatMappingSpecSchema, value, root);
