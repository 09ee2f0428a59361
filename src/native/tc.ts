/**
 * Attaching programs to TC hooks. Two mechanisms, one interface:
 * - tcx links (kernel 6.6+): a link pinned on bpffs, found again by its pin path after a restart;
 * - clsact + cls_bpf (every kernel with BPF): a filter at a fixed priority and handle, found again there.
 * `attachTc` tries tcx and falls back to clsact when the kernel refuses the tcx attach type.
 */
import { existsSync } from 'node:fs';
import { isBpfError } from './error';
import { native, type NativeLinkInfo, type NativeTcTarget } from './binding';
import { pinFd, unpin } from './pin';
import type { BpfProgram } from './program';

export type TcTarget = NativeTcTarget;

/** Where a cls_bpf filter sits on a clsact hook. Strait uses fixed slots so it can find its own. */
export interface TcSlot {
  priority: number;
  handle: number;
}

export const BPF_LINK_TYPE_TCX = 11;

export function ifIndex(name: string, netns?: string): number {
  return native().ifNameToIndex(name, netns ?? null);
}

/** The network interfaces of a namespace (by path), or of the current one. */
export function interfaces(netns?: string): { index: number; name: string }[] {
  return native().interfaces(netns ?? null);
}

// --- clsact + cls_bpf ---

/** Attaches at `slot`; with `replace` it atomically swaps the program already there. */
export function attachClsact(target: TcTarget, prog: BpfProgram, slot: TcSlot, replace = false): { progId: number } {
  const r = native().tcAttach(target, { progFd: prog.fd, priority: slot.priority, handle: slot.handle, replace });
  return { progId: r.progId };
}

/** The id of the program at `slot`, or undefined. */
export function queryClsact(target: TcTarget, slot: TcSlot): number | undefined {
  return native().tcQuery(target, slot);
}

/** Removes the filter at `slot`; returns whether there was one. */
export function detachClsact(target: TcTarget, slot: TcSlot): boolean {
  return native().tcDetach(target, slot);
}

/** Removes the clsact qdisc itself (every filter on it, ours or not): for links that Strait created. */
export function removeClsact(target: Omit<TcTarget, 'direction'>): boolean {
  return native().tcHookDestroy({ ...target, direction: 'ingress' });
}

// --- tcx links ---

/** Attaches through a tcx link and pins it at `pinPath` so it outlives this process. */
export function attachTcx(target: TcTarget, prog: BpfProgram, pinPath: string): NativeLinkInfo {
  const fd = native().tcxAttach(target, prog.fd);
  try {
    pinFd(fd, pinPath);
    return native().linkInfo(fd);
  } catch (err) {
    native().linkDetach(fd);
    throw err;
  } finally {
    native().closeFd(fd);
  }
}

function withPinnedLink<T>(pinPath: string, use: (fd: number) => T): T | undefined {
  if (!existsSync(pinPath)) return undefined;
  const fd = native().objGet(pinPath);
  try {
    return use(fd);
  } finally {
    native().closeFd(fd);
  }
}

/** The pinned tcx link at `pinPath`, or undefined. */
export function queryTcx(pinPath: string): NativeLinkInfo | undefined {
  return withPinnedLink(pinPath, (fd) => native().linkInfo(fd));
}

/** Swaps the program of the pinned link atomically; returns false when there is no link. */
export function replaceTcxProgram(pinPath: string, prog: BpfProgram): boolean {
  return (
    withPinnedLink(pinPath, (fd) => {
      native().linkUpdate(fd, prog.fd);
      return true;
    }) ?? false
  );
}

/** Detaches the pinned link and removes the pin; returns whether there was one. */
export function detachTcx(pinPath: string): boolean {
  const found =
    withPinnedLink(pinPath, (fd) => {
      native().linkDetach(fd);
      return true;
    }) ?? false;
  unpin(pinPath);
  return found;
}

// --- either ---

export type TcMode = 'auto' | 'tcx' | 'clsact';

export type TcAttachment =
  | { kind: 'tcx'; target: TcTarget; progId: number; linkId: number; pinPath: string }
  | { kind: 'clsact'; target: TcTarget; progId: number; slot: TcSlot };

export interface AttachOptions {
  mode: TcMode;
  /** Where the tcx link is pinned. */
  pinPath: string;
  /** Where the clsact filter goes. */
  slot: TcSlot;
}

/**
 * Attaches `prog`, or swaps it in where this attachment point already holds one of ours (a restart or an
 * upgrade: no gap in traffic). In `auto` mode an existing attachment keeps its mechanism.
 */
export function attachTc(target: TcTarget, prog: BpfProgram, options: AttachOptions): TcAttachment {
  const progId = () => prog.info().id;
  if (options.mode !== 'clsact') {
    // A link detached by hand (bpftool link detach) or whose device was deleted stays pinned, attached
    // to nothing (ifindex 0), and takes no program again: drop its pin and attach anew.
    const pinned = queryTcx(options.pinPath);
    if (pinned !== undefined && pinned.ifindex !== target.ifindex) unpin(options.pinPath);
    if (replaceTcxProgram(options.pinPath, prog)) {
      const link = queryTcx(options.pinPath)!;
      return { kind: 'tcx', target, progId: link.progId, linkId: link.id, pinPath: options.pinPath };
    }
    const existingClsact = options.mode === 'auto' && queryClsact(target, options.slot) !== undefined;
    if (!existingClsact) {
      try {
        const link = attachTcx(target, prog, options.pinPath);
        return { kind: 'tcx', target, progId: link.progId, linkId: link.id, pinPath: options.pinPath };
      } catch (err) {
        // EINVAL: this kernel does not know the tcx attach types.
        if (options.mode === 'tcx' || !isBpfError(err, 'EINVAL')) throw err;
      }
    }
  }
  const replace = queryClsact(target, options.slot) !== undefined;
  attachClsact(target, prog, options.slot, replace);
  return { kind: 'clsact', target, progId: progId(), slot: options.slot };
}

/** Removes what `attachTc` put there, by either mechanism; returns whether anything was removed. */
export function detachTc(target: TcTarget, options: Omit<AttachOptions, 'mode'>): boolean {
  const tcx = detachTcx(options.pinPath);
  const clsact = detachClsact(target, options.slot);
  return tcx || clsact;
}
