/**
 * `strait agent`: the standalone node agent of docs/lab.md. Flags are checked in the action, before the
 * kernel is touched, so a bad one gets the same JSON error on stderr as every other failure.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { Command } from 'commander';
import { type AgentOptions, type DataplaneRequest, cleanupAgentNode, runAgent } from '../agent/agent';
import type { TcMode } from '../bpf';
import { InputError } from '../errors';
import { netnsPath } from '../kernel/netns';
import { createLogger } from '../log';
import { jsonAction } from './output';

export interface AgentFlags {
  spec?: string;
  /** The same as --spec, for a spec written by hand rather than by a controller. */
  config?: string;
  pinRoot: string;
  status?: string;
  node?: string;
  podInterfaces: string;
  dataplane: string;
  attach: string;
  interval: string;
  netns?: string;
  ipsecSecrets?: string;
  cleanup?: boolean;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new InputError(flag, value, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

function parseRegex(value: string): RegExp {
  try {
    return new RegExp(value);
  } catch (err) {
    throw new InputError('--pod-interfaces', value, `not a regular expression: ${(err as Error).message}`);
  }
}

function parseInterval(value: string): number {
  const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(seconds > 0)) throw new InputError('--interval', value, 'must be a number of seconds greater than 0, like 1 or 0.2');
  return Math.max(1, Math.round(seconds * 1000));
}

function checkNetns(value: string): string {
  if (value === '' || value.includes('/') || !existsSync(netnsPath(value))) throw new InputError('--netns', value, `no such network namespace (${netnsPath(value)}; see ip netns list)`);
  return value;
}

function checkSecretsDir(value: string): string {
  if (!isAbsolute(value)) throw new InputError('--ipsec-secrets', value, 'must be an absolute path to a directory');
  if (!existsSync(value) || !statSync(value).isDirectory()) throw new InputError('--ipsec-secrets', value, 'no such directory');
  return value;
}

function checkPinRoot(value: string): string {
  if (!isAbsolute(value)) throw new InputError('--pin-root', value, 'must be an absolute path on bpffs, like /sys/fs/bpf/strait/<node>');
  return value;
}

/** Checks every flag; `spec` may be absent only for --cleanup. */
export function parseAgentFlags(flags: AgentFlags): AgentOptions & { cleanup: boolean } {
  const cleanup = flags.cleanup === true;
  if (flags.spec !== undefined && flags.config !== undefined) throw new InputError('--config', flags.config, 'give either --spec or --config (they are the same file), not both');
  const spec = flags.spec ?? flags.config;
  if (!cleanup && (spec === undefined || spec === '')) throw new InputError('--spec', spec, 'required (the node dataplane spec file, or --config), unless --cleanup');
  if (flags.node !== undefined && flags.node.trim() === '') throw new InputError('--node', flags.node, 'must not be empty');
  if (flags.status === '') throw new InputError('--status', flags.status, 'must not be empty');
  return {
    cleanup,
    specPath: spec ?? '',
    pinRoot: checkPinRoot(flags.pinRoot),
    podInterfaces: parseRegex(flags.podInterfaces),
    dataplane: oneOf<DataplaneRequest>('--dataplane', flags.dataplane, ['auto', 'ebpf', 'kernel']),
    attachMode: oneOf<TcMode>('--attach', flags.attach, ['auto', 'tcx', 'clsact']),
    intervalMs: parseInterval(flags.interval),
    ...(flags.status === undefined ? {} : { statusPath: flags.status }),
    ...(flags.node === undefined ? {} : { nodeName: flags.node }),
    ...(flags.netns === undefined ? {} : { netns: checkNetns(flags.netns) }),
    ...(flags.ipsecSecrets === undefined ? {} : { ipsecSecrets: checkSecretsDir(flags.ipsecSecrets) }),
  };
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description("keep this node's datapath in step with its spec file: apply it on every change and every interval, write a heartbeat; SIGTERM leaves the datapath in place")
    .option('--spec <file>', 'the node dataplane spec (JSON, written by the controller); required unless --cleanup')
    .option('--config <file>', 'the same, for a spec file written by hand (src/nodespec/spec.ts)')
    .requiredOption('--pin-root <dir>', 'the directory on bpffs for this node\'s pinned maps and links')
    .option('--status <file>', 'where to write the heartbeat {node, ready, time, dataplane, specGeneration}')
    .option('--node <name>', 'this node\'s name; a spec for another node is refused (default: the spec\'s node)')
    .option('--pod-interfaces <regex>', 'pod interfaces (host side of each pod veth) are those whose name matches', '^p-')
    .option('--dataplane <mode>', 'auto (eBPF where the kernel can run it, else the kernel fallback), ebpf, or kernel', 'auto')
    .option('--attach <mode>', 'how programs are attached: auto (tcx where available), tcx, or clsact', 'auto')
    .option('--interval <seconds>', 'seconds between reconciles and heartbeats', '1')
    .option('--netns <name>', 'the node\'s network namespace (/run/netns/NAME); default: the agent\'s own')
    .option('--ipsec-secrets <dir>', 'encrypted peerings: a directory with a file per peer cluster id holding the peering\'s secret (base64, at least 32 bytes, mode 0600)')
    .option('--cleanup', 'remove everything Strait put on the node (routes, attachments, devices, pinned maps, NAT, xfrm), print a summary, exit')
    .action(jsonAction(async (flags: AgentFlags) => {
      const options = parseAgentFlags(flags);
      if (options.cleanup) return cleanupAgentNode(options.pinRoot, options.netns);
      await runAgent(options, createLogger('agent'));
      return undefined;
    }));
}
