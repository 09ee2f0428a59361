/**
 * The eBPF datapath of one node, the imperative shell around the pure parts: loads the programs with the
 * node's pinned maps, programs the maps from a spec, and attaches the programs to the overlay device and
 * to every pod interface. A restarted agent reuses the pinned maps and swaps its programs into the
 * existing attachments atomically, so traffic never sees a gap.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  BpfObject,
  type TcMode,
  type TcSlot,
  attachTc,
  detachClsact,
  detachTcx,
  ensureBpffs,
  ifIndex,
  interfaces,
  pinFd,
  queryClsact,
  queryTcx,
  unpin,
  unpinAll,
} from '../../native';
import { netnsNameOf } from '../../kernel/netns';
import { formatIp } from '../../net/cidr';
import { nodeTunnelMtus } from '../../kernel/underlay-mtu';
import { dumpAddresses } from '../../kernel/rtnetlink';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { AppliedMaps, type ApplyResult } from './apply-maps';
import { desiredTables } from './desired-maps';
import { type DatapathMaps, Program, datapathObjectPath, openMaps } from './layout';
import { ensureOverlayDevice, removeOverlayDevice } from './overlay-device';

export interface NodeDatapathOptions {
  /** Where this node's maps and links are pinned (one directory per node: many share a machine in the lab). */
  pinRoot: string;
  /** The node's network namespace (a path under /run/netns); default: the agent's own. */
  netns?: string;
  /** Name of the VXLAN collect_md device. */
  overlayDevice?: string;
  /** Pod interfaces (host side of each pod's veth) are those whose name matches. */
  podInterfaces: RegExp;
  /** tcx where the kernel has it, else clsact (auto); or forced. */
  attachMode?: TcMode;
}

/** The clsact slot Strait uses on every interface ('ST'): how a restart finds its filters. */
export const straitSlot: TcSlot = { priority: 1, handle: 0x5354 };
export const defaultOverlayDevice = 'strait0';

const linksDir = (pinRoot: string) => join(pinRoot, 'links');
// bpffs refuses '.' in names, and interface names may hold one (eth0.100): escape it.
const linkPinName = (ifname: string) => `ingress_${encodeURIComponent(ifname).replace(/\./g, '%2E')}`;
const ifnameOfPin = (pin: string) => decodeURIComponent(pin.replace(/^ingress_/, ''));
const linkPin = (pinRoot: string, ifname: string) => join(linksDir(pinRoot), linkPinName(ifname));

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

export interface AttachmentChange {
  interface: string;
  program: string;
  change: 'attached' | 'replaced' | 'unchanged' | 'detached';
  kind?: 'tcx' | 'clsact';
}

/**
 * What an apply looks at besides the spec. `kernel`: the overlay device and every interface's attachment
 * (else the device as found last time, unless the spec's part of it changed, and no attachment is looked
 * at); `readMaps`: the maps' contents (else they are taken to hold what this process last wrote, and an
 * unchanged spec writes nothing).
 */
export interface ApplyScope {
  kernel: boolean;
  readMaps: boolean;
}

const everything: ApplyScope = { kernel: true, readMaps: true };

const unchangedMaps: ApplyResult = Object.fromEntries(
  ['config', 'peers', 'routes', 'natmap', 'natmapRev', 'nodes', 'peerCounters', 'liveness'].map((m) => [m, { written: 0, deleted: 0 }]),
) as ApplyResult;

/** What of a spec the overlay device depends on (its MTU: src/kernel/underlay-mtu.ts). */
const overlayInputs = (spec: NodeDataplaneSpec): string => {
  const { port, mac } = spec.overlay;
  const { role, underlayAddress, publicAddress } = spec.node;
  return JSON.stringify([
    port,
    mac,
    spec.tunnelMTU ?? null,
    role,
    formatIp(underlayAddress),
    publicAddress === undefined ? null : formatIp(publicAddress),
  ]);
};

export interface NodeApplyResult {
  overlayDeviceChanged: boolean;
  maps: ApplyResult;
  attachments: AttachmentChange[];
}

export class NodeDatapath {
  private readonly applied: AppliedMaps;
  /** The overlay device as the last kernel look found it, which the maps name, and the spec's part of it then. */
  private overlay?: { ifindex: number; mtu: number; inputs: string };
  /** What the maps were last made to hold, and from which overlay device. */
  private mapped?: { spec: NodeDataplaneSpec; ifindex: number; mtu: number };
  /** Which load of the datapath this is, as probes see it: the second it loaded (a restart changes it). */
  private readonly generation = Math.floor(Date.now() / 1000) >>> 0;

