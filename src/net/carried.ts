/**
 * What Strait's dataplanes carry: the address families both of them translate and route, in unicast
 * space. An agent refuses a node spec whole when any of its values is not carried, so every address and
 * network that goes into specs is taken through `carriedIp` and `carriedCidr` where it enters the
 * controller (its configuration, a Node, a peer's NetworkConfig): that one input is refused there, and
 * the other peerings and nodes go on.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, type IpFamily, parseCidr, parseIp } from './cidr';
import { requireUnicast } from './special-blocks';

/** The families both dataplanes carry (src/nodespec/ip-family.ts checks a spec against them). */
const carriedFamilies: readonly IpFamily[] = [4];

function requireCarried(field: string, text: string, value: Ip | Cidr): void {
  if (!carriedFamilies.includes(value.family)) {
    throw new InputError(
      field,
      text,
      `is IPv${value.family}: Strait's dataplanes carry ${carriedFamilies.map((f) => `IPv${f}`).join(' and ')} only (IPv6 clusters are not supported yet)`,
    );
  }
}

/** An address for node specs: of a carried family, and unicast. */
export function carriedIp(field: string, text: unknown): Ip {
  const ip = parseIp(field, text);
  requireCarried(field, text as string, ip);
  requireUnicast(field, text as string, ip);
  return ip;
}

/** A network for node specs: of a carried family, and in unicast space. */
export function carriedCidr(field: string, text: unknown): Cidr {
  const cidr = parseCidr(field, text);
  requireCarried(field, text as string, cidr);
  requireUnicast(field, text as string, cidr);
  return cidr;
}
