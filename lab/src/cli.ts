/**
 * `strait-lab`'s verbs: each loads its modules in its action, as the product's CLI loads its commands
 * (src/cli/main.ts), so a verb pays only for what it runs (`down --node` none of the lab on Kubernetes,
 * its API server or charts).
 */
import type { Command } from 'commander';
import { InputError } from '../../src/errors';
import type { ControlPlane } from './control-plane';
import type { LabDataplane } from './lab';
import { defaultRunDir, defaultTopologyPath } from './names';
import type { LabPaceName } from './pace';
import { restartPolicyOf } from './restart-backoff';
import { jsonAction } from '../../src/cli/output';

const say = (line: string) => process.stdout.write(`${line}\n`);

function dataplaneOption(value: string): LabDataplane {
  if (value !== 'ebpf' && value !== 'kernel' && value !== 'auto')
    throw new InputError('--dataplane', value, "must be 'auto', 'ebpf' or 'kernel'");
  return value;
}

function paceOption(value: string): LabPaceName {
  if (value !== 'host' && value !== 'emulated') throw new InputError('--pace', value, "must be 'host' or 'emulated'");
  return value;
}

/** The timeouts of a pace, loaded only by the verbs that run a lab here (a lab across machines loads its own). */
async function labPace(name: LabPaceName) {
  return (await import('./pace')).labPaces[name];
}

const nodeHelp = 'a lab across machines: this machine is the node NAME of the topology (docs/lab.md, "A lab across machines"; vagrant/)';
const paceHelp =
  "host, or emulated: an emulated VM's timeouts (heartbeats 120 s, rounds of 1 s, gateway probes every 0.5 s, convergence 300 s, 2 probes at once)";

function controlPlaneOption(value: string): ControlPlane {
  if (value !== 'files' && value !== 'kubernetes') throw new InputError('--control-plane', value, "must be 'files' or 'kubernetes'");
  return value;
}

/** What `up` is given. */
interface UpFlags {
  topology: string;
  dataplane: string;
  controlPlane: string;
  node?: string;
  pace: string;
  restartDelay: string;
  restartDelayMax?: string;
}

