#!/usr/bin/env node
import { Command } from 'commander';
import { registerAgentCommand } from './agent-command';
import { registerControllerCommand } from './controller-command';
import { registerInspectCommand } from './inspect-command';
import { registerIpamCommands } from './ipam-command';
import { registerLabCommands } from './lab-command';
import { registerPoolIpamCommands } from './pool-ipam-command';
import { registerProbeCommand } from './probe-command';

export function buildCli(): Command {
  const program = new Command('strait')
    .description('eBPF-accelerated dataplane agent connecting Kubernetes clusters pod-to-pod, also with overlapping PodCIDRs')
    .version(require('../../../package.json').version)
    .showHelpAfterError();
  registerProbeCommand(program);
  registerIpamCommands(program);
  registerInspectCommand(program);
  registerControllerCommand(program);
  registerAgentCommand(program);
  registerPoolIpamCommands(program);
  registerLabCommands(program);
  return program;
}

if (require.main === module) {
  buildCli().parseAsync(process.argv).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
