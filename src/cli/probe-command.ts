import type { Command } from 'commander';
import { probeKernel } from '../probe/probe';
import { probeJson, probeText } from '../probe/report';
import { jsonAction } from './output';

/** @public src/cli/main.ts loads it with require() when its command runs, which knip cannot follow. */
export function registerProbeCommand(program: Command): void {
  program
    .command('probe')
    .description(
      'find what this kernel supports for Strait, for IPv4 and for IPv6, by trying each feature (in this network namespace, with NET_ADMIN and BPF: what it makes stays down and is deleted at once)',
    )
    .option('--json', 'print one JSON object with a boolean per feature (the IPv6 ones end in 6)')
    .option(
      '--reasons',
      'with --json: add "reasons" (why each missing feature is missing), "dataplane", "encryption" and "families" (what carries IPv4 and IPv6)',
    )
    .action(
      jsonAction(async (opts: { json?: boolean; reasons?: boolean }) => {
        const report = await probeKernel();
        if (opts.json) return probeJson(report, opts.reasons === true);
        process.stdout.write(probeText(report));
        return undefined;
      }),
    );
}
