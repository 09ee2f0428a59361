/** Offers and translations the services tests build on: B overlaps A's PodCIDR (remapped), C is distinct, D is IPv6. */
import type { ServiceOfferSpec } from '../../src/api/service-offer';
import { parseCidr } from '../../src/net/cidr';
import type { PodTranslation } from '../../src/services/pod-translation';

const translation = (own: string, seen: string): PodTranslation => ({ own: parseCidr('own', own), seen: parseCidr('seen', seen) });

/** As A sees them: A itself; B's 10.0.0.0/16 (A's own PodCIDR too) at 10.71.0.0/16; C's 10.2.0.0/24 kept; D's fd00:b::/64 at fd00:71::/64. */
export const translations = new Map<string, PodTranslation[]>([
  ['cluster-a', [translation('10.0.0.0/16', '10.0.0.0/16')]],
  ['cluster-b', [translation('10.0.0.0/16', '10.71.0.0/16'), translation('fd00:b::/64', 'fd00:71::/64')]],
  ['cluster-c', [translation('10.2.0.0/24', '10.2.0.0/24')]],
]);

export const offer = (cluster: string, overrides: Partial<ServiceOfferSpec> = {}): ServiceOfferSpec => ({
  clusterId: cluster,
  remoteClusterId: 'cluster-a',
  namespace: 'shop',
  name: 'cart',
  exportCreated: '2026-11-01T10:00:00Z',
  type: 'ClusterSetIP',
  ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
  sessionAffinity: 'None',
  endpointGroups: [],
  ...overrides,
});

export const endpoint = (address: string, ready = true) => ({ address, ready, serving: ready, terminating: false });
