/**
 * The IP families the kernel fallback carries, checked by its `validate` before anything is programmed
 * (and IPv6's MTU again by each apply, with the MTUs it gives the tunnels):
 * networks of either family in either place (IPv4 only, IPv6 only, dual-stack with either primary, a
 * peering of one family; NAT in `ip strait` and `ip6 strait`, routes and rules of each family the spec
 * has), over an underlay of either family, one for every tunnel end (node, gateway and public addresses,
 * peer endpoints: the tunnels' outer addresses). An encrypted peering carries each family it has,
 * through its ESP tunnel (ipsec-plan.ts: xfrm policies per family).
 */
import { InputError } from '../../errors';
import { familiesOf, peerNetworks } from '../../nodespec/families';
import { requireOneUnderlayFamily } from '../../nodespec/ip-family';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { type NodeTunnelMtus, ipv6MinimumMtu } from '../../nodespec/tunnel-mtu';

/**
 * Refuses a spec the kernel fallback cannot carry, naming the first field that it cannot. `mtus`: the
 * node's tunnel MTUs (src/kernel/underlay-mtu.ts).
 */
export function requireFallbackFamilies(spec: NodeDataplaneSpec, mtus: NodeTunnelMtus): void {
  requireOneUnderlayFamily(spec);
  requireIpv6TunnelMtus(spec, mtus);
}

/**
 * IPv6 needs every tunnel device it is routed into to have at least IPv6's minimum MTU: Linux turns IPv6
 * off on a smaller device and refuses routes and neighbours into it (ENODEV). Those are the VXLAN
 * devices of a spec with IPv6 (every node's overlay, a gateway's tunnels to peers), and a gateway's xfrm
 * interface for an encrypted peering carrying IPv6 (its MTU 30 under the VXLAN one). The override's
 * range keeps VXLAN's at 1280 or more: a smaller one comes from the underlay device.
 */
export function requireIpv6TunnelMtus(spec: NodeDataplaneSpec, mtus: NodeTunnelMtus): void {
  if (!familiesOf(spec).includes(6)) return;
  if (mtus.vxlan < ipv6MinimumMtu) throw mtuRefusal(spec, mtus, mtus.vxlan, "this cluster has IPv6, and its VXLAN tunnels' MTU");
  const encrypted = spec.node.role === 'gateway' ? spec.peers.find((p) => p.transport === 'ipsec' && peerNetworks(p, 6)) : undefined;
  if (encrypted && mtus.ipsec < ipv6MinimumMtu)
    throw mtuRefusal(spec, mtus, mtus.ipsec, `the encrypted peering with ${encrypted.clusterId} carries IPv6, and its tunnel's MTU`);
}

/**
 * The refusal of `tunnel`'s MTU of `mtu`, naming what sets it: the underlay device when the MTUs derive
 * from one, else `spec.tunnelMTU` (given, or to be given: the override is the VXLAN tunnels' MTU, and
 * both tunnel MTUs move with it byte for byte, as with the device's).
 */
function mtuRefusal(spec: NodeDataplaneSpec, mtus: NodeTunnelMtus, mtu: number, tunnel: string): InputError {
  const missing = ipv6MinimumMtu - mtu;
  const why = `${tunnel} would be ${mtu}, under IPv6's minimum of ${ipv6MinimumMtu}`;
  const { underlay } = mtus;
  if (underlay)
    return new InputError(
      `the MTU of ${underlay.name} (the node's underlay device)`,
      underlay.mtu,
      `${why}: without spec.tunnelMTU the tunnels' MTU follows this device's; raise it to at least ${underlay.mtu + missing}`,
    );
  return new InputError('spec.tunnelMTU', spec.tunnelMTU, `${why}: give at least ${mtus.vxlan + missing}`);
}
