/** Every strait.io resource with a CustomResourceDefinition (helm/strait/crds/ is generated from this list). */
import { clusterNetworksResource, natMappingResource, peerNetworksResource } from './ipam-objects';
import { ipClaimResource } from './ip-claim';
import { ipPoolResource } from './ip-pool';
import { networkConfigResource } from './network-config-schema';
import { nodeDataplaneResource } from './node-dataplane-resource';
import { endpointResource } from './pool-endpoint';
import { reservedIpResource } from './reserved-ip';
import { serviceOfferResource } from './service-offer-schema';
import { straitGatewayResource } from './strait-gateway-schema';
import { subnetResource } from './subnet';
import { tunnelEndpointResource } from './tunnel-endpoint-schema';

export const resources = [
  networkConfigResource,
  tunnelEndpointResource,
  nodeDataplaneResource,
  straitGatewayResource,
  clusterNetworksResource,
  peerNetworksResource,
  natMappingResource,
  ipPoolResource,
  subnetResource,
  reservedIpResource,
  ipClaimResource,
  endpointResource,
  serviceOfferResource,
] as const;
