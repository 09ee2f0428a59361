/**
 * Tells a reconciler whether the kernel state it owns may have changed since it last looked, from the
 * kernel's own change events rather than by reading everything again: the netlink multicast groups of
 * links, addresses, routes, rules, neighbours and FDB entries, xfrm states and policies, and nftables,
 * heard in the node's namespace (kernel/netlink-monitor.ts). Reading the whole state costs a dump of
 * every table it owns; most reconciles find nothing to do, so they can be skipped while no event came.
 *
 * Our own writes are events too: the reconcile after a change runs again, finds nothing, and writes
 * nothing, after which it is quiet. Events the kernel dropped (a full receive buffer) count as a change.
 */
import type { NativeError } from '../native/error';
import type { NetlinkEvent } from '../native/binding';
import { type NetlinkGroup, NetlinkMonitor } from './netlink-monitor';
import { netnsPath } from './netns';

/** What the kernel fallback owns: every kind of state it writes, xfrm included. */
const fallbackKernelEvents: readonly NetlinkGroup[] = ['link', 'addr', 'route', 'rule', 'neigh', 'nft', 'xfrm'];

export class KernelChangeMonitor {
  private readonly monitors: NetlinkMonitor[] = [];
  private changed = true;

  /**
   * `netns`: a namespace by name, as for `ip -n`; default: ours. `listener` also hears every event (the
   * eBPF agent's new pod interfaces), on the same sockets. Throws a NetlinkError when a socket cannot be opened.
   */
  constructor(netns?: string, groups: readonly NetlinkGroup[] = fallbackKernelEvents, listener?: (events: NetlinkEvent[]) => void) {
    const path = netns === undefined ? undefined : netnsPath(netns);
    const onEvents = (events: NetlinkEvent[]) => {
      this.changed = true;
      listener?.(events);
    };
    const rtnetlink = groups.filter((g) => g !== 'xfrm');
    if (rtnetlink.length > 0) this.monitors.push(new NetlinkMonitor(rtnetlink, onEvents, path));
    if (!groups.includes('xfrm')) return;
    try {
      this.monitors.push(new NetlinkMonitor(['xfrm'], onEvents, path));
    } catch (err) {
      // A kernel without xfrm netlink (no xfrm_user) runs the fallback without IPsec: no xfrm state to watch.
      if ((err as NativeError).code !== 'EPROTONOSUPPORT') {
        this.close();
        throw err;
      }
    }
  }

  /** Whether anything may have changed since the last call (true the first time). */
  takeChanged(): boolean {
    const changed = this.changed;
    this.changed = false;
    return changed;
  }

  close(): void {
    for (const monitor of this.monitors) monitor.close();
  }
}
