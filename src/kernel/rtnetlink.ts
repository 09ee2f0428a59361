/**
 * The reconcilers' way to the kernel: rtnetlink dumps and changes through the native addon, in a
 * namespace by name (/run/netns/NAME) or the current one. A batch of changes is one call that sends them
 * all and collects every acknowledgement: one result per change, carrying the kernel's errno (a NetlinkError
 * naming the operation) when it was refused, so one failed change never stops the others.
 */
import type { NetlinkError } from '../native/error';
import {
  type NativeLink,
  type NativeNeighbour,
  type NativeNetlinkChange,
  type NativeRoute,
  type NativeRule,
  native,
} from '../native/binding';
import { netnsPath } from './netns';

export type NetlinkChange = NativeNetlinkChange;
export type NetlinkResult = { ok: true } | { ok: false; error: NetlinkError };
export type { NativeLink, NativeNeighbour, NativeRoute, NativeRule };

const path = (netns?: string) => (netns === undefined ? null : netnsPath(netns));

/** Applies `changes` in order, in one crossing into the addon; one result per change. */
export function applyNetlink(changes: readonly NetlinkChange[], netns?: string): NetlinkResult[] {
  if (changes.length === 0) return [];
  return native()
    .rtnlApply(path(netns), changes)
    .map((error) => (error ? { ok: false, error } : { ok: true }));
}

/** The routes of one family in one table (empty for a table that has no route yet). */
export const dumpRoutes = (table: number, netns?: string, family: 4 | 6 = 4): NativeRoute[] =>
  native().rtnlRouteDump(path(netns), table, family);

/** The policy rules of one family. */
export const dumpRules = (netns?: string, family: 4 | 6 = 4): NativeRule[] => native().rtnlRuleDump(path(netns), family);

/** The IP neighbours (ARP and NDP) of a device. */
export const dumpNeighbours = (dev: string, netns?: string): NativeNeighbour[] => native().rtnlNeighbourDump(path(netns), dev, false);

/** The bridge FDB entries of a device (a VXLAN device's remotes among them). */
export const dumpFdb = (dev: string, netns?: string): NativeNeighbour[] => native().rtnlNeighbourDump(path(netns), dev, true);

/** The links of the namespace. */
export const dumpLinks = (netns?: string): NativeLink[] => native().rtnlLinkDump(path(netns));

/** The IPv4 and IPv6 addresses of the namespace, by device. */
export const dumpAddresses = (netns?: string): { dev: string; address: string }[] => native().rtnlAddressDump(path(netns));

/** Neighbour states (NUD_*) the reconcilers tell apart. */
export const nud = { noarp: 0x40, permanent: 0x80 } as const;
