/**
 * `strait inspect`: what a node's datapath maps hold, as aligned tables or one JSON document. Options are
 * checked in the action so that a bad one gets the same JSON error on stderr as every other failure.
 */
import type { Command } from 'commander';
import { InputError } from '../errors';
import {
  DEFAULT_SNAT_LIMIT,
  type InspectReport,
  type InspectSection,
  inspectNode,
  inspectSections,
  sectionFields,
} from '../dataplane/ebpf/inspect';
import { formatInspectReport } from '../dataplane/ebpf/inspect-format';
import { jsonAction } from './output';

interface InspectOptions {
  pinRoot: string;
  json?: boolean;
  section?: string[];
  limit: string;
}

function parseSections(values: string[] | undefined): InspectSection[] {
  if (values === undefined) return [...inspectSections];
  const names = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  for (const name of names) {
    if (!(inspectSections as readonly string[]).includes(name))
      throw new InputError('--section', name, `must be one of ${inspectSections.join(', ')}`);
  }
  // In the canonical order, each once, whatever order they were given in.
  return inspectSections.filter((s) => names.includes(s));
}

function parseLimit(text: string): number {
  if (!/^\d+$/.test(text)) throw new InputError('--limit', text, 'must be a whole number (0 or more)');
  return Number(text);
}

function selectSections(report: InspectReport, sections: readonly InspectSection[]): Partial<InspectReport> {
  const out: Partial<InspectReport> = { pinRoot: report.pinRoot };
  for (const field of sections.flatMap((s) => sectionFields[s])) Object.assign(out, { [field]: report[field] });
  return out;
}

/** @public src/cli/main.ts loads it with require() when its command runs, which knip cannot follow. */
export function registerInspectCommand(program: Command): void {
  program
    .command('inspect')
    .description(
      "decode a node's pinned datapath maps: config, peers with their prefixes and counters, NatMappings, node routes, transit SNAT flows, drops (read only)",
    )
    .requiredOption('--pin-root <dir>', 'the directory on bpffs where the node agent pins the datapath maps')
    .option('--json', 'print one JSON document instead of tables')
    .option('--section <name...>', `only these sections (${inspectSections.join(', ')}); repeat or separate with commas`)
    .option('--limit <n>', 'list at most this many transit SNAT entries (the total is always reported)', String(DEFAULT_SNAT_LIMIT))
    .action(
      jsonAction((opts: InspectOptions) => {
        const sections = parseSections(opts.section);
        const report = inspectNode(opts.pinRoot, parseLimit(opts.limit));
        if (opts.json) return selectSections(report, sections);
        process.stdout.write(formatInspectReport(report, sections));
        return undefined;
      }),
    );
}
