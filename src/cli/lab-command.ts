import type { Command } from 'commander';
import { InputError } from '../errors';
import { crdDirectory } from '../api/write-crds';
import { runApiServerProcess } from '../lab/apiserver/process';
import type { ControlPlane } from '../lab/control-plane';
import { type LabDataplane, labDown, labUp } from '../lab/lab';
import { labStatus, labTest } from '../lab/lab-test';
import { defaultRunDir } from '../lab/names';
import { defaultTopologyPath } from '../lab/topology';
import { jsonAction } from './output';

const say = (line: string) => process.stdout.write(`${line}\n`);

function dataplaneOption(value: string): LabDataplane {
  if (value !== 'ebpf' && value !== 'kernel' && value !== 'auto') throw new InputError('--dataplane', value, "must be 'auto', 'ebpf' or 'kernel'");
  return value;
}

function controlPlaneOption(value: string): ControlPlane {
  if (value !== 'files' && value !== 'kubernetes') throw new InputError('--control-plane', value, "must be 'files' or 'kubernetes'");
  return value;
}

export function registerLabCommands(program: Command): void {
  const lab = program
    .command('lab')
    .description('a multi-cluster lab in network namespaces on this machine: clusters of nodes and pods, a controller per cluster, an agent per node (root)')
    .option('--run-dir <dir>', 'state, logs and pid files of the lab', defaultRunDir);
  const runDir = () => lab.opts<{ runDir: string }>().runDir;

  lab
    .command('up')
    .description('build the topology, start the controllers and agents, wait until every peering is programmed')
    .option('--topology <file>', 'YAML topology', defaultTopologyPath)
    .option('--dataplane <name>', 'auto (as the probe decides per node; the kernel fallback for clusters with encrypted peerings), ebpf, or kernel (the fallback: VXLAN or IPsec, policy routing, nftables)', 'auto')
    .option('--control-plane <name>', 'files (the run directory, docs/lab.md) or kubernetes (an API server per cluster, two controller replicas each, agents with --kubernetes; docs/kubernetes.md)', 'files')
    .action(jsonAction(async (opts: { topology: string; dataplane: string; controlPlane: string }) => {
      await labUp(opts.topology, { runDir: runDir(), dataplane: dataplaneOption(opts.dataplane), controlPlane: controlPlaneOption(opts.controlPlane), say });
      return undefined;
    }));

  lab
    .command('test')
    .description('ping, TCP, UDP, fragmented UDP and ICMP errors between every peered pair both ways and between pods on different nodes of a cluster, the hub path, and that unpeered clusters cannot talk; the path MTU of each peering (no fragments on the wire); each probe once; exits 1 on any failure')
    .action(jsonAction(async () => {
      const { failed } = await labTest(runDir(), say);
      if (failed > 0) process.exitCode = 1;
      return undefined;
    }));

  lab
    .command('down')
    .description('stop every lab process and remove every namespace, pin and file of the lab (also after a crash; safe to run twice)')
    .action(jsonAction(async () => {
      await labDown(runDir(), say);
      return undefined;
    }));

  lab
    .command('apiserver')
    .description("a Kubernetes API server for one lab cluster (in memory, HTTPS with a self-signed certificate, bearer tokens, RBAC): writes a kubeconfig, prints {url, port, kubeconfig} as one JSON line, serves until SIGTERM or SIGINT")
    .option('--token-file <file>', "the admin's bearer token (user admin, group system:masters: allowed anything), written to the kubeconfig; default: a random token, only in the kubeconfig")
    .option('--token-auth-file <file>', 'more users, as kube-apiserver\'s --token-auth-file: a CSV line token,user,uid,"group1,group2" each; RBAC authorizes their requests')
    .option('--kubeconfig <file>', 'where to write the kubeconfig (replaced atomically, mode 0600)')
    .option('--kubeconfig-out <file>', 'the same as --kubeconfig')
    .option('--listen <host:port>', 'address to listen on (port 0: any free port)', '127.0.0.1:0')
    .option('--cluster <name>', "the cluster's name in the kubeconfig (context, cluster and user)", 'lab')
    .option('--crds <dir>', 'directory of CustomResourceDefinition YAML files to serve', crdDirectory)
    .option('--watch-cache-size <n>', 'changes kept per resource for watches from a resourceVersion (older: 410 Expired)', '1000')
    .action(jsonAction(async (opts: { tokenFile?: string; tokenAuthFile?: string; kubeconfig?: string; kubeconfigOut?: string; listen: string; cluster: string; crds: string; watchCacheSize: string }) => {
      const watchCacheSize = Number(opts.watchCacheSize);
      if (!Number.isInteger(watchCacheSize) || watchCacheSize < 1) throw new InputError('--watch-cache-size', opts.watchCacheSize, 'expected a whole number of at least 1');
      if (opts.kubeconfig !== undefined && opts.kubeconfigOut !== undefined) throw new InputError('--kubeconfig-out', opts.kubeconfigOut, 'give --kubeconfig or --kubeconfig-out, not both');
      const kubeconfig = opts.kubeconfig ?? opts.kubeconfigOut;
      if (kubeconfig === undefined) throw new InputError('--kubeconfig-out', kubeconfig, 'where to write the kubeconfig is required');
      const { kubeconfigOut: _out, ...rest } = opts;
      await runApiServerProcess({ ...rest, kubeconfig, watchCacheSize }, say);
      return undefined;
    }));

  lab
    .command('status')
    .description('clusters, gateways, peerings, nodes and their per-peer counters, as JSON')
    .action(jsonAction(() => labStatus(runDir())));
}
