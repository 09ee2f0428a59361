/**
 * Programs a pod interface as soon as the kernel announces it: a netlink link event in the node's
 * namespace (a veth created, moved in or renamed) attaches the pod program at once, rather than at the
 * agent's next reconcile, which stays the safety net for an event lost or an attach that failed.
 */
import type { NetlinkEvent } from '../../native/binding';
import type { Logger } from '../../log';
import type { NodeDatapath } from './node-datapath';

/** What to do with the link events of the node's namespace (the eBPF dataplane's change monitor hears them). */
export function podInterfaceListener(datapath: Pick<NodeDatapath, 'attachPodInterface'>, log: Logger): (events: NetlinkEvent[]) => void {
  return (events) => {
    // A batch may announce one link many times (created, then up): one attempt each.
    const names = new Set(events.flatMap((e) => (e.kind === 'link' && e.action === 'new' && e.ifname !== undefined ? [e.ifname] : [])));
    for (const ifname of names) {
      try {
        const change = datapath.attachPodInterface(ifname);
        if (change && change.change !== 'unchanged')
          log.info({ interface: ifname, program: change.program, change: change.change, kind: change.kind }, 'pod interface programmed');
      } catch (err) {
        // Gone again, or refused: the next reconcile tries again (and reports a lasting failure).
        log.warn(
          { interface: ifname, error: (err as Error).message },
          'cannot program a new pod interface; the next reconcile will try again',
        );
      }
    }
  };
}
