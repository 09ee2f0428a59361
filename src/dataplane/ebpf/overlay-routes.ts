/**
 * Kernel routes for every peer's remote prefixes (remotePodCIDR, remoteExternalCIDR) through the eBPF
 * datapath's overlay device. The programs do the forwarding; these routes exist so strict reverse-path
 * filtering accepts traffic arriving from peers on the overlay device, and so what the stack itself
 * routes to a peer (a pod's connection to a service address after a service proxy's DNAT) goes there,
 * where the device's egress program takes it. They are Strait's protocol-252 routes of the main table (src/kernel/routes.ts'
 * scope), and a prefix that already has a route of another protocol is left alone and reported as a
 * conflict rather than taken over.
 */
import { formatCidr } from '../../net/cidr';
import { reconcileRoutes, routedElsewhere, straitRouteProtocol } from '../../kernel/routes';
import { peerNetworks } from '../../nodespec/families';
import type { NodeDataplaneSpec } from '../../nodespec/spec';

export interface RouteChanges {
  added: string[];
  removed: string[];
  /** Wanted prefixes that already have a route of another protocol: left alone. */
  conflicts: string[];
}

/**
 * Pure: the prefixes a spec routes through the overlay device, canonical and sorted: each family's of
 * the peerings that carry it, whichever place the family has in the spec.
 */
export function desiredRoutes(spec: NodeDataplaneSpec): string[] {
  const prefixes = spec.peers.flatMap((p) =>
    ([4, 6] as const).flatMap((family) => {
      const n = peerNetworks(p, family);
      return n ? [n.remotePodCIDR, n.remoteExternalCIDR] : [];
    }),
  );
  return [...new Set(prefixes.map(formatCidr))].sort();
}

/** Makes Strait's routes in the main table exactly `prefixes` on `device`, but for the conflicts. */
export function reconcileOverlayRoutes(prefixes: readonly string[], device: string, netns?: string): RouteChanges {
  const conflicts = routedElsewhere(prefixes, netns);
  const changes = reconcileRoutes(
    prefixes.filter((p) => !conflicts.includes(p)).map((dst) => ({ dst, dev: device })),
    { protocol: straitRouteProtocol },
    netns,
  );
  if (changes.failed.length > 0)
    throw new Error(`routes on ${device} not applied: ${changes.failed.map((f) => `${f.item.dst}: ${f.error.message}`).join('; ')}`);
  return {
    added: [...changes.added, ...changes.changed].map((r) => r.dst).sort(),
    removed: changes.deleted.map((r) => r.dst).sort(),
    conflicts,
  };
}
