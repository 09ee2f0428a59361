/**
 * `strait pool-ipam serve`: the node's pool IPAM service alone (the agent runs the same one in
 * Kubernetes mode): serves `strait-ipam` on a unix socket until SIGTERM or SIGINT.
 * `strait pool-ipam install-plugin`: puts `strait-ipam` on a host (src/cni/install.ts; the Helm chart's
 * init container).
 */
import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { checkFormat } from '../api/formats';
import { InputError } from '../errors';
import { installPlugin } from '../cni/install';
import { createLogger } from '../log';
import { defaultIpamSocket } from '../pool-ipam/protocol';
import { jsonAction } from './output';

function seconds(field: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new InputError(field, text, 'expected a positive number of seconds');
  return value * 1000;
}

/** @public src/cli/main.ts loads it with require() when its command runs, which knip cannot follow. */
export function registerPoolIpamCommands(program: Command): void {
  const poolIpam = program
    .command('pool-ipam')
    .description('the pool IPAM for underlay pods (StraitIPPools, StraitSubnets; the strait-ipam CNI plugin)');
  poolIpam
    .command('serve')
    .description("serve the strait-ipam CNI plugin of this node on a unix socket, from the API server's StraitIPPools, until SIGTERM")
    .option('--kubeconfig <file>', "the kubeconfig (default: KUBECONFIG, else the Pod's service account)")
    .option('--node <name>', "this node's name (default: NODE_NAME)")
    .option('--socket <path>', 'the unix socket strait-ipam calls (mode 0600)', defaultIpamSocket)
    .option('--gc-interval <seconds>', 'the periodic garbage collection scan', '600')
    .option('--gc-grace-delay <seconds>', 'a stateless pod terminating on a Ready node is released this long after its grace period', '5')
    .action(
      jsonAction(async (opts: { kubeconfig?: string; node?: string; socket: string; gcInterval: string; gcGraceDelay: string }) => {
        const [nodeField, nodeName] = opts.node !== undefined ? ['--node', opts.node] : ['NODE_NAME', process.env.NODE_NAME];
        if (nodeName === undefined || nodeName === '') throw new InputError('--node', nodeName, 'required: give --node or set NODE_NAME');
        const node = checkFormat('node-name', nodeField, nodeName);
        const kubeconfig = opts.kubeconfig ?? (process.env.KUBECONFIG || undefined);
        if (kubeconfig !== undefined && !(existsSync(kubeconfig) && statSync(kubeconfig).isFile()))
          throw new InputError(opts.kubeconfig !== undefined ? '--kubeconfig' : 'KUBECONFIG', kubeconfig, 'no such file');
        if (!opts.socket.startsWith('/')) throw new InputError('--socket', opts.socket, 'expected an absolute path');
        const gcIntervalMs = seconds('--gc-interval', opts.gcInterval);
        const additionalGraceDelayMs = seconds('--gc-grace-delay', opts.gcGraceDelay);
        const log = createLogger('pool-ipam');
        // The Kubernetes client is loaded by the command that uses it: every other strait start skips its quarter second.
        const [{ loadKubeConfig }, { startPoolIpamService }] = await Promise.all([
          import('../k8s/kubeconfig'),
          import('../pool-ipam/service/pool-ipam-service'),
        ]);
        const service = await startPoolIpamService({
          kubeConfig: loadKubeConfig(kubeconfig === undefined ? {} : { file: kubeconfig }),
          node,
          socket: opts.socket,
          log,
          gcIntervalMs,
          gc: { additionalGraceDelayMs },
        });
        const signal = await new Promise<NodeJS.Signals>((resolve) => {
          process.once('SIGTERM', resolve);
          process.once('SIGINT', resolve);
        });
        log.info({ signal }, 'stopping');
        await service.stop();
        return undefined;
      }),
    );
  poolIpam
    .command('install-plugin')
    .description(
      "install the strait-ipam CNI plugin into a host's CNI plugin directory: a launcher there, and this Node.js with its loader and libraries and Strait's dist/src in a runtime directory, so the plugin needs nothing of the host's; prints what it did",
    )
    .requiredOption('--cni-bin-dir <dir>', "the CNI plugin directory (the host's /opt/cni/bin, mounted anywhere)")
    .requiredOption('--runtime-dir <dir>', 'where the runtime goes: a directory the host sees at this same path (the launcher names it)')
    .action(
      jsonAction(async (opts: { cniBinDir: string; runtimeDir: string }) =>
        installPlugin({ cniBinDir: opts.cniBinDir, runtimeDir: opts.runtimeDir }),
      ),
    );
}