  private constructor(
    private readonly obj: BpfObject,
    readonly maps: DatapathMaps,
    private readonly options: NodeDatapathOptions,
    /** Maps an earlier build pinned with another layout, created afresh by this load (apply refills them). */
    readonly replacedMaps: readonly string[],
  ) {
    this.applied = new AppliedMaps(maps);
  }

  /**
   * Loads the programs, reusing the maps pinned under `pinRoot` by an earlier run; one pinned by another
   * build with a layout this one cannot use (e.g. strait_config, once a hash) is replaced. The programs
   * still attached keep the old map until apply swaps them, after writing the new one.
   */
  static async load(options: NodeDatapathOptions): Promise<NodeDatapath> {
    ensureBpffs();
    mkdirSync(linksDir(options.pinRoot), { recursive: true });
    let replaced: string[] = [];
    const obj = await BpfObject.load(datapathObjectPath, { pinRoot: options.pinRoot }, (o) => {
      replaced = o.unpinIncompatible();
    });
    try {
      for (const name of Object.values(Program)) {
        const prog = obj.program(name);
        pinFd(prog.fd, programPin(options.pinRoot, name, prog.info().id));
      }
      return new NodeDatapath(obj, openMaps(obj), options, replaced);
    } catch (err) {
      obj.close();
      throw err;
    }
  }

  private get device(): string {
    return this.options.overlayDevice ?? defaultOverlayDevice;
  }

  /**
   * Makes the node match `spec`: overlay device, maps, attachments, looking at what `scope` says (the
   * first apply looks at everything). Twice in a row, the second changes nothing.
   */
  apply(spec: NodeDataplaneSpec, scope: ApplyScope = everything): NodeApplyResult {
    const { netns } = this.options;
    let overlayDeviceChanged = false;
    let attachments: AttachmentChange[] = [];
    const inputs = overlayInputs(spec);
    if (scope.kernel || this.overlay?.inputs !== inputs) {
      this.overlay = undefined;
      const mtu = nodeTunnelMtus(spec, netnsNameOf(netns)).vxlan;
      overlayDeviceChanged = ensureOverlayDevice({ name: this.device, port: spec.overlay.port, mac: spec.overlay.mac, mtu }, netns);
      this.overlay = { ifindex: ifIndex(this.device, netns), mtu, inputs };
      // A device made anew has lost its program.
      if (scope.kernel || overlayDeviceChanged) attachments = this.reconcileAttachments(spec);
    }
    const { ifindex, mtu } = this.overlay;
    const mapped = this.mapped;
    if (!scope.readMaps && mapped?.spec === spec && mapped.ifindex === ifindex && mapped.mtu === mtu)
      return { overlayDeviceChanged, maps: unchangedMaps, attachments };
    this.mapped = undefined;
    const maps = this.applied.apply(desiredTables(spec, ifindex, mtu, this.generation), scope.readMaps);
    this.mapped = { spec, ifindex, mtu };
    return { overlayDeviceChanged, maps, attachments };
  }

  /**
   * Attaches the pod program to one interface now, as the kernel announces it (its netlink link event),
   * rather than at the next apply, which stays the safety net. Undefined when `ifname` is not a pod
   * interface, or while the maps hold no spec's entries (before the first apply, or after a failed one;
   * the program reads them): the apply that writes them attaches every pod interface anyway.
   */
  attachPodInterface(ifname: string): AttachmentChange | undefined {
    if (this.mapped === undefined || !this.options.podInterfaces.test(ifname)) return undefined;
    return this.attach(ifname, Program.FromPod);
  }

  /**
   * Which program belongs on each interface's ingress now: the overlay's, the pods', and the probe
   * responder on each device holding an address probes go to (the underlay's, the public one).
   */
  private desiredAttachments(spec: NodeDataplaneSpec): Map<string, string> {
    const { netns, podInterfaces } = this.options;
    const wanted = new Map<string, string>([[this.device, Program.FromOverlay]]);
    for (const { name } of interfaces(netns)) if (podInterfaces.test(name)) wanted.set(name, Program.FromPod);
    const probed = [spec.node.underlayAddress, ...(spec.node.publicAddress ? [spec.node.publicAddress] : [])].map(formatIp);
    for (const { dev, address } of dumpAddresses(netnsNameOf(netns)))
      if (probed.includes(address) && !wanted.has(dev)) wanted.set(dev, Program.Liveness);
    return wanted;
  }

