/**
 * The IP families the kernel fallback carries, checked by its `validate` before anything is programmed:
 * networks of either family in either place (IPv4 only, IPv6 only, dual-stack with either primary, a
 * peering of one family; NAT in `ip strait` and `ip6 strait`, routes and rules of each family the spec
 * has). The underlay stays IPv4: node, gateway and public addresses and peer endpoints are the tunnels'
 * outer addresses. An encrypted peering carries each family it has, through its IPv4 ESP tunnel
 * (ipsec-plan.ts: xfrm policies per family).
 */
import { InputError } from '../../errors';
import { peerNetworks } from '../../nodespec/families';
import { requireIpv4Underlay } from '../../nodespec/ip-family';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { defaultUnderlayMtu, tunnelMtu } from '../../nodespec/tunnel-mtu';

/** Refuses a spec the kernel fallback cannot carry, naming the first field that it cannot. */
export function requireFallbackFamilies(spec: NodeDataplaneSpec): void {
  requireIpv4Underlay(spec, "the kernel fallback's underlay (the tunnels' outer addresses) is IPv4 only");
  requireIpv6Mtu(spec);
}

/** IPv6's minimum link MTU (RFC 8200): Linux takes no IPv6 route into a device with a smaller one. */
const ipv6MinimumMtu = 1280;

/**
 * An encrypted peering carrying IPv6 needs its xfrm interface's MTU (tunnelMTU less 30) to be at least
 * IPv6's minimum: Linux turns IPv6 off on a smaller device and refuses routes into it (ENODEV).
 */
function requireIpv6Mtu(spec: NodeDataplaneSpec): void {
  if (spec.tunnelMTU === undefined) return;
  const mtu = tunnelMtu('ipsec', defaultUnderlayMtu, spec.tunnelMTU);
  const peer = spec.peers.find((p) => p.transport === 'ipsec' && peerNetworks(p, 6));
  if (peer && mtu < ipv6MinimumMtu)
    throw new InputError(
      'spec.tunnelMTU',
      spec.tunnelMTU,
      `the encrypted peering with ${peer.clusterId} carries IPv6, and its tunnel's MTU would be ${mtu}, under IPv6's minimum of ${ipv6MinimumMtu}: give at least ${spec.tunnelMTU + ipv6MinimumMtu - mtu}`,
    );
}
