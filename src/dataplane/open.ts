/**
 * Opens the dataplane the agent chose, after removing what the other one left on the node, so a node
 * switched from one to the other keeps nothing of the first; and cleans a node of both (`--cleanup`).
 */
import type { Dataplane } from '../api/dataplane';
import type { NodeDataplane } from './port';
import { type EbpfDataplaneOptions, cleanupEbpfNode, openEbpfDataplane } from './ebpf/dataplane';
import { cleanupKernelNode } from './kernel/kernel-datapath';
import { secretsDirectory } from './kernel/ipsec-secrets';
import { openKernelDataplane } from './kernel/dataplane';
import { LivenessResponder } from './ebpf/liveness-responder';
import { netnsPath } from '../kernel/netns';
import { type FamiliesUnavailable, requireKernelFamilies } from '../nodespec/kernel-families';

export interface DataplaneOptions extends EbpfDataplaneOptions {
  /** The kernel fallback's IPsec peerings: the directory of their secrets (`--ipsec-secrets`). */
  ipsecSecrets?: string;
  /** Why this kernel cannot run IPsec peerings (`strait probe`), when it cannot. */
  ipsecUnavailable?: string;
  /** The kernel fallback answers gateway probes with the eBPF responder (where the kernel runs TC programs). */
  livenessResponder?: boolean;
  /** The IP families this kernel cannot carry on the chosen dataplane, and why (`strait probe`). */
  familiesUnavailable?: FamiliesUnavailable;
}

const dataplaneNames: Record<Dataplane, string> = { ebpf: 'the eBPF datapath', kernel: 'the kernel fallback' };

/** The dataplane, refusing besides its own checks a spec of a family this kernel cannot carry. */
function withKernelFamilies(dataplane: NodeDataplane, unavailable: FamiliesUnavailable = {}): NodeDataplane {
  if (Object.keys(unavailable).length === 0) return dataplane;
  return {
    ...dataplane,
    validate: (spec) => {
      dataplane.validate(spec);
      requireKernelFamilies(spec, unavailable, dataplaneNames[dataplane.kind]);
    },
  };
}

/** Opens the chosen dataplane after removing what the other one left on the node. */
export async function openDataplane(kind: Dataplane, options: DataplaneOptions): Promise<NodeDataplane> {
  return withKernelFamilies(await openChosen(kind, options), options.familiesUnavailable);
}

async function openChosen(kind: Dataplane, options: DataplaneOptions): Promise<NodeDataplane> {
  if (kind === 'kernel') {
    cleanupEbpfNode(options.pinRoot, options.netns, options.livenessResponder ? 'responder' : 'nothing');
    const ipsec = {
      ...(options.ipsecSecrets === undefined ? {} : { secrets: secretsDirectory(options.ipsecSecrets) }),
      ...(options.ipsecUnavailable === undefined ? {} : { unavailable: options.ipsecUnavailable }),
    };
    // The eBPF probe responder alone, so the fallback's gateways fail over on the datapath's answers too.
    const responder = options.livenessResponder
      ? await LivenessResponder.load({
          pinRoot: options.pinRoot,
          attachMode: options.attachMode,
          ...(options.netns === undefined ? {} : { netns: netnsPath(options.netns) }),
        })
      : undefined;
    return openKernelDataplane(options.netns, ipsec, options.resyncMs, responder);
  }
  cleanupKernelNode(options.netns);
  return openEbpfDataplane(options);
}

export interface CleanupSummary extends ReturnType<typeof cleanupEbpfNode> {
  pinRoot: string;
  kernel: ReturnType<typeof cleanupKernelNode>;
}

/** `--cleanup`: removes everything either dataplane put on the node (routes, attachments, devices, pins, NAT). */
export function cleanupNodeDataplanes(pinRoot: string, netns?: string): CleanupSummary {
  return { pinRoot, ...cleanupEbpfNode(pinRoot, netns), kernel: cleanupKernelNode(netns) };
}
