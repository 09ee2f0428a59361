/**
 * How an importing cluster numbers another cluster's pods: each PodCIDR of the exporter, in the
 * exporter's own numbering, and where the importer sees it (its remap where the two overlap, else the
 * same network). The importer's own exports translate to themselves.
 */
import { type Cidr, type Ip, containsIp, translateIp } from '../net/cidr';

export interface PodTranslation {
  /** The exporter's PodCIDR as the exporter numbers it. */
  readonly own: Cidr;
  /** The same network as the importer routes it. */
  readonly seen: Cidr;
}

/** The address under which the importer reaches `address` of the exporter; undefined where it is no pod of the exporter's. */
export function translatePodAddress(address: Ip, translations: readonly PodTranslation[]): Ip | undefined {
  const translation = translations.find((t) => containsIp(t.own, address));
  return translation && translateIp(address, translation.own, translation.seen);
}
