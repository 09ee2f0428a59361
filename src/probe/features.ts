/** What `strait probe` reports, and what each dataplane needs of it, per IP family. */
import type { Dataplane } from '../api/dataplane';
import type { IpFamily } from '../net/cidr';

/**
 * Every feature in the order `strait probe` lists them. A feature of one IP family is probed with that
 * family's addresses: IPv4 under its name, IPv6 under its name and `6` (as the datapath's maps are
 * named: `strait_routes`, `strait_routes6`).
 */
export const featureNames = [
  'bpf',
  'btf',
  'clsact',
  'tcx',
  'testRun',
  'lpmTrie',
  'lpmTrie6',
  'vxlan',
  'vxlanCollectMd',
  'routes',
  'routes6',
  'policyRouting',
  'policyRouting6',
  'nftables',
  'nftables6',
  'xfrm',
  'xfrm6',
  'esp',
  'esp6',
  'xfrmInterface',
] as const;

export type Feature = (typeof featureNames)[number];

/** The features probed once per family, by their IPv4 names. */
export const familyFeatureNames = ['lpmTrie', 'routes', 'policyRouting', 'nftables', 'xfrm', 'esp'] as const;
export type FamilyFeature = (typeof familyFeatureNames)[number];
type CommonFeature = Exclude<Feature, FamilyFeature | `${FamilyFeature}6`>;

export const ipFamilies: readonly IpFamily[] = [4, 6];

/** A family's feature under the name it is reported by: `esp` (IPv4), `esp6` (IPv6). */
export const inFamily = (feature: FamilyFeature, family: IpFamily): Feature => (family === 4 ? feature : `${feature}6`);

const isFamilyFeature = (f: string): f is FamilyFeature => (familyFeatureNames as readonly string[]).includes(f);

/** The features the same for both families, each tried once, in the order they are listed. */
export const commonFeatureNames = featureNames.filter((f) => !isFamilyFeature(f) && !isFamilyFeature(f.replace(/6$/, '')));

/** What each feature's probe tries; a family's feature tries it with that family's addresses. */
export const featureDescriptions: Record<CommonFeature | FamilyFeature, string> = {
  bpf: 'bpf(2) syscall: create a map',
  btf: 'kernel BTF present and user BTF accepted',
  clsact: 'clsact qdisc + cls_bpf direct-action filter',
  tcx: 'tcx links (BPF_TCX_INGRESS/EGRESS)',
  testRun: 'BPF_PROG_TEST_RUN of a TC program',
  lpmTrie: "LPM trie maps keyed by the family's addresses",
  vxlan: 'VXLAN device in unicast mode',
  vxlanCollectMd: 'VXLAN device in external (collect_md) mode',
  routes: "the family's routes (the native binding's route dump)",
  policyRouting: "the family's policy rules (the native binding's rule dump)",
  nftables: 'nftables table of the family with a map, prefix SNAT and DNAT by map (checked, not kept)',
  xfrm: "xfrm policy with the family's selectors through an IPv4 tunnel (added and deleted)",
  esp: 'xfrm ESP state (AES-GCM) between addresses of the family (added and deleted)',
  xfrmInterface: 'xfrm interfaces (route-based IPsec)',
};

export interface ProbeReport {
  features: Record<Feature, boolean>;
  /** Why a feature is missing: the error the kernel gave. */
  reasons: Partial<Record<Feature, string>>;
}

/** A requirement: a feature, or a family's feature (`{ family: 'routes' }`: `routes` for IPv4, `routes6` for IPv6). */
type Requirement = Feature | { family: FamilyFeature };

