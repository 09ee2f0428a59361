/**
 * How strait.io objects are named: the API group and version, and each resource's kind and plural (its
 * API path). Apart from the resources' schemas (resource.ts and the modules it lists), which only the
 * build loads: the processes name objects and collections with these alone.
 */
export const group = 'strait.io';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}` as const;

export interface ResourceNames {
  kind: string;
  plural: string;
}

export const networkConfigNames = { kind: 'NetworkConfig', plural: 'networkconfigs' } as const satisfies ResourceNames;
export const tunnelEndpointNames = { kind: 'TunnelEndpoint', plural: 'tunnelendpoints' } as const satisfies ResourceNames;
export const nodeDataplaneNames = { kind: 'NodeDataplane', plural: 'nodedataplanes' } as const satisfies ResourceNames;
export const straitGatewayNames = { kind: 'StraitGateway', plural: 'straitgateways' } as const satisfies ResourceNames;
export const clusterNetworksNames = { kind: 'ClusterNetworks', plural: 'clusternetworks' } as const satisfies ResourceNames;
export const peerNetworksNames = { kind: 'PeerNetworks', plural: 'peernetworks' } as const satisfies ResourceNames;
export const natMappingNames = { kind: 'NatMapping', plural: 'natmappings' } as const satisfies ResourceNames;
export const ipPoolNames = { kind: 'StraitIPPool', plural: 'straitippools' } as const satisfies ResourceNames;
export const subnetNames = { kind: 'StraitSubnet', plural: 'straitsubnets' } as const satisfies ResourceNames;
export const reservedIpNames = { kind: 'ReservedIP', plural: 'reservedips' } as const satisfies ResourceNames;
export const ipClaimNames = { kind: 'IPClaim', plural: 'ipclaims' } as const satisfies ResourceNames;
export const serviceOfferNames = { kind: 'ServiceOffer', plural: 'serviceoffers' } as const satisfies ResourceNames;
export const endpointNames = { kind: 'StraitEndpoint', plural: 'straitendpoints' } as const satisfies ResourceNames;
