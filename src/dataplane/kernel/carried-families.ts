/**
 * The IP families the kernel fallback carries, checked by its `validate` before anything is programmed:
 * networks of either family in either place (IPv4 only, IPv6 only, dual-stack with either primary, a
 * peering of one family; NAT in `ip strait` and `ip6 strait`, routes and rules of each family the spec
 * has). The underlay stays IPv4: node, gateway and public addresses and peer endpoints are the tunnels'
 * outer addresses. An encrypted peering carries IPv4 only: its xfrm policies select IPv4 prefixes
 * (ipsec-plan.ts).
 */
import { InputError } from '../../errors';
import { formatCidr } from '../../net/cidr';
import { requireIpv4Underlay } from '../../nodespec/ip-family';
import type { NodeDataplaneSpec } from '../../nodespec/spec';

/** Refuses a spec the kernel fallback cannot carry, naming the first field that it cannot. */
export function requireFallbackFamilies(spec: NodeDataplaneSpec): void {
  requireIpv4Underlay(spec, "the kernel fallback's underlay (the tunnels' outer addresses) is IPv4 only");
  for (const [i, p] of spec.peers.entries()) {
    if (p.transport !== 'ipsec') continue;
    // IPv6 in the peering's own fields (a peering of IPv6 first) or under its secondary.
    for (const [place, networks] of [['', p] as const, ['secondary.', p.secondary] as const])
      if (networks && networks.remotePodCIDR.family !== 4)
        throw new InputError(
          `spec.peers[${i}].${place}remotePodCIDR`,
          formatCidr(networks.remotePodCIDR),
          'an encrypted (IPsec) peering of the kernel fallback carries IPv4 only: its xfrm policies select IPv4 prefixes',
        );
  }
}
