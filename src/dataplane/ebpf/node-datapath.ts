/**
 * The eBPF datapath of one node, the imperative shell around the pure parts: loads the programs with the
 * node's pinned maps, programs the maps from a spec, and attaches the programs to the overlay device and
 * to every pod interface. A restarted agent reuses the pinned maps and swaps its programs into the
 * existing attachments atomically, so traffic never sees a gap.
 */
import { mkdirSync } from 'node:fs';
import { BpfObject, type TcMode, ensureBpffs, ifIndex, interfaces } from '../../native';
import { netnsNameOf } from '../../kernel/netns';
import { formatIp } from '../../net/cidr';
import { nodeTunnelMtus } from '../../kernel/underlay-mtu';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { AppliedMaps, type ApplyResult } from './apply-maps';
import { desiredTables, loadGeneration } from './desired-maps';
import { type DatapathMaps, Program, datapathObjectPath, maps, openMaps, stateMaps } from './layout';
import { ensureOverlayDevice, removeOverlayDevice } from './overlay-device';
import {
  type AttachmentChange,
  Attachments,
  type FoundAttachment,
  type WantedAttachment,
  detachAttachment,
  findAttachments,
  linksDir,
  unpinAllBut,
} from './attachments';
import { probedDevices } from './liveness-responder';
import { type CarriedOver, type SetAsideMap, carryOverState, setAsideIncompatible } from './map-upgrade';
import type { SyncResult } from './map-sync';
import { syncTailCalls } from './tail-calls';

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

export const defaultOverlayDevice = 'strait0';

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

const untouched: SyncResult = { written: 0, deleted: 0 };

