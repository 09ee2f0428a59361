/**
 * `strait controller --config FILE [--once]`: the standalone controller of one cluster (docs/lab.md).
 * Runs until SIGTERM or SIGINT and exits 0; `--once` runs one reconcile and prints the controller status.
 */
import type { Command } from 'commander';
import { loadControllerConfig } from '../api/controller-config';
import { runController, runUntilSignalled } from '../controller/controller';
import { jsonAction } from './output';

export function registerControllerCommand(program: Command): void {
  program
    .command('controller')
    .description('standalone controller of one cluster: IPAM, NetworkConfig exchange through the run directory, gateway election, node dataplane specs (docs/lab.md)')
    .requiredOption('--config <file>', 'controller configuration, YAML or JSON (clusterId, runDir, podCIDR, externalCIDR, peers, reflections, nodes, ...)')
    .option('--once', 'run one reconcile, print the controller status and exit')
    .action(
      jsonAction(async (o: { config: string; once?: boolean }) => {
        const config = loadControllerConfig(o.config);
        if (o.once) return runController(config, { once: true });
        await runUntilSignalled(config);
        return undefined;
      }),
    );
}
