/**
 * What Strait's dataplanes carry: inner addresses and networks of either family, in unicast space, and
 * tunnels between IPv4 underlay addresses (VXLAN and IPsec over IPv6 are not built yet). An agent refuses
 * a node spec whole when any of its values is not carried, so every address and network that goes into
 * specs is taken through these where it enters the controller (its configuration, a Node, a peer's
 * NetworkConfig): that one input is refused there, and the other peerings and nodes go on. Which family a
 * network may have where (primary, secondary) is the IPAM's and the Network Manager's to check.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, parseCidr, parseIp } from './cidr';
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

/** An address tunnels start or end at (a node's, a gateway's): IPv4 and unicast. */
export function underlayIp(field: string, text: unknown): Ip {
  const ip = carriedIp(field, text);
  if (ip.family !== 4)
    throw new InputError(
      field,
      text,
      "is IPv6: Strait's tunnels run between IPv4 underlay addresses (IPv6 underlays are not supported yet)",
    );
  return ip;
}
