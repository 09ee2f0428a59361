#!/usr/bin/env node
import { Command } from 'commander';
type Register = (program: Command) => void;

/**
 * Each top-level command's module, in the order help lists them, loaded only when needed: a process runs
 * one command, and loading them all (the controller's, the lab's, the IPAM's schemas and clients) took
 * about 0.3 s of every agent start.
 */
const commands: [names: string[], load: () => Register][] = [
  [['probe'], () => (require('./probe-command') as typeof import('./probe-command')).registerProbeCommand],
  [['ipam'], () => (require('./ipam-command') as typeof import('./ipam-command')).registerIpamCommands],
  [['inspect'], () => (require('./inspect-command') as typeof import('./inspect-command')).registerInspectCommand],
  [['controller'], () => (require('./controller-command') as typeof import('./controller-command')).registerControllerCommand],
  [['agent'], () => (require('./agent-command') as typeof import('./agent-command')).registerAgentCommand],
  [['pool-ipam'], () => (require('./pool-ipam-command') as typeof import('./pool-ipam-command')).registerPoolIpamCommands],
  [['lab'], () => (require('./lab-command') as typeof import('./lab-command')).registerLabCommands],
];

/** The CLI with every command, or only `command`'s when it names one (help and errors then list only it). */
export function buildCli(command?: string): Command {
  const program = new Command('strait')
    .description('eBPF-accelerated dataplane agent connecting Kubernetes clusters pod-to-pod, also with overlapping PodCIDRs')
    .version(require('../../../package.json').version)
    .showHelpAfterError();
  const named = commands.filter(([names]) => command !== undefined && names.includes(command));
  for (const [, load] of named.length > 0 ? named : commands) load()(program);
  return program;
}

if (require.main === module) {
  buildCli(process.argv[2]).parseAsync(process.argv).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
