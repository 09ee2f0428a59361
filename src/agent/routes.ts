/**
 * Kernel routes for every peer's remote prefixes (remotePodCIDR, remoteExternalCIDR) through the overlay
 * device. The programs do the forwarding; these routes exist so strict reverse-path filtering accepts
 * traffic arriving from peers on the overlay device, and so the node's own traffic to a peer goes there.
 *
 * Strait's routes carry protocol 252 ("proto 252", a number from the range iproute2 leaves free), so
 * the reconcile only ever changes routes it made: routes of another protocol are left alone, and a prefix
 * that already has one in the main table is reported as a conflict instead of being replaced (a route's
 * identity is prefix + metric, so `ip route replace` would overwrite it). IPv4 only, like the eBPF
 * datapath: the agent applies only specs the datapath accepted.
 */
import { formatCidr, parseCidr } from '../ipam/cidr';
import { ip } from '../kernel/command';
import { runIpBatch } from '../kernel/ip-batch';
import { straitRouteProtocol } from '../kernel/routes';
import type { NodeDataplaneSpec } from '../nodespec/spec';

export interface KernelRoute {
  dst: string;
  dev?: string;
  protocol?: string;
  metric?: number;
}

export interface RouteDiff {
  add: string[];
  remove: string[];
  /** Wanted prefixes that already have a route of another protocol: left alone. */
  conflicts: string[];
}

export interface RouteChanges {
  added: string[];
  removed: string[];
  conflicts: string[];
}

/** `ip -j` shows a host route without its /32. */
const canonical = (dst: string): string => formatCidr(parseCidr('route.dst', dst.includes('/') ? dst : `${dst}/32`));

/** Pure: the prefixes a spec routes through the overlay device, canonical and sorted. */
export function desiredRoutes(spec: NodeDataplaneSpec): string[] {
  const prefixes = spec.peers.flatMap((p) => [p.remotePodCIDR, p.remoteExternalCIDR]).map((c) => formatCidr(parseCidr('remote prefix', c)));
  return [...new Set(prefixes)].sort();
}

const ours = (r: KernelRoute, device: string) => r.protocol === String(straitRouteProtocol) && r.dev === device;

/** Pure: what turns the main table `current` into one with a Strait route on `device` for each of `desired`. */
export function diffRoutes(current: readonly KernelRoute[], desired: readonly string[], device: string): RouteDiff {
  const have = new Set(current.filter((r) => ours(r, device)).map((r) => canonical(r.dst)));
  // Same prefix, metric 0, not ours: `ip route replace` would take it over.
  const foreign = new Set(current.filter((r) => !ours(r, device) && !r.metric && r.dst !== 'default').map((r) => canonical(r.dst)));
  const want = new Set(desired);
  return {
    add: desired.filter((d) => !have.has(d) && !foreign.has(d)),
    remove: [...have].filter((d) => !want.has(d)).sort(),
    conflicts: desired.filter((d) => foreign.has(d)),
  };
}

/** The IPv4 main table (all devices: a foreign route for one of our prefixes may be on any of them). */
export function readMainRoutes(netnsName?: string): KernelRoute[] {
  return JSON.parse(ip(['-4', '-j', 'route', 'show', 'table', 'main'], netnsName)) as KernelRoute[];
}

/** Makes the Strait routes on `device` exactly `desired` (`netnsName`: a name under /run/netns, or ours). */
export function reconcileRoutes(desired: readonly string[], device: string, netnsName?: string): RouteChanges {
  const diff = diffRoutes(readMainRoutes(netnsName), desired, device);
  const tail = `dev ${device} table main proto ${straitRouteProtocol}`;
  const lines = [...diff.add.map((dst) => `route replace ${dst} ${tail}`), ...diff.remove.map((dst) => `route del ${dst} ${tail}`)];
  if (lines.length > 0) {
    // One process for the whole difference, not one per route.
    const failed = runIpBatch(lines, netnsName).flatMap((r, i) => (r.ok ? [] : [`${lines[i]}: ${r.error}`]));
    if (failed.length > 0) throw new Error(`routes on ${device} not applied: ${failed.join('; ')}`);
  }
  return { added: diff.add, removed: diff.remove, conflicts: diff.conflicts };
}
