/**
 * The probe responder alone (bpf/lib/liveness.h), for the kernel fallback on a kernel that runs TC
 * programs: the fallback forwards with the kernel's routes and xfrm states, and this answers the
 * gateway probes for it, so its gateways fail over on the datapath's answers as the eBPF dataplane's
 * do (docs/liveness.md). Attached and found again as the eBPF datapath's programs are (attachments.ts),
 * under the same pin root, so `--cleanup` and a switch of dataplane take it off.
 */
import { isDeepStrictEqual } from 'node:util';
import { BpfObject, type BpfMap, type CodecValue, ensureBpffs } from '../../native';
import { netnsNameOf } from '../../kernel/netns';
import { devicesHolding } from '../../kernel/address-holders';
import { formatIp } from '../../net/cidr';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { type AttachOptions, Attachments, linksDir } from './attachments';
import { mkdirSync } from 'node:fs';
import { livenessValue, loadGeneration } from './desired-maps';
import { type SetAsideMap, carryOverState, setAsideIncompatible } from './map-upgrade';
import { CONFIG_KEY, Program, datapathObjectPath, type liveness, maps } from './layout';

/** The devices holding an address probes go to: the node's underlay address, its public one. */
export function probedDevices(spec: NodeDataplaneSpec, netns?: string): string[] {
  const probed = [spec.node.underlayAddress, ...(spec.node.publicAddress ? [spec.node.publicAddress] : [])].map(formatIp);
  return devicesHolding(probed, netnsNameOf(netns));
}

export class LivenessResponder {
  private readonly generation = loadGeneration();
  private readonly attachments: Attachments;

  private constructor(
    private readonly obj: BpfObject,
    private readonly map: BpfMap<number, CodecValue<typeof liveness>>,
    private readonly options: AttachOptions,
  ) {
    this.attachments = new Attachments(obj, [Program.Liveness], options);
  }

  /** Loads the datapath object for its responder (its maps pinned under the pin root, as the eBPF dataplane's). */
  static async load(options: AttachOptions): Promise<LivenessResponder> {
    ensureBpffs();
    mkdirSync(linksDir(options.pinRoot), { recursive: true });
    let setAside: SetAsideMap[] = [];
    const obj = await BpfObject.load(datapathObjectPath, { pinRoot: options.pinRoot }, (o) => {
      setAside = setAsideIncompatible(o);
    });
    try {
      // Nothing the responder alone runs holds state: an eBPF datapath's (a switch of dataplane) is dropped.
      carryOverState(obj, setAside, new Set());
      return new LivenessResponder(obj, obj.map(maps.liveness.name, maps.liveness.key, maps.liveness.value), options);
    } catch (err) {
      obj.close();
      throw err;
    }
  }

  /** Answers on the devices probed for `spec`, with its addresses; twice in a row, the second changes nothing. */
  apply(spec: NodeDataplaneSpec): void {
    this.attachments.reconcile(
      probedDevices(spec, this.options.netns).map((dev) => ({ interface: dev, direction: 'ingress' as const, program: Program.Liveness })),
    );
    const wanted = livenessValue(spec, this.generation);
    if (!isDeepStrictEqual(this.map.lookup(CONFIG_KEY), wanted)) this.map.update(CONFIG_KEY, wanted);
  }

  /** Releases this process's fds; the responder stays attached. */
  close(): void {
    this.obj.close();
  }
}