/**
 * What each dataplane needs to carry a family. The eBPF dataplane needs programs on TC hooks (clsact or
 * tcx, in missingFor) with BTF maps, LPM tries of the family and a collect_md VXLAN device; the kernel
 * fallback VXLAN devices and the family's policy rules and nftables NAT; both the family's routes.
 * IPsec peerings (on the kernel fallback's gateways) need xfrm policies with the family's selectors,
 * ESP states and xfrm interfaces. IPv6 goes through IPv4 tunnels where the underlay is IPv4 (docs/dual-stack.md):
 * it needs what IPv4 needs as well as its own features (a spec whose underlay is IPv6 needs IPv6's:
 * src/nodespec/kernel-families.ts); an encrypted peering's IPv6 goes through
 * the same IPv4 ESP states as its IPv4 (`esp`: states of no selector family, which carry both), so it
 * needs `xfrm6` for its policies and not `esp6`, which an IPv6 underlay would.
 */
const requirements: Record<Dataplane | 'encryption', readonly Requirement[]> = {
  ebpf: ['bpf', 'btf', { family: 'lpmTrie' }, 'vxlanCollectMd', { family: 'routes' }],
  kernel: ['vxlan', { family: 'routes' }, { family: 'policyRouting' }, { family: 'nftables' }],
  encryption: [{ family: 'xfrm' }, 'esp', 'xfrmInterface'],
};

/** The features `what` needs to carry `family` (for IPv6, IPv4's family features as well). */
function requirementsOf(what: keyof typeof requirements, family: IpFamily): Feature[] {
  const families = family === 4 ? [4 as const] : ipFamilies;
  return requirements[what].flatMap((r) => (typeof r === 'string' ? [r] : families.map((f) => inFamily(r.family, f))));
}

/** Encrypted peerings (IPsec) need the kernel fallback's features and these, on gateways only. */
export const encryptionRequirements: readonly Feature[] = requirementsOf('encryption', 4);

/** The missing features of `needs`, each with the kernel's reason when the probe has one. */
export function describeMissing(needs: readonly Feature[], report: ProbeReport): string[] {
  return needs.filter((f) => !report.features[f]).map((f) => (report.reasons[f] ? `${f} (${report.reasons[f]})` : f));
}

/** What `dataplane` lacks on this kernel to carry `family` (IPv4, the primary family, by default). */
export function missingFor(dataplane: Dataplane, report: ProbeReport, family: IpFamily = 4): Feature[] {
  const missing = requirementsOf(dataplane, family).filter((f) => !report.features[f]);
  if (dataplane === 'ebpf' && !report.features.tcx && !report.features.clsact) missing.push('clsact');
  return missing;
}

/** What IPsec peerings carrying `family` lack on this kernel. */
const encryptionMissing = (report: ProbeReport, family: IpFamily): Feature[] =>
  requirementsOf('encryption', family).filter((f) => !report.features[f]);

/** `auto`: eBPF where the kernel can run it, the kernel fallback otherwise (for IPv4, the primary family). */
export function chooseDataplane(report: ProbeReport): Dataplane {
  return missingFor('ebpf', report).length === 0 ? 'ebpf' : 'kernel';
}

/** What carries traffic, per family: the two dataplanes and (on the kernel fallback's gateways) IPsec peerings. */
export const carriers = ['ebpf', 'kernel', 'ipsec'] as const;
export type Carrier = (typeof carriers)[number];

/** What Strait itself does not carry yet in a family, whatever the kernel has (docs/dual-stack.md, "What is next"). */
const notCarriedYet: Partial<Record<IpFamily, Partial<Record<Carrier, string>>>> = {};

/** Whether `carrier` can carry `family` on this kernel; if not, what it lacks and, where Strait does not carry it yet, why. */
export function carries(report: ProbeReport, carrier: Carrier, family: IpFamily): { carries: boolean; lacks: Feature[]; notYet?: string } {
  const lacks = carrier === 'ipsec' ? encryptionMissing(report, family) : missingFor(carrier, report, family);
  const notYet = notCarriedYet[family]?.[carrier];
  return { carries: lacks.length === 0 && notYet === undefined, lacks, ...(notYet === undefined ? {} : { notYet }) };
}