  private reconcileAttachments(spec: NodeDataplaneSpec): AttachmentChange[] {
    const { pinRoot, netns } = this.options;
    const changes: AttachmentChange[] = [];
    const wanted = this.desiredAttachments(spec);
    for (const [ifname, program] of wanted) changes.push(this.attach(ifname, program));
    for (const stale of findAttachments(pinRoot, netns).filter((a) => !wanted.has(a.interface))) {
      detachAttachment(pinRoot, netns, stale);
      changes.push({ interface: stale.interface, program: stale.program, change: 'detached', kind: stale.kind });
    }
    this.unpinUnusedPrograms();
    return changes;
  }

  /** Makes `program` the one on `ifname`'s ingress, unless it is already. */
  private attach(ifname: string, program: string): AttachmentChange {
    const { pinRoot, netns } = this.options;
    const prog = this.obj.program(program);
    const target = { ifindex: ifIndex(ifname, netns), direction: 'ingress' as const, netns };
    const pinPath = linkPin(pinRoot, ifname);
    // A pinned link counts only while attached to this interface (see attachTc).
    const link = queryTcx(pinPath);
    const before = (link?.ifindex === target.ifindex ? link.progId : undefined) ?? queryClsact(target, straitSlot);
    if (before === prog.info().id) return { interface: ifname, program, change: 'unchanged' };
    const done = attachTc(target, prog, { mode: this.options.attachMode ?? 'auto', pinPath, slot: straitSlot });
    return { interface: ifname, program, change: before === undefined ? 'attached' : 'replaced', kind: done.kind };
  }

  /** Unpins the programs of earlier loads that no attachment runs any more (a restart's, once swapped out). */
  private unpinUnusedPrograms(): void {
    const { pinRoot, netns } = this.options;
    const keep = new Set([
      ...Object.values(Program).map((name) => this.obj.program(name).info().id),
      ...findAttachments(pinRoot, netns).map((a) => a.progId),
    ]);
    for (const [id, name] of pinnedPrograms(pinRoot)) if (!keep.has(id)) unpin(programPin(pinRoot, name, id));
  }

  /** Releases this process's fds; the programs stay attached and the maps pinned. */
  close(): void {
    this.obj.close();
  }
}

interface FoundAttachment {
  interface: string;
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
    const link = queryTcx(join(linksDir(pinRoot), pin));
    // Our pin, so our link, whatever it runs; named when the program is pinned here (unpinned by hand, it is not).
    if (link)
      found.push({
        interface: ifnameOfPin(pin),
        program: programs.get(link.progId) ?? `program ${link.progId}`,
        progId: link.progId,
        kind: 'tcx',
      });
  }
  for (const { index, name } of interfaces(netns)) {
    const progId = queryClsact({ ifindex: index, direction: 'ingress', netns }, straitSlot);
    const program = progId === undefined ? undefined : programs.get(progId);
    if (program) found.push({ interface: name, program, progId: progId!, kind: 'clsact' });
  }
  return found;
}

function detachAttachment(pinRoot: string, netns: string | undefined, a: FoundAttachment): void {
  if (a.kind === 'tcx') {
    detachTcx(linkPin(pinRoot, a.interface));
    return;
  }
  const ifindex = interfaces(netns).find((i) => i.name === a.interface)?.index;
  if (ifindex !== undefined) detachClsact({ ifindex, direction: 'ingress', netns }, straitSlot);
}

/**
 * Removes everything Strait put on a node and nothing else: its attachments, the overlay device, the
 * pinned maps and links. Safe to run twice and after a crash.
 */
export function cleanupNode(options: Pick<NodeDatapathOptions, 'pinRoot' | 'netns' | 'overlayDevice'>): {
  detached: FoundAttachment[];
  overlayDeviceRemoved: boolean;
} {
  const detached = findAttachments(options.pinRoot, options.netns);
  for (const a of detached) detachAttachment(options.pinRoot, options.netns, a);
  const overlayDeviceRemoved = removeOverlayDevice(options.overlayDevice ?? defaultOverlayDevice, options.netns);
  unpinAll(options.pinRoot);
  return { detached, overlayDeviceRemoved };
}
