/**
 * The fallback's overlay and routing for one node (seed 001), pure: spec in, kernel objects out.
 * - every node: a VXLAN device in unicast mode (`strait.vxlan`) with static FDB entries for every other
 *   node, and a permanent neighbour entry per node so routes can use its underlay address as next hop;
 * - workers: remote prefixes via the active gateway through the overlay (table 18952, rules to them);
 * - gateways: remote prefixes through a point-to-point VXLAN tunnel per peer (`stpXXXXXXXX`), and
 *   traffic arriving from a peer looked up in table 18952 too, where the other nodes' pod prefixes go
 *   through the overlay (symmetric routing: replies leave the way requests came, so strict reverse-path
 *   filtering and cloud source checks pass).
 */
import { formatCidr, parseCidr, parseIp } from '../ipam/cidr';
import type { UnicastVxlanDevice } from '../kernel/vxlan-devices';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { overlayDevice, overlayMac, peeringVni, routingTable, rulePriorities, tunnelDevice, tunnelMac } from './identities';


export interface FdbEntryPlan {
  device: string;
  mac: string;
  /** The VTEP behind the MAC. */
  dst: string;
}

export interface NeighbourPlan {
  device: string;
  address: string;
  mac: string;
}

export interface RoutePlan {
  table: number;
  prefix: string;
  /** Next hop, reached on `device` without a connected route (onlink). */
  via: string;
  device: string;
}

export interface RulePlan {
  priority: number;
  table: number;
  to?: string;
  iif?: string;
}

export interface KernelRoutingPlan {
  devices: UnicastVxlanDevice[];
  fdb: FdbEntryPlan[];
  neighbours: NeighbourPlan[];
  routes: RoutePlan[];
  rules: RulePlan[];
}

const canonicalPrefix = (field: string, text: string) => formatCidr(parseCidr(field, text));

export function planKernelRouting(spec: NodeDataplaneSpec): KernelRoutingPlan {
  const self = spec.node;
  const others = spec.nodes.filter((n) => n.name !== self.name);
  const gateway = self.role === 'gateway';
  const devices: UnicastVxlanDevice[] = [
    { name: overlayDevice, vni: spec.overlay.vni, port: spec.overlay.port, mac: overlayMac(spec.clusterId, self.name), local: self.underlayAddress },
  ];
  const fdb: FdbEntryPlan[] = others.flatMap((n) => [
    { device: overlayDevice, mac: overlayMac(spec.clusterId, n.name), dst: n.underlayAddress },
    // The all-zero entry floods broadcast and unknown frames to every VTEP (unicast mode, no multicast).
    { device: overlayDevice, mac: '00:00:00:00:00:00', dst: n.underlayAddress },
  ]);
  const neighbours: NeighbourPlan[] = others.map((n) => ({ device: overlayDevice, address: n.underlayAddress, mac: overlayMac(spec.clusterId, n.name) }));
  const remotePrefixes = spec.peers.flatMap((p, i) => [canonicalPrefix(`peers[${i}].remotePodCIDR`, p.remotePodCIDR), canonicalPrefix(`peers[${i}].remoteExternalCIDR`, p.remoteExternalCIDR)]);
  const rules: RulePlan[] = remotePrefixes.map((to) => ({ priority: rulePriorities.toRemote, table: routingTable, to }));
  const routes: RoutePlan[] = [];
  if (!gateway) {
    for (const prefix of remotePrefixes) routes.push({ table: routingTable, prefix, via: spec.activeGateway.underlayAddress, device: overlayDevice });
  } else {
    for (const [i, p] of spec.peers.entries()) {
      const device = tunnelDevice(p.peerId);
      parseIp(`peers[${i}].endpoint.address`, p.endpoint.address);
      devices.push({ name: device, vni: peeringVni(spec.clusterId, p.clusterId, spec.overlay.vni), port: p.endpoint.port, mac: tunnelMac(spec.clusterId, p.clusterId), remote: p.endpoint.address });
      // The far end's tunnel device answers to the MAC it derives for itself; its address is the next hop.
      neighbours.push({ device, address: p.endpoint.address, mac: tunnelMac(p.clusterId, spec.clusterId) });
      for (const prefix of [p.remotePodCIDR, p.remoteExternalCIDR]) routes.push({ table: routingTable, prefix: canonicalPrefix(`peers[${i}]`, prefix), via: p.endpoint.address, device });
      rules.push({ priority: rulePriorities.fromPeer, table: routingTable, iif: device });
    }
    for (const n of others) for (const prefix of n.podCIDRs) routes.push({ table: routingTable, prefix: canonicalPrefix(`nodes.${n.name}.podCIDRs`, prefix), via: n.underlayAddress, device: overlayDevice });
  }
  return { devices, fdb, neighbours, routes, rules };
}
