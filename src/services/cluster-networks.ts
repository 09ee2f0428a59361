/**
 * What a cluster's services round takes of its IPAM (src/network-ipam): its PodCIDRs and service networks
 * in each family, and how the pods of each established peer are seen here (the peer's PodCIDR, kept or
 * remapped: the translation an importer applies to the peer's endpoints).
 */
import type { Cidr } from '../net/cidr';
import { type IpamPlanes, planesOf } from '../network-ipam/planes';
import type { PodTranslation } from './pod-translation';

export interface ServicesNetworks {
  readonly translations: Map<string, PodTranslation[]>;
  readonly podCIDRs: Cidr[];
  readonly serviceCIDRs: Cidr[];
}

export function servicesNetworks(us: string, planes: IpamPlanes, established: readonly string[]): ServicesNetworks {
  const translations = new Map<string, PodTranslation[]>();
  const add = (cluster: string, t: PodTranslation) => translations.set(cluster, [...(translations.get(cluster) ?? []), t]);
  const podCIDRs: Cidr[] = [];
  const serviceCIDRs: Cidr[] = [];
  for (const [, plane] of planesOf(planes)) {
    const { podCIDR, serviceCIDR } = plane.home;
    podCIDRs.push(podCIDR);
    if (serviceCIDR) serviceCIDRs.push(serviceCIDR);
    add(us, { own: podCIDR, seen: podCIDR });
    for (const peer of plane.peers.values())
      if (established.includes(peer.clusterId)) add(peer.clusterId, { own: peer.podCIDR, seen: peer.remotePodCIDR });
  }
  return { translations, podCIDRs, serviceCIDRs };
}
