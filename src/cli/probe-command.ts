import type { Command } from 'commander';
import { chooseDataplane, describeMissing, encryptionRequirements, featureDescriptions, featureNames, missingFor } from '../probe/features';
import { probeKernel } from '../probe/probe';
import { jsonAction } from './output';

/** @public src/cli/main.ts loads it with require() when its command runs, which knip cannot follow. */
export function registerProbeCommand(program: Command): void {
  program
    .command('probe')
    .description(
      'find what this kernel supports for Strait, by trying each feature (in this network namespace, with NET_ADMIN and BPF: what it makes stays down and is deleted at once)',
    )
    .option('--json', 'print one JSON object with a boolean per feature')
    .option('--reasons', 'with --json: add "reasons" (why each missing feature is missing), "dataplane" and "encryption"')
    .action(
      jsonAction(async (opts: { json?: boolean; reasons?: boolean }) => {
        const report = await probeKernel();
        const dataplane = chooseDataplane(report);
        const encryptionLacks = describeMissing(encryptionRequirements, report);
        if (opts.json) {
          return opts.reasons
            ? { ...report.features, reasons: report.reasons, dataplane, encryption: encryptionLacks.length === 0 }
            : report.features;
        }
        const width = Math.max(...featureNames.map((f) => f.length));
        for (const f of featureNames) {
          const why = report.reasons[f] ? `  (${report.reasons[f]})` : '';
          process.stdout.write(`${f.padEnd(width)}  ${report.features[f] ? 'yes' : 'no '}  ${featureDescriptions[f]}${why}\n`);
        }
        const missing = missingFor('ebpf', report);
        process.stdout.write(`\ndataplane (auto): ${dataplane}${missing.length ? ` (eBPF lacks: ${missing.join(', ')})` : ''}\n`);
        // Encrypted peerings run on the kernel fallback's gateways (docs/kernel-fallback.md, "IPsec").
        process.stdout.write(
          `encryption (IPsec peerings): ${encryptionLacks.length ? `no (lacks: ${encryptionLacks.join(', ')})` : 'yes'}\n`,
        );
        return undefined;
      }),
    );
}
