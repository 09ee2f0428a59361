/**
 * The kernel's change events from netlink multicast groups (native/src/netlink-monitor.cc): links,
 * addresses, routes, rules, neighbours and FDB entries (rtnetlink), xfrm states and policies, nftables.
 * Events arrive on the event loop, in batches, as the kernel sends them; a monitor opened in a namespace
 * hears that namespace only. It holds kernel sockets until close(), and never keeps the process alive.
 */
import { type NetlinkEvent, native } from '../native/binding';

export type NetlinkGroup = 'link' | 'addr' | 'route' | 'rule' | 'neigh' | 'xfrm' | 'nft';

export class NetlinkMonitor {
  private id: number | undefined;

  /** Throws a NetlinkError (errno, code, operation) when a socket cannot be opened or joined. `netns`: a path (/run/netns/NAME); default: ours. */
  constructor(groups: readonly NetlinkGroup[], onEvents: (events: NetlinkEvent[]) => void, netns?: string) {
    this.id = native().netlinkMonitorOpen(netns ?? null, [...groups], onEvents);
  }

  /** Closes the sockets now: no event is delivered after this returns. Safe to call twice. */
  close(): void {
    if (this.id === undefined) return;
    native().netlinkMonitorClose(this.id);
    this.id = undefined;
  }
}
