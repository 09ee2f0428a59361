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
 */
import { formatCidr, formatIp } from '../../net/cidr';
import type { TunnelDevice } from '../../kernel/tunnel-devices';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { peeringVni, tunnelMac } from '../../nodespec/peer-tunnel';
import { type TunnelMtus, defaultUnderlayMtu, tunnelMtus } from '../../nodespec/tunnel-mtu';
import { overlayDevice, overlayMac, routingTable, rulePriorities, tunnelDevice } from './identities';

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
  const neighbours: NeighbourPlan[] = others.map((n) => ({
    device: overlayDevice,
    address: formatIp(n.underlayAddress),
    mac: overlayMac(spec.clusterId, n.name),
  }));
  const remotePrefixes = spec.peers.flatMap((p) => [formatCidr(p.remotePodCIDR), formatCidr(p.remoteExternalCIDR)]);
  const rules: RulePlan[] = remotePrefixes.map((to) => ({ priority: rulePriorities.toRemote, table: routingTable, to }));
  // The backstop: whatever route below goes missing, traffic to a peer never falls through to the main table.
  const routes: RoutePlan[] = remotePrefixes.map((prefix) => ({ table: routingTable, prefix, unreachable: true, metric: backstopMetric }));
  if (!gateway) {
    for (const prefix of remotePrefixes)
      routes.push({ table: routingTable, prefix, via: formatIp(spec.activeGateway.underlayAddress), device: overlayDevice });
  } else {
    for (const p of spec.peers) {
      if (blockedPeers.has(p.clusterId)) continue;
      const device = tunnelDevice(p.peerId);
      const endpoint = formatIp(p.endpoint.address);
      const prefixes = [p.remotePodCIDR, p.remoteExternalCIDR].map(formatCidr);
      if (p.transport === 'ipsec') {
        // The xfrm states and policies with this if_id (ipsec-plan.ts) encrypt what is routed into it.
        devices.push({ name: device, ifId: p.peerId, mtu: mtus.ipsec });
        for (const prefix of prefixes) routes.push({ table: routingTable, prefix, device });
      } else {
        devices.push({
          name: device,
          vni: peeringVni(spec.clusterId, p.clusterId, spec.overlay.vni),
          port: p.endpoint.port,
          mac: tunnelMac(spec.clusterId, p.clusterId),
          remote: endpoint,
          mtu: mtus.vxlan,
        });
        // The far end's tunnel device answers to the MAC it derives for itself; its address is the next hop.
        neighbours.push({ device, address: endpoint, mac: tunnelMac(p.clusterId, spec.clusterId) });
        for (const prefix of prefixes) routes.push({ table: routingTable, prefix, via: endpoint, device });
      }
      rules.push({ priority: rulePriorities.fromPeer, table: routingTable, iif: device });
    }
    for (const n of others)
      for (const prefix of n.podCIDRs)
        routes.push({ table: routingTable, prefix: formatCidr(prefix), via: formatIp(n.underlayAddress), device: overlayDevice });
  }
  return { devices, fdb, neighbours, routes, rules };
}
