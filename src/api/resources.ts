/** Every strait.io resource with a CustomResourceDefinition (helm/strait/crds/ is generated from this list). */
import { clusterNetworksResource, natMappingResource, peerNetworksResource } from './ipam-objects';
import { networkConfigResource } from './network-config';
import { nodeDataplaneResource } from './node-dataplane';
import { tunnelEndpointResource } from './tunnel-endpoint';

export const resources = [networkConfigResource, tunnelEndpointResource, nodeDataplaneResource, clusterNetworksResource, peerNetworksResource, natMappingResource] as const;
