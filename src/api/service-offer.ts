/**
 * ServiceOffer: a Service one cluster exports, offered to one peer (service-offer-schema.ts). Checked by
 * the validators the build compiled from its schema; what a schema cannot say (unique ports, addresses
 * the owner owns) is the importer's check (src/services/offer-check.ts).
 */
import { checkCompiled } from './compiled-validators';
import type { ServiceOfferSpec, ServiceOfferStatus } from './service-offer-schema';

export type {
  EndpointGroup,
  OfferedEndpoint,
  OfferedEndpointPort,
  OfferedServicePort,
  ServiceOfferSpec,
  ServiceOfferStatus,
} from './service-offer-schema';
export { maxOfferedEndpoints } from './service-offer-limits';

export const readServiceOfferSpec = (value: unknown, root = 'spec'): ServiceOfferSpec => checkCompiled('serviceOfferSpec', value, root);
export const readServiceOfferStatus = (value: unknown, root = 'status'): ServiceOfferStatus =>
  checkCompiled('serviceOfferStatus', value, root);
