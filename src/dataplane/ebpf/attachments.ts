/**
 * Strait's TC attachments on a node and the pins that tell them apart: which program runs on which
 * interface's ingress or egress (a hook), made to match what is wanted (attach, swap atomically, detach the stale), and
 * found again by a restarted agent or `--cleanup` from the pin root alone. Shared by the eBPF datapath
 * (node-datapath.ts) and the probe responder the kernel fallback runs (liveness-responder.ts).
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  type BpfObject,
  type TcMode,
  type TcSlot,
  attachTc,
  detachClsact,
  detachTcx,
  ifIndex,
  interfaces,
  pinFd,
  queryClsact,
  queryTcx,
  unpin,
  unpinAll,
} from '../../native';

/** The clsact slot Strait uses on every interface ('ST'): how a restart finds its filters. */
export const straitSlot: TcSlot = { priority: 1, handle: 0x5354 };

export const linksDir = (pinRoot: string) => join(pinRoot, 'links');

export type Direction = 'ingress' | 'egress';
const directions: readonly Direction[] = ['ingress', 'egress'];

/** Where a program runs: one direction of one interface. */
interface Hook {
  interface: string;
  direction: Direction;
}

// bpffs refuses '.' in names, and interface names may hold one (eth0.100): escape it.
const linkPinName = (hook: Hook) => `${hook.direction}_${encodeURIComponent(hook.interface).replace(/\./g, '%2E')}`;
const hookOfPin = (pin: string): Hook | undefined => {
  const match = /^(ingress|egress)_(.+)$/.exec(pin);
  return match ? { direction: match[1] as Direction, interface: decodeURIComponent(match[2]!) } : undefined;
};
const linkPin = (pinRoot: string, hook: Hook) => join(linksDir(pinRoot), linkPinName(hook));
const sameHook = (a: Hook, b: Hook) => a.interface === b.interface && a.direction === b.direction;

/**
 * Every program a datapath loads is pinned under the pin root as `<name>@<id>` until no attachment runs
 * it: how an agent tells which program an attachment runs, and that a clsact filter is its own, from
 * the program's id alone. (Asking the kernel, BPF_PROG_GET_FD_BY_ID, needs CAP_SYS_ADMIN, which the
 * agent's container does not have: docs/helm.md.) The pin holds the program, so its id stays its own.
 */
const programsDir = (pinRoot: string) => join(pinRoot, 'programs');
const programPin = (pinRoot: string, name: string, id: number) => join(programsDir(pinRoot), `${name}@${id}`);

/** The programs pinned under the pin root: full name by id. */
function pinnedPrograms(pinRoot: string): Map<number, string> {
  let pins: string[] = [];
  try {
    pins = readdirSync(programsDir(pinRoot));
  } catch {
    // none pinned
  }
  const byId = new Map<number, string>();
  for (const pin of pins) {
    const match = /^(.+)@(\d+)$/.exec(pin);
    if (match) byId.set(Number(match[2]), match[1]!);
  }
  return byId;
}

export interface AttachmentChange extends Hook {
  program: string;
  change: 'attached' | 'replaced' | 'unchanged' | 'detached';
  kind?: 'tcx' | 'clsact';
}

/** Where a loaded object's programs are attached from, and how. */
export interface AttachOptions {
  pinRoot: string;
  /** The node's namespace (a path under /run/netns); default: the process's. */
  netns?: string;
  /** tcx where the kernel has it, else clsact (auto); or forced. */
  attachMode?: TcMode;
}

/** The programs of one loaded object, attached where wanted. */
export class Attachments {
  /** Pins `programs` of `obj` (by name and id) so attachments running them are found again. */
  constructor(
    private readonly obj: BpfObject,
    private readonly programs: readonly string[],
    private readonly options: AttachOptions,
  ) {
    for (const name of programs) {
      const prog = obj.program(name);
      pinFd(prog.fd, programPin(options.pinRoot, name, prog.info().id));
    }
  }

  /** Makes each hook of `wanted` run its program, detaches the others of ours, unpins what no attachment runs. */
  reconcile(wanted: readonly WantedAttachment[]): AttachmentChange[] {
    const { pinRoot, netns } = this.options;
    const changes: AttachmentChange[] = [];
    for (const w of wanted) changes.push(this.attach(w.interface, w.program, w.direction));
    for (const stale of findAttachments(pinRoot, netns).filter((a) => !wanted.some((w) => sameHook(w, a)))) {
      detachAttachment(pinRoot, netns, stale);
      changes.push({
        interface: stale.interface,
        direction: stale.direction,
        program: stale.program,
        change: 'detached',
        kind: stale.kind,
      });
    }
    this.unpinUnusedPrograms();
    return changes;
  }

