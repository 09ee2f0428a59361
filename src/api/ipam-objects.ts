/**
 * The IPAM state of a cluster as small objects (no one object may grow with the number of mappings: 100,000
 * are 5.5 MiB, over etcd's limit for one object): one ClusterNetworks (the home networks and pools), one
 * PeerNetworks per peer (its networks, where they sit here, how it sees ours) and one NatMapping per
 * ExternalCIDR address given to an endpoint (named after the address, so two endpoints can never be given
 * the same one: the second create is a conflict). Written by the controller that holds the lease.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { clusterNetworksNames, natMappingNames, peerNetworksNames } from './resource-names';
import { CidrText, ClusterIdText, IpText, List, Strict } from './schema';

const familyNetworks = { podCIDR: CidrText(), serviceCIDR: Type.Optional(CidrText()), externalCIDR: CidrText() };

export const ClusterNetworksSpecSchema = Strict({
  clusterId: ClusterIdText(),
  ...familyNetworks,
  secondary: Type.Optional(Strict(familyNetworks, { description: "The secondary IP family's networks (dual-stack)." })),
  reserved: List(CidrText(), { description: 'Networks in use here that no peer is given.' }),
  pools: List(CidrText(), { description: 'Where remapped peer networks are taken from, in order.' }),
});

const peerFamilyNetworks = {
  podCIDR: CidrText({ description: 'As the peer numbers it.' }),
  externalCIDR: CidrText({ description: 'As the peer numbers it.' }),
  remotePodCIDR: CidrText({ description: 'Where it sits here (its own, or our remap of it).' }),
  remoteExternalCIDR: CidrText({ description: 'Where it sits here (its own, or our remap of it).' }),
  localNATPodCIDR: Type.Optional(CidrText({ description: 'Our PodCIDR as the peer sees it, once it answered.' })),
  localNATExternalCIDR: Type.Optional(CidrText({ description: 'Our ExternalCIDR as the peer sees it, once it answered.' })),
};

export const PeerNetworksSpecSchema = Strict({
  clusterId: ClusterIdText({ description: 'The peer.' }),
  ...peerFamilyNetworks,
  secondary: Type.Optional(
    Strict(peerFamilyNetworks, { description: 'The same of the secondary IP family, where both clusters are dual-stack.' }),
  ),
});

export const NatMappingSpecSchema = Strict({
  externalAddress: IpText({ description: 'The address of our ExternalCIDR that stands for the endpoint.' }),
  endpointAddress: IpText({ description: 'The endpoint, as this cluster sees it (a pod of a peer, for a hub).' }),
  reflectedTo: List(ClusterIdText(), { minItems: 1, description: 'The peers that reach the endpoint at this address, sorted.' }),
});

export type ClusterNetworksSpec = Static<typeof ClusterNetworksSpecSchema>;
export type PeerNetworksSpec = Static<typeof PeerNetworksSpecSchema>;
export type NatMappingSpec = Static<typeof NatMappingSpecSchema>;

export const clusterNetworksResource: ResourceDefinition<typeof ClusterNetworksSpecSchema, undefined> = {
  ...clusterNetworksNames,
  shortNames: ['scn'],
  description: "This cluster's networks as its IPAM keeps them (one object, named after the cluster id).",
  spec: ClusterNetworksSpecSchema,
  status: undefined,
  columns: [
    { name: 'Cluster', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'PodCIDR', type: 'string', jsonPath: '.spec.podCIDR' },
    { name: 'ExternalCIDR', type: 'string', jsonPath: '.spec.externalCIDR' },
    { name: 'ServiceCIDR', type: 'string', jsonPath: '.spec.serviceCIDR', priority: 1 },
  ],
};

export const peerNetworksResource: ResourceDefinition<typeof PeerNetworksSpecSchema, undefined> = {
  ...peerNetworksNames,
  shortNames: ['spn'],
  description: "A peer's networks: as it numbers them, where they sit here, and how it sees ours (one per peer, named after it).",
  spec: PeerNetworksSpecSchema,
  status: undefined,
  columns: [
    { name: 'Peer', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'PodCIDR', type: 'string', jsonPath: '.spec.podCIDR' },
    { name: 'Seen Here', type: 'string', jsonPath: '.spec.remotePodCIDR' },
    { name: 'ExternalCIDR', type: 'string', jsonPath: '.spec.externalCIDR' },
    { name: 'External Here', type: 'string', jsonPath: '.spec.remoteExternalCIDR' },
    { name: 'Our Pods There', type: 'string', jsonPath: '.spec.localNATPodCIDR', priority: 1 },
    { name: 'Our External There', type: 'string', jsonPath: '.spec.localNATExternalCIDR', priority: 1 },
  ],
};

export const natMappingResource: ResourceDefinition<typeof NatMappingSpecSchema, undefined> = {
  ...natMappingNames,
  shortNames: ['snm'],
  description: 'An address of our ExternalCIDR given to an endpoint reflected to peers (one per address, named after it).',
  spec: NatMappingSpecSchema,
  status: undefined,
  columns: [
    { name: 'External', type: 'string', jsonPath: '.spec.externalAddress' },
    { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpointAddress' },
    { name: 'Reflected To', type: 'string', jsonPath: '.spec.reflectedTo' },
  ],
};
