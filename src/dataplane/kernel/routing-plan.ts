/**
 * The fallback's overlay and routing for one node (docs/kernel-fallback.md), pure: spec in, kernel objects out.
 * - every node: a VXLAN device in unicast mode (`strait.vxlan`) with static FDB entries for every other
 *   node, and a permanent neighbour entry per node so routes can use its underlay address as next hop;
 * - workers: remote prefixes via the active gateway through the overlay (table 18952, rules to them);
 * - gateways: remote prefixes through a tunnel per peer (`stpXXXXXXXX`: point-to-point VXLAN, or an xfrm
 *   interface for an encrypted peering), and
 *   traffic arriving from a peer looked up in table 18952 too, where the other nodes' pod prefixes go
 *   through the overlay (symmetric routing: replies leave the way requests came, so strict reverse-path
 *   filtering and cloud source checks pass).
 * Both families of a dual-stack spec take the same devices: IPv6 routes name the far device's
 * link-local address as next hop (identities.ts) where IPv4 routes name its underlay address, each with
 * a permanent neighbour entry giving the MAC. Over an IPv6 underlay (VXLAN between IPv6 ends) IPv4 routes
 * name the link-local address too (RFC 5549).
 */
import { type Cidr, type Ip, type IpFamily, formatCidr, formatIp } from '../../net/cidr';
import { familiesOf, peerNetworks } from '../../nodespec/families';
import type { TunnelDevice } from '../../kernel/tunnel-devices';
import type { NodeDataplaneSpec, PeerSpec } from '../../nodespec/spec';
import { peeringVni, tunnelMac } from '../../nodespec/peer-tunnel';
import { type TunnelMtus, defaultUnderlayMtu, tunnelMtus } from '../../nodespec/tunnel-mtu';
import { linkLocalAddress, overlayDevice, overlayMac, routingTable, rulePriorities, tunnelDevice } from './identities';

interface FdbEntryPlan {
  device: string;
  mac: string;
  /** The VTEP behind the MAC. */
  dst: string;
}

interface NeighbourPlan {
  device: string;
  address: string;
  mac: string;
}

export interface RoutePlan {
  table: number;
  prefix: string;
  /** Next hop, reached on `device` without a connected route to it (onlink); none into an xfrm interface. */
  via?: string;
  device?: string;
  /** A route that rejects (ICMP net unreachable) instead of forwarding. */
  unreachable?: true;
  metric?: number;
}

/** The backstop routes' metric: the largest, so any real route to the same prefix wins. */
const backstopMetric = 0xffff_ffff;

interface RulePlan {
  /** An IPv6 rule without an IPv6 prefix to tell it (absent: IPv4, or the family of `to`). */
  family?: 6;
  priority: number;
  table: number;
  to?: string;
  iif?: string;
}

export interface KernelRoutingPlan {
  devices: TunnelDevice[];
  fdb: FdbEntryPlan[];
  neighbours: NeighbourPlan[];
  routes: RoutePlan[];
  rules: RulePlan[];
}

/**
 * The next hop of a family's routes to the device of `mac` behind `underlay` (and its neighbour entry's
 * address): an IPv4 route's is the IPv4 underlay address; otherwise, an IPv6 route's or an IPv4 one over
 * an IPv6 underlay (RFC 5549), the device's link-local address, which one neighbour entry serves for both.
 */
const nextHop = (family: IpFamily, underlay: Ip, mac: string) =>
  family === 4 && underlay.family === 4 ? formatIp(underlay) : linkLocalAddress(mac);

/** The neighbour entries of `families`' next hops to the device of `mac` behind `underlay`: one per distinct address. */
const nextHopNeighbours = (device: string, families: readonly IpFamily[], underlay: Ip, mac: string): NeighbourPlan[] =>
  [...new Set(families.map((family) => nextHop(family, underlay, mac)))].map((address) => ({ device, address, mac }));

/** A peer's remote prefixes of one family (none if the peering does not carry it). */
export function remotePrefixesOf(peer: PeerSpec, family: IpFamily): Cidr[] {
  const networks = peerNetworks(peer, family);
  return networks ? [networks.remotePodCIDR, networks.remoteExternalCIDR] : [];
}

/**
 * `blockedPeers`: encrypted peers whose IPsec this node cannot set up (no ESP in the kernel, no secret).
 * They get no tunnel, so their traffic meets the unreachable backstop: never sent in the clear.
 * `mtus`: the node's tunnel MTUs (src/kernel/underlay-mtu.ts), given to every tunnel device, so the
 * kernel answers a DF packet too large for one with ICMP fragmentation needed and fragments the others
 * before they are encapsulated; default: a 1500-byte underlay's.
 */