  /** Makes `program` the one on `ifname`'s `direction`, unless it is already. */
  attach(ifname: string, program: string, direction: Direction = 'ingress'): AttachmentChange {
    const { pinRoot, netns } = this.options;
    const prog = this.obj.program(program);
    const target = { ifindex: ifIndex(ifname, netns), direction, netns };
    const pinPath = linkPin(pinRoot, { interface: ifname, direction });
    // A pinned link counts only while attached to this interface (see attachTc).
    const link = queryTcx(pinPath);
    const before = (link?.ifindex === target.ifindex ? link.progId : undefined) ?? queryClsact(target, straitSlot);
    if (before === prog.info().id) return { interface: ifname, direction, program, change: 'unchanged' };
    const done = attachTc(target, prog, { mode: this.options.attachMode ?? 'auto', pinPath, slot: straitSlot });
    return { interface: ifname, direction, program, change: before === undefined ? 'attached' : 'replaced', kind: done.kind };
  }

  /** Unpins the programs of earlier loads that no attachment runs any more (a restart's, once swapped out). */
  private unpinUnusedPrograms(): void {
    const { pinRoot, netns } = this.options;
    const keep = new Set([
      ...this.programs.map((name) => this.obj.program(name).info().id),
      ...findAttachments(pinRoot, netns).map((a) => a.progId),
    ]);
    for (const [id, name] of pinnedPrograms(pinRoot)) if (!keep.has(id)) unpin(programPin(pinRoot, name, id));
  }
}

/** A program wanted on a hook. */
export interface WantedAttachment extends Hook {
  program: string;
}

export interface FoundAttachment extends Hook {
  program: string;
  progId: number;
  kind: 'tcx' | 'clsact';
}

/**
 * Strait's attachments in a namespace: links pinned under the pin root, and the clsact filters at our
 * slot that run a program pinned there.
 */
export function findAttachments(pinRoot: string, netns?: string): FoundAttachment[] {
  const found: FoundAttachment[] = [];
  const programs = pinnedPrograms(pinRoot);
  let pins: string[] = [];
  try {
    pins = readdirSync(linksDir(pinRoot));
  } catch {
    // no pin root: no links
  }
  for (const pin of pins) {
    const hook = hookOfPin(pin);
    const link = hook && queryTcx(join(linksDir(pinRoot), pin));
    // Our pin, so our link, whatever it runs; named when the program is pinned here (unpinned by hand, it is not).
    if (hook && link)
      found.push({
        ...hook,
        program: programs.get(link.progId) ?? `program ${link.progId}`,
        progId: link.progId,
        kind: 'tcx',
      });
  }
  for (const { index, name } of interfaces(netns))
    for (const direction of directions) {
      const progId = queryClsact({ ifindex: index, direction, netns }, straitSlot);
      const program = progId === undefined ? undefined : programs.get(progId);
      if (program) found.push({ interface: name, direction, program, progId: progId!, kind: 'clsact' });
    }
  return found;
}

/**
 * Removes every pin under the pin root but those `kept` attachments need (their link and program pins)
 * and the maps named in `maps`; the directory goes when nothing is kept.
 */
export function unpinAllBut(pinRoot: string, kept: readonly FoundAttachment[], maps: readonly string[]): void {
  if (kept.length === 0 && maps.length === 0) return unpinAll(pinRoot);
  const keep = new Set([
    ...kept.map((a) => linkPin(pinRoot, a)),
    ...kept.map((a) => programPin(pinRoot, a.program, a.progId)),
    ...maps.map((m) => join(pinRoot, m)),
  ]);
  let entries: string[] = [];
  try {
    entries = readdirSync(pinRoot);
  } catch {
    return; // no pin root: nothing pinned
  }
  for (const entry of entries) {
    const path = join(pinRoot, entry);
    const inner = [linksDir(pinRoot), programsDir(pinRoot)].includes(path) ? readdirSync(path).map((e) => join(path, e)) : [path];
    for (const pin of inner) if (!keep.has(pin)) rmSync(pin, { recursive: true, force: true });
  }
}

export function detachAttachment(pinRoot: string, netns: string | undefined, a: FoundAttachment): void {
  if (a.kind === 'tcx') {
    detachTcx(linkPin(pinRoot, a));
    return;
  }
  const ifindex = interfaces(netns).find((i) => i.name === a.interface)?.index;
  if (ifindex !== undefined) detachClsact({ ifindex, direction: a.direction, netns }, straitSlot);
}
