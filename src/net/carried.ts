/**
 * What Strait's dataplanes carry: inner addresses and networks of either family, in unicast space, and
 * tunnels between underlay addresses of one family, IPv4 or IPv6 (per cluster, its nodes'; per peering,
 * both gateways': src/nodespec/ip-family.ts is the agents' check). An agent refuses
 * a node spec whole when any of its values is not carried, so every address and network that goes into
 * specs is taken through these where it enters the controller (its configuration, a Node, a peer's
 * NetworkConfig): that one input is refused there, and the other peerings and nodes go on. Which family a
 * network may have where (primary, secondary) is the IPAM's and the Network Manager's to check.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, type IpFamily, containsIp, formatIp, parseCidr, parseIp } from './cidr';
import { requireUnicast } from './special-blocks';

/** An inner address for node specs (a pod, an endpoint): unicast, of either family. */
export function carriedIp(field: string, text: unknown): Ip {
  const ip = parseIp(field, text);
  requireUnicast(field, text as string, ip);
  return ip;
}

/** A network for node specs: in unicast space, of either family. */
export function carriedCidr(field: string, text: unknown): Cidr {
  const cidr = parseCidr(field, text);
  requireUnicast(field, text as string, cidr);
  return cidr;
}

const ipv6LinkLocal = parseCidr('block', 'fe80::/10');

/**
 * An address tunnels start or end at (a node's, a gateway's): unicast, of either family, and not IPv6
 * link-local (it means nothing without its interface, and no route leads to it from another link).
 */
export function underlayIp(field: string, text: unknown): Ip {
  const ip = carriedIp(field, text);
  if (containsIp(ipv6LinkLocal, ip))
    throw new InputError(field, text, 'is IPv6 link-local (fe80::/10): a tunnel end needs an address routed beyond its link');
  return ip;
}

/**
 * Refuses a tunnel end of another family than `family`, that of `ofWhat` (whose address it is, with its
 * value): a VXLAN or ESP tunnel runs over one family, both its ends of it.
 */
export function requireUnderlayFamily(field: string, ip: Ip, family: IpFamily, ofWhat: string): void {
  if (ip.family !== family)
    throw new InputError(
      field,
      formatIp(ip),
      `is IPv${ip.family}, not the family of ${ofWhat} (IPv${family}): a tunnel's two ends are of one family`,
    );
}