export function planKernelRouting(
  spec: NodeDataplaneSpec,
  blockedPeers: ReadonlySet<string> = new Set(),
  mtus: TunnelMtus = tunnelMtus(defaultUnderlayMtu),
): KernelRoutingPlan {
  const self = spec.node;
  const families = familiesOf(spec);
  const others = spec.nodes.filter((n) => n.name !== self.name);
  const gateway = self.role === 'gateway';
  const devices: TunnelDevice[] = [
    {
      name: overlayDevice,
      vni: spec.overlay.vni,
      port: spec.overlay.port,
      mac: overlayMac(spec.clusterId, self.name),
      local: formatIp(self.underlayAddress),
      mtu: mtus.vxlan,
    },
  ];
  const fdb: FdbEntryPlan[] = others.flatMap((n) => [
    { device: overlayDevice, mac: overlayMac(spec.clusterId, n.name), dst: formatIp(n.underlayAddress) },
    // The all-zero entry floods broadcast and unknown frames to every VTEP (unicast mode, no multicast).
    { device: overlayDevice, mac: '00:00:00:00:00:00', dst: formatIp(n.underlayAddress) },
  ]);
  const neighbours: NeighbourPlan[] = others.flatMap((n) =>
    nextHopNeighbours(overlayDevice, families, n.underlayAddress, overlayMac(spec.clusterId, n.name)),
  );
  const remotePrefixes = families.flatMap((family) => spec.peers.flatMap((p) => remotePrefixesOf(p, family)));
  const rules: RulePlan[] = remotePrefixes.map((to) => ({ priority: rulePriorities.toRemote, table: routingTable, to: formatCidr(to) }));
  // The backstop: whatever route below goes missing, traffic to a peer never falls through to the main table.
  const routes: RoutePlan[] = remotePrefixes.map((prefix) => ({
    table: routingTable,
    prefix: formatCidr(prefix),
    unreachable: true,
    metric: backstopMetric,
  }));
  if (!gateway) {
    const gatewayMac = overlayMac(spec.clusterId, spec.activeGateway.name);
    for (const prefix of remotePrefixes)
      routes.push({
        table: routingTable,
        prefix: formatCidr(prefix),
        via: nextHop(prefix.family, spec.activeGateway.underlayAddress, gatewayMac),
        device: overlayDevice,
      });
  } else {
    for (const p of spec.peers) {
      if (blockedPeers.has(p.clusterId)) continue;
      const device = tunnelDevice(p.peerId);
      const peerFamilies = families.filter((family) => peerNetworks(p, family));
      if (p.transport === 'ipsec') {
        // The xfrm states and policies with this if_id (ipsec-plan.ts) encrypt what is routed into it.
        devices.push({ name: device, ifId: p.peerId, mtu: mtus.ipsec });
        for (const prefix of peerFamilies.flatMap((family) => remotePrefixesOf(p, family)))
          routes.push({ table: routingTable, prefix: formatCidr(prefix), device });
      } else {
        devices.push({
          name: device,
          vni: peeringVni(spec.clusterId, p.clusterId, spec.overlay.vni),
          port: p.endpoint.port,
          mac: tunnelMac(spec.clusterId, p.clusterId),
          remote: formatIp(p.endpoint.address),
          mtu: mtus.vxlan,
        });
        // The far end's tunnel device answers to the MAC it derives for itself; its address is the next hop.
        const mac = tunnelMac(p.clusterId, spec.clusterId);
        neighbours.push(...nextHopNeighbours(device, peerFamilies, p.endpoint.address, mac));
        for (const family of peerFamilies) {
          const via = nextHop(family, p.endpoint.address, mac);
          for (const prefix of remotePrefixesOf(p, family)) routes.push({ table: routingTable, prefix: formatCidr(prefix), via, device });
        }
      }
      for (const family of peerFamilies)
        rules.push({ ...(family === 6 ? { family } : {}), priority: rulePriorities.fromPeer, table: routingTable, iif: device });
    }
    for (const n of others)
      for (const prefix of n.podCIDRs)
        routes.push({
          table: routingTable,
          prefix: formatCidr(prefix),
          via: nextHop(prefix.family, n.underlayAddress, overlayMac(spec.clusterId, n.name)),
          device: overlayDevice,
        });
  }
  return { devices, fdb, neighbours, routes, rules };
}
