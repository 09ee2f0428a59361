/** Which devices of a namespace hold given addresses (the node's underlay and public ones, mostly). */
import { dumpAddresses } from './rtnetlink';

/** The devices holding one of `addresses` (formatted), each once; `ns`: a namespace by name. */
export function devicesHolding(addresses: readonly string[], ns?: string): string[] {
  return [...new Set(dumpAddresses(ns).flatMap(({ dev, address }) => (addresses.includes(address) ? [dev] : [])))];
}
