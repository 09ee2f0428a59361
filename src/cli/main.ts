#!/usr/bin/env node
import type { Command } from 'commander';
import { type CliOutput, processOutput, runProgram } from './output';
import { StraitCommand } from './usage-error';
type Register = (program: Command) => void;

/**
 * Each top-level command's module, in the order help lists them, loaded only when needed: a process runs
 * one command, and loading them all (the controller's, the IPAM's schemas and clients) took
 * about 0.3 s of every agent start.
 */
const commands: [names: string[], load: () => Register][] = [
  [['probe'], () => (require('./probe-command') as typeof import('./probe-command')).registerProbeCommand],
  [
    ['network-ipam', 'ipam'],
    () => (require('./network-ipam-command') as typeof import('./network-ipam-command')).registerNetworkIpamCommands,
  ],
  [['inspect'], () => (require('./inspect-command') as typeof import('./inspect-command')).registerInspectCommand],
  [['controller'], () => (require('./controller-command') as typeof import('./controller-command')).registerControllerCommand],
  [['agent'], () => (require('./agent-command') as typeof import('./agent-command')).registerAgentCommand],
  [['pool-ipam'], () => (require('./pool-ipam-command') as typeof import('./pool-ipam-command')).registerPoolIpamCommands],
];

/** Commands renamed, by their old name: still run under it for one release, with a warning. */
const renamed: Record<string, string> = { ipam: 'network-ipam' };

/** The CLI with every command, or only `command`'s when it names one (help and errors then list only it). */
export function buildCli(command?: string, output: CliOutput = processOutput): Command {
  // Set before the commands are added: each subcommand copies them when it is made.
  const program = new StraitCommand('strait')
    .description('eBPF-accelerated dataplane agent connecting Kubernetes clusters pod-to-pod, also with overlapping PodCIDRs')
    .version(require('../../../package.json').version)
    .configureOutput({ writeOut: output.out, writeErr: output.err })
    .exitOverride();
  const named = commands.filter(([names]) => command !== undefined && names.includes(command));
  for (const [, load] of named.length > 0 ? named : commands) load()(program);
  return program;
}

/**
 * Runs one command line (`argv` as process.argv: node, script, arguments) and returns its exit code.
 * Every error, a usage error too, is one JSON document on stderr (`{"error", "field"?, "value"?}`).
 */
export async function runCli(argv: readonly string[], output: CliOutput = processOutput): Promise<number> {
  const now = renamed[argv[2] ?? ''];
  if (now !== undefined)
    output.err(`${JSON.stringify({ warning: `\`strait ${argv[2]}\` is \`strait ${now}\` now; the old name goes in the next release` })}\n`);
  return runProgram(() => buildCli(argv[2], output), argv, output);
}

if (require.main === module) {
  void runCli(process.argv).then((code) => {
    process.exitCode = code;
  });
}