/** The lab's option and verbs on `lab`, the program (main.ts). */
export function registerLabCommands(lab: Command): void {
  lab
    .description(
      'a multi-cluster lab in network namespaces on this machine: clusters of nodes and pods, a controller per cluster, an agent per node (root)',
    )
    .option('--run-dir <dir>', 'state, logs and pid files of the lab', defaultRunDir);
  const runDir = () => lab.opts<{ runDir: string }>().runDir;

  lab
    .command('up')
    .description('build the topology, start the controllers and agents, wait until every peering is programmed')
    .option('--topology <file>', 'YAML topology', defaultTopologyPath)
    .option(
      '--dataplane <name>',
      'auto (as the probe decides per node; the kernel fallback for clusters with encrypted peerings), ebpf, or kernel (the fallback: VXLAN or IPsec, policy routing, nftables)',
      'auto',
    )
    .option(
      '--control-plane <name>',
      'files (the run directory, docs/lab.md) or kubernetes (an API server per cluster, two controller replicas each, agents with --kubernetes; docs/kubernetes.md)',
      'files',
    )
    .option(
      '--node <name>',
      `${nodeHelp}: its NICs (by the plan's MACs), pods, agent, and its cluster's controller when it is the cluster's first node; the run directory is shared by every machine`,
    )
    .option('--pace <name>', paceHelp, 'host')
    .option(
      '--restart-delay <seconds>',
      "how long a crashed agent or controller stays down before its supervisor restarts it, doubled after each crash in a row (the kubelet's CrashLoopBackOff; reset once it ran 10 s)",
      '1',
    )
    .option('--restart-delay-max <seconds>', 'the cap of that delay (default: 10, or --restart-delay when longer)')
    .action(
      jsonAction(async (opts: UpFlags) => {
        const dataplane = dataplaneOption(opts.dataplane);
        const restart = restartPolicyOf(opts.restartDelay, opts.restartDelayMax);
        if (opts.node !== undefined) {
          if (controlPlaneOption(opts.controlPlane) !== 'files')
            throw new InputError(
              '--control-plane',
              opts.controlPlane,
              'a lab across machines runs on files (the shared run directory) only',
            );
          await (
            await import('./machine')
          ).machineUp(opts.topology, { runDir: runDir(), node: opts.node, dataplane, pace: paceOption(opts.pace), say, restart });
          return undefined;
        }
        const pace = await labPace(paceOption(opts.pace));
        await (
          await import('./lab')
        ).labUp(opts.topology, {
          runDir: runDir(),
          dataplane,
          controlPlane: controlPlaneOption(opts.controlPlane),
          say,
          ...pace.lab,
          restart,
        });
        return undefined;
      }),
    );

  lab
    .command('test')
    .description(
      'ping, TCP, UDP, fragmented UDP and ICMP errors between every peered pair both ways and between pods on different nodes of a cluster, the hub path, and that unpeered clusters cannot talk; the path MTU of each peering (no fragments on the wire); each probe once; exits 1 on any failure',
    )
    .option('--node <name>', `${nodeHelp}: the checks from its pods, written for 'strait-lab report'`)
    .option('--pace <name>', paceHelp, 'host')
    .action(
      jsonAction(async (opts: { node?: string; pace: string }) => {
        const pace = paceOption(opts.pace);
        const failed =
          opts.node !== undefined
            ? await (await import('./machine')).machineTest(runDir(), opts.node, pace, say)
            : (await (await import('./lab-test')).labTest(runDir(), say, (await labPace(pace)).test)).failed;
        if (failed > 0) process.exitCode = 1;
        return undefined;
      }),
    );

  lab
    .command('report')
    .description(
      "a lab across machines: every machine's 'strait-lab test --node' results in one table; exits 1 when a machine has none or anything failed",
    )
    .action(
      jsonAction(async () => {
        if ((await (await import('./machine')).labReport(runDir(), say)) > 0) process.exitCode = 1;
        return undefined;
      }),
    );

  lab
    .command('plan')
    .description(
      "a lab across machines: the machine per node of the topology, its NICs (name, network, MAC, address) and whether it runs its cluster's controller, as JSON (what vagrant/ and the local VMs build)",
    )
    .option('--topology <file>', 'YAML topology', defaultTopologyPath)
    .action(
      jsonAction(async (opts: { topology: string }) =>
        (await import('./machine-plan')).machinePlan((await import('./topology')).loadTopology(opts.topology)),
      ),
    );

  lab
    .command('down')
    .description('stop every lab process and remove every namespace, pin and file of the lab (also after a crash; safe to run twice)')
    .option('--node <name>', `${nodeHelp}: its processes, datapath, pods, pins and files (NICs stay)`)
    .action(
      jsonAction(async (opts: { node?: string }) => {
        if (opts.node !== undefined) await (await import('./machine')).machineDown(runDir(), opts.node, say);
        else await (await import('./lab')).labDown(runDir(), say);
        return undefined;
      }),
    );

  lab
    .command('apiserver')
    .description(
      'a Kubernetes API server for one lab cluster (its objects in an etcd, HTTPS with a self-signed certificate, bearer tokens, RBAC): writes a kubeconfig, prints {url, port, kubeconfig} as one JSON line, serves until SIGTERM or SIGINT',
    )
    .requiredOption(
      '--etcd-servers <url>',
      "the etcd the objects are kept in, its client URL (kube-apiserver's --etcd-servers), like http://127.0.0.1:2379",
    )
    .option('--tls-cert-file <file>', 'the serving certificate (PEM); default: a new self-signed one for 127.0.0.1')
    .option('--tls-private-key-file <file>', "the serving certificate's key (PEM)")
    .option(
      '--service-account-key-file <file>',
      'the key ServiceAccount tokens are signed with (its bytes); default: a random one (a restart on the same etcd needs the same)',
    )
    .option(
      '--etcd-compaction-interval <seconds>',
      "how often etcd's history is compacted (kube-apiserver's --etcd-compaction-interval)",
      '300',
    )
    .option(
      '--token-file <file>',
      "the admin's bearer token (user admin, group system:masters: allowed anything), written to the kubeconfig; default: a random token, only in the kubeconfig",
    )
    .option(
      '--token-auth-file <file>',
      'more users, as kube-apiserver\'s --token-auth-file: a CSV line token,user,uid,"group1,group2" each; RBAC authorizes their requests',
    )
    .option('--kubeconfig <file>', 'where to write the kubeconfig (replaced atomically, mode 0600)')
    .option('--kubeconfig-out <file>', 'the same as --kubeconfig')
    .option('--listen <host:port>', 'address to listen on (port 0: any free port)', '127.0.0.1:0')
    .option('--cluster <name>', "the cluster's name in the kubeconfig (context, cluster and user)", 'lab')
    .option(
      '--crds <dir>',
      "directory of CustomResourceDefinition YAML files installed before the first request; default: none, as on a new cluster (helm install creates the chart's)",
    )
    .option('--watch-cache-size <n>', 'changes kept per resource for watches from a resourceVersion (older: 410 Expired)', '1000')
    .action(
      jsonAction(
        async (opts: {
          tokenFile?: string;
          tokenAuthFile?: string;
          kubeconfig?: string;
          kubeconfigOut?: string;
          listen: string;
          cluster: string;
          crds?: string;
          watchCacheSize: string;
          etcdServers: string;
          etcdCompactionInterval: string;
          tlsCertFile?: string;
          tlsPrivateKeyFile?: string;
          serviceAccountKeyFile?: string;
        }) => {
          const watchCacheSize = Number(opts.watchCacheSize);
          if (!Number.isInteger(watchCacheSize) || watchCacheSize < 1)
            throw new InputError('--watch-cache-size', opts.watchCacheSize, 'expected a whole number of at least 1');
          if (opts.kubeconfig !== undefined && opts.kubeconfigOut !== undefined)
            throw new InputError('--kubeconfig-out', opts.kubeconfigOut, 'give --kubeconfig or --kubeconfig-out, not both');
          const kubeconfig = opts.kubeconfig ?? opts.kubeconfigOut;
          if (kubeconfig === undefined) throw new InputError('--kubeconfig-out', kubeconfig, 'where to write the kubeconfig is required');
          const compactionSeconds = Number(opts.etcdCompactionInterval);
          if (!(compactionSeconds > 0))
            throw new InputError('--etcd-compaction-interval', opts.etcdCompactionInterval, 'expected a number of seconds above 0');
          const { kubeconfigOut: _out, etcdCompactionInterval: _interval, ...rest } = opts;
          const compactionIntervalMs = compactionSeconds * 1000;
          await (
            await import('./apiserver/process')
          ).runApiServerProcess({ ...rest, kubeconfig, watchCacheSize, compactionIntervalMs }, say);
          return undefined;
        },
      ),
    );

  lab
    .command('status')
    .description('clusters, gateways, peerings, nodes and their per-peer counters, as JSON')
    .action(jsonAction(async () => (await import('./lab-test')).labStatus(runDir())));
}
