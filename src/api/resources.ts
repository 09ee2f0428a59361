/** Every strait.io resource with a CustomResourceDefinition (helm/strait/crds/ is generated from this list). */
import { natMappingResource } from './nat-mapping';
import { networkConfigResource } from './network-config';
import { nodeDataplaneResource } from './node-dataplane';
import { tunnelEndpointResource } from './tunnel-endpoint';

export const resources = [networkConfigResource, tunnelEndpointResource, natMappingResource, nodeDataplaneResource] as const;