/** What an apply that wrote no map reports: each map by name, so one added to ApplyResult and not here does not compile. */
const unchangedMaps: ApplyResult = {
  config: untouched,
  peers: untouched,
  routes: untouched,
  natmap: untouched,
  natmapRev: untouched,
  nodes: untouched,
  peerCounters: untouched,
  peerCounters6: untouched,
  liveness: untouched,
  config6: untouched,
  peers6: untouched,
  routes6: untouched,
  natmap6: untouched,
  natmap6Rev: untouched,
  nodes6: untouched,
};

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
  private readonly attachments: Attachments;
  /** The overlay device as the last kernel look found it, which the maps name, and the spec's part of it then. */
  private overlay?: { ifindex: number; mtu: number; inputs: string };
  /** What the maps were last made to hold, and from which overlay device. */
  private mapped?: { spec: NodeDataplaneSpec; ifindex: number; mtu: number };
  /** Which load of the datapath this is, as probes see it: the second it loaded (a restart changes it). */
  private readonly generation = loadGeneration();

  private constructor(
    private readonly obj: BpfObject,
    readonly maps: DatapathMaps,
    private readonly options: NodeDatapathOptions,
    /** Maps an earlier build pinned with another layout, created afresh by this load (apply refills them). */
    readonly replacedMaps: readonly string[],
    /** The state carried over from those of them that hold some (map-upgrade.ts). */
    readonly carriedState: readonly CarriedOver[],
  ) {
    this.applied = new AppliedMaps(maps);
    this.attachments = new Attachments(obj, Object.values(Program), options);
  }

  /**
   * Loads the programs, reusing the maps pinned under `pinRoot` by an earlier run; one pinned by another
   * build with a layout this one cannot use (a field added, e.g.) is replaced, and its state carried over
   * where it holds some (map-upgrade.ts). The programs still attached keep the old map until apply swaps
   * them, after writing the new one.
   */
  static async load(options: NodeDatapathOptions): Promise<NodeDatapath> {
    ensureBpffs();
    mkdirSync(linksDir(options.pinRoot), { recursive: true });
    let setAside: SetAsideMap[] = [];
    const obj = await BpfObject.load(datapathObjectPath, { pinRoot: options.pinRoot }, (o) => {
      setAside = setAsideIncompatible(o);
    });
    try {
      const carried = carryOverState(obj, setAside, stateMaps);
      return new NodeDatapath(
        obj,
        openMaps(obj),
        options,
        setAside.map((m) => m.name),
        carried,
      );
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
    let reattach = false;
    const inputs = overlayInputs(spec);
    if (scope.kernel || this.overlay?.inputs !== inputs) {
      this.overlay = undefined;
      const mtu = nodeTunnelMtus(spec, netnsNameOf(netns)).vxlan;
      overlayDeviceChanged = ensureOverlayDevice({ name: this.device, port: spec.overlay.port, mac: spec.overlay.mac, mtu }, netns);
      this.overlay = { ifindex: ifIndex(this.device, netns), mtu, inputs };
      // A device made anew has lost its program.
      reattach = scope.kernel || overlayDeviceChanged;
    }
    const { ifindex, mtu } = this.overlay;
    const mapped = this.mapped;
    let maps = unchangedMaps;
    if (scope.readMaps || mapped?.spec !== spec || mapped.ifindex !== ifindex || mapped.mtu !== mtu) {
      this.mapped = undefined;
      maps = this.applied.apply(desiredTables(spec, ifindex, mtu, this.generation), scope.readMaps);
      this.mapped = { spec, ifindex, mtu };
    }
    // After the maps: programs swapped in by an upgrade whose maps were replaced find them full; the
    // programs they tail-call go in with them.
    if (reattach) {
      syncTailCalls(this.obj);
      attachments = this.reconcileAttachments(spec);
    }
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
    return this.attachments.attach(ifname, Program.FromPod);
  }

  /**
   * Which program belongs on each hook now: the overlay device's ingress and egress, the pods' ingress,
   * and the probe responder on the ingress of each device holding an address probes go to (the
   * underlay's, the public one).
   */
  private desiredAttachments(spec: NodeDataplaneSpec): WantedAttachment[] {
    const { netns, podInterfaces } = this.options;
    const ingress = new Map<string, string>([[this.device, Program.FromOverlay]]);
    for (const { name } of interfaces(netns)) if (podInterfaces.test(name)) ingress.set(name, Program.FromPod);
    for (const dev of probedDevices(spec, netns)) if (!ingress.has(dev)) ingress.set(dev, Program.Liveness);
    return [
      ...[...ingress].map(([ifname, program]): WantedAttachment => ({ interface: ifname, direction: 'ingress', program })),
      { interface: this.device, direction: 'egress', program: Program.ToOverlay },
    ];
  }

  private reconcileAttachments(spec: NodeDataplaneSpec): AttachmentChange[] {
    return this.attachments.reconcile(this.desiredAttachments(spec));
  }

  /** Releases this process's fds; the programs stay attached and the maps pinned. */
  close(): void {
    this.obj.close();
  }
}

/**
 * Removes everything Strait put on a node and nothing else: its attachments, the overlay device, the
 * pinned maps and links. Safe to run twice and after a crash.
 */
export function cleanupNode(
  options: Pick<NodeDatapathOptions, 'pinRoot' | 'netns' | 'overlayDevice'>,
  keep: 'nothing' | 'responder' = 'nothing',
): {
  detached: FoundAttachment[];
  overlayDeviceRemoved: boolean;
} {
  const found = findAttachments(options.pinRoot, options.netns);
  // The kernel fallback keeps the probe responder a previous agent attached: its replacement swaps in
  // place, so the node never stops answering (a gap of three probes would fail it over).
  const kept = keep === 'responder' ? found.filter((a) => a.program === Program.Liveness) : [];
  const detached = found.filter((a) => !kept.includes(a));
  for (const a of detached) detachAttachment(options.pinRoot, options.netns, a);
  const overlayDeviceRemoved = removeOverlayDevice(options.overlayDevice ?? defaultOverlayDevice, options.netns);
  unpinAllBut(options.pinRoot, kept, kept.length > 0 ? [maps.liveness.name] : []);
  return { detached, overlayDeviceRemoved };
}
