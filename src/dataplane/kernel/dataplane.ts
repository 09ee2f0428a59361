/**
 * The kernel fallback behind the dataplane port (../port.ts): VXLAN with static FDB entries, policy
 * routing, nftables NAT and IPsec xfrm, reconciled from the kernel's own state.
 */
import { KernelChangeMonitor } from '../../kernel/change-monitor';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { type ChangeSource, type NodeDataplane, type ProbeResponder, defaultResyncMs } from '../port';
import { type IpsecSetup, type KernelApplyResult, KernelDatapath, kernelApplyChanged } from './kernel-datapath';

/**
 * The kernel fallback. Reading its whole state takes several processes, so a reconcile is skipped while
 * the spec, the secrets' files and the kernel (by its change events) are as they were at the last good
 * apply, up to `resyncMs` (a lost event is repaired then); a hand-made change is an event, so it is still repaired at the next tick.
 * The spec is compared by identity: the agent hands over the same object until its file changes, and
 * serialising a spec of 100,000 NatMappings at every tick would cost more than the skip saves.
 */
export function kernelDataplane(
  datapath: Pick<KernelDatapath, 'validate' | 'apply' | 'inputsVersion'>,
  changes?: ChangeSource,
  resyncMs = defaultResyncMs,
  now = Date.now,
  responder?: ProbeResponder,
): NodeDataplane {
  let lastGood: { spec: NodeDataplaneSpec; inputs: string; at: number } | undefined;
  return {
    kind: 'kernel',
    validate: (spec) => datapath.validate(spec),
    apply(spec) {
      const inputs = datapath.inputsVersion(spec);
      // Taken before applying: events caused by this apply make the next tick look again, once.
      const kernelChanged = changes?.takeChanged() ?? true;
      if (!kernelChanged && lastGood?.spec === spec && lastGood.inputs === inputs && now() - lastGood.at < resyncMs)
        return { conflicts: [] };
      lastGood = undefined;
      const result: KernelApplyResult = datapath.apply(spec);
      // Something the kernel refused is not applied: the node is not ready until it is. So is an
      // encrypted peering that cannot be set up (its traffic is blocked, not sent in the clear).
      const problems = [
        ...(result.failed.length > 0 ? [`the kernel refused: ${result.failed.join('; ')}`] : []),
        ...result.blocked.map((b) => `blocked ${b}`),
      ];
      if (problems.length > 0) throw new Error(problems.join('; '));
      // Answering probes says the node forwards by this spec: only once it does.
      responder?.apply(spec);
      lastGood = { spec, inputs, at: now() };
      // Every apply that is not skipped reads the node's whole state.
      return { ...(kernelApplyChanged(result) ? { changes: { ...result } } : {}), conflicts: [], readAll: true };
    },
    close: () => {
      changes?.close();
      responder?.close();
    },
  };
}

/** Opens the kernel fallback in namespace `netns` (by name; the agent's own when absent), answering probes with `responder`. */
export function openKernelDataplane(netns?: string, ipsec?: IpsecSetup, resyncMs?: number, responder?: ProbeResponder): NodeDataplane {
  return kernelDataplane(new KernelDatapath(netns, ipsec), new KernelChangeMonitor(netns), resyncMs, Date.now, responder);
}
