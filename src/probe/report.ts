/** `strait probe`'s output: the report as a table per family, or as JSON. */
import {
  type Carrier,
  type Feature,
  type ProbeReport,
  carriers,
  carries,
  chooseDataplane,
  commonFeatureNames,
  describeMissing,
  encryptionRequirements,
  familyFeatureNames,
  featureDescriptions,
  inFamily,
  ipFamilies,
  missingFor,
} from './features';
import type { IpFamily } from '../net/cidr';

const familyName = (family: IpFamily) => `IPv${family}`;
const familyKey = (family: IpFamily) => `ipv${family}` as const;
const yesNo = (present: boolean) => (present ? 'yes' : 'no');
const carrierNames: Record<Carrier, string> = { ebpf: 'eBPF datapath', kernel: 'kernel fallback', ipsec: 'IPsec peerings' };

/** The JSON of `strait probe --json`: a boolean per feature (IPv6's end in 6); with `reasons`, why, and what carries each family. */
export function probeJson(report: ProbeReport, reasons: boolean): Record<string, unknown> {
  if (!reasons) return { ...report.features };
  const families = Object.fromEntries(
    ipFamilies.map((family) => [familyKey(family), Object.fromEntries(carriers.map((c) => [c, carries(report, c, family)]))]),
  );
  return {
    ...report.features,
    reasons: report.reasons,
    dataplane: chooseDataplane(report),
    encryption: describeMissing(encryptionRequirements, report).length === 0,
    families,
  };
}

/** One line of what a carrier does with a family: `yes`, or `no (lacks: esp, xfrmInterface)`. */
function carriageText(report: ProbeReport, carrier: Carrier, family: IpFamily): string {
  const { carries: yes, lacks, notYet } = carries(report, carrier, family);
  if (yes) return 'yes';
  const why = [
    ...(notYet ? [notYet] : []),
    ...(lacks.length ? [`${notYet ? 'this kernel also lacks' : 'lacks'}: ${lacks.join(', ')}`] : []),
  ];
  return `no (${why.join('; ')})`;
}

/** The table `strait probe` prints: the features both families share, each family's, and what carries each family. */
export function probeText(report: ProbeReport): string {
  const lines: string[] = [];
  const width = Math.max(...[...commonFeatureNames, ...familyFeatureNames].map((f) => f.length)) + 2;
  const why = (f: Feature) => report.reasons[f];
  lines.push('both families');
  for (const f of commonFeatureNames) {
    const reason = why(f) ? `  (${why(f)})` : '';
    lines.push(
      `  ${f.padEnd(width)}${yesNo(report.features[f]).padEnd(5)}${featureDescriptions[f as keyof typeof featureDescriptions]}${reason}`,
    );
  }
  lines.push('', `per family${' '.repeat(width - 8)}${ipFamilies.map((family) => familyName(family).padEnd(6)).join('')}`);
  for (const f of familyFeatureNames) {
    const values = ipFamilies.map((family) => yesNo(report.features[inFamily(f, family)]).padEnd(6)).join('');
    lines.push(`  ${f.padEnd(width)}${values}${featureDescriptions[f]}`);
    for (const family of ipFamilies) {
      const reason = why(inFamily(f, family));
      if (reason) lines.push(`  ${' '.repeat(width)}${familyName(family)}: ${reason}`);
    }
  }
  const carrierWidth = Math.max(...Object.values(carrierNames).map((n) => n.length)) + 2;
  lines.push('', 'what this kernel can carry');
  for (const carrier of carriers)
    for (const family of ipFamilies)
      lines.push(`  ${carrierNames[carrier].padEnd(carrierWidth)}${familyName(family)}  ${carriageText(report, carrier, family)}`);
  const missing = missingFor('ebpf', report);
  const encryptionLacks = describeMissing(encryptionRequirements, report);
  lines.push(
    '',
    `dataplane (auto): ${chooseDataplane(report)}${missing.length ? ` (eBPF lacks: ${missing.join(', ')})` : ''}`,
    // Encrypted peerings run on the kernel fallback's gateways (docs/kernel-fallback.md, "IPsec").
    `encryption (IPsec peerings): ${encryptionLacks.length ? `no (lacks: ${encryptionLacks.join(', ')})` : 'yes'}`,
  );
  return `${lines.map((l) => l.trimEnd()).join('\n')}\n`;
}
