/** What `strait probe` reports, and what each dataplane needs of it. */
import type { Dataplane } from '../api/dataplane';

export const featureNames = [
  'bpf',
  'btf',
  'clsact',
  'tcx',
  'testRun',
  'lpmTrie',
  'vxlan',
  'vxlanCollectMd',
  'policyRouting',
  'nftables',
  'xfrm',
  'esp',
  'xfrmInterface',
] as const;

export type Feature = (typeof featureNames)[number];

export const featureDescriptions: Record<Feature, string> = {
  bpf: 'bpf(2) syscall: create a map',
  btf: 'kernel BTF present and user BTF accepted',
  clsact: 'clsact qdisc + cls_bpf direct-action filter',
  tcx: 'tcx links (BPF_TCX_INGRESS/EGRESS)',
  testRun: 'BPF_PROG_TEST_RUN of a TC program',
  lpmTrie: 'LPM trie maps',
  vxlan: 'VXLAN device in unicast mode',
  vxlanCollectMd: 'VXLAN device in external (collect_md) mode',
  policyRouting: 'policy rules and custom routing tables',
  nftables: 'nftables tables and maps',
  xfrm: 'xfrm policies',
  esp: 'xfrm ESP states (AES-GCM)',
  xfrmInterface: 'xfrm interfaces (route-based IPsec)',
};

export interface ProbeReport {
  features: Record<Feature, boolean>;
  /** Why a feature is missing: the error the kernel gave. */
  reasons: Partial<Record<Feature, string>>;
}

/** The eBPF dataplane needs programs on TC hooks with BTF maps and a collect_md VXLAN device. */
const ebpfRequirements: readonly Feature[] = ['bpf', 'btf', 'lpmTrie', 'vxlanCollectMd'];
const kernelRequirements: readonly Feature[] = ['vxlan', 'policyRouting', 'nftables'];

/** Encrypted peerings (IPsec) need the kernel fallback's features and these, on gateways only. */
export const encryptionRequirements: readonly Feature[] = ['xfrm', 'esp', 'xfrmInterface'];

/** The missing features of `needs`, each with the kernel's reason when the probe has one. */
export function describeMissing(needs: readonly Feature[], report: ProbeReport): string[] {
  return needs.filter((f) => !report.features[f]).map((f) => (report.reasons[f] ? `${f} (${report.reasons[f]})` : f));
}

export function missingFor(dataplane: Dataplane, report: ProbeReport): Feature[] {
  const needs = dataplane === 'ebpf' ? ebpfRequirements : kernelRequirements;
  const missing = needs.filter((f) => !report.features[f]);
  if (dataplane === 'ebpf' && !report.features.tcx && !report.features.clsact) missing.push('clsact');
  return missing;
}

/** `auto`: eBPF where the kernel can run it, the kernel fallback otherwise. */
export function chooseDataplane(report: ProbeReport): Dataplane {
  return missingFor('ebpf', report).length === 0 ? 'ebpf' : 'kernel';
}
