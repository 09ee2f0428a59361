/**
 * The addresses of a pool (or StraitSubnet) that may ever be given to a pod: `spec.ips` minus `spec.excludeIPs`
 * minus the addresses the network itself uses (network address, IPv4 broadcast, gateway). Filtering,
 * picking and carving all start from this one list, so "exhausted" and "nothing to pick" agree.
 */
import { type Cidr, type Ip, cidrLast, cidrSize } from '../net/cidr';
import { normalizeRanges, subtractRanges } from './ip-ranges';
import type { IpRange } from './model';

/**
 * The network address (also IPv6's Subnet-Router anycast address), the IPv4 broadcast address and the
 * gateway. A subnet of one or two addresses (IPv4 /31 and /32, RFC 3021; IPv6 /127 and /128, RFC 6164)
 * has no network or broadcast address: both of its addresses are hosts.
 */
function networkAddresses(subnet: Cidr, gateway: Ip | undefined): IpRange[] {
  const at = (value: bigint): IpRange => ({ family: subnet.family, first: value, last: value });
  const ranges: IpRange[] = [];
  if (cidrSize(subnet) > 2n) {
    ranges.push(at(subnet.base));
    if (subnet.family === 4) ranges.push(at(cidrLast(subnet)));
  }
  if (gateway && gateway.family === subnet.family) ranges.push(at(gateway.value));
  return normalizeRanges(ranges);
}

export function usableAddresses(pool: { subnet: Cidr; ips: readonly IpRange[]; excludeIps: readonly IpRange[]; gateway?: Ip }): IpRange[] {
  return subtractRanges(subtractRanges(pool.ips, pool.excludeIps), networkAddresses(pool.subnet, pool.gateway));
}
