/** What the runtime tells the plugin in its environment (CNI spec "Parameters"), checked. */
import { isAbsolutePath, isContainerId, isInterfaceName, isNamespaceName, isObjectName } from '../api/cni-names';
import { IpamError } from '../pool-ipam/ipam-error';
import { quoted } from '../json-text';
import { cniErrorCodes } from '../pool-ipam/protocol';

const cniCommands = ['ADD', 'DEL', 'CHECK', 'VERSION', 'STATUS', 'GC'] as const;
export type CniCommand = (typeof cniCommands)[number];

const badEnvironment = (msg: string) => new IpamError(cniErrorCodes.invalidEnvironment, msg);

export function cniCommand(env: NodeJS.ProcessEnv): CniCommand {
  const command = env.CNI_COMMAND;
  if (!command) throw badEnvironment('CNI_COMMAND: missing');
  if (!(cniCommands as readonly string[]).includes(command))
    throw badEnvironment(`CNI_COMMAND: not one of ${cniCommands.join(', ')} (got ${quoted(command)})`);
  return command as CniCommand;
}

export interface AttachmentEnvironment {
  containerId: string;
  ifname: string;
  /** Required for ADD and CHECK; DEL may come after the namespace is gone. */
  netns?: string;
}

/** CNI_CONTAINERID, CNI_IFNAME and (for ADD and CHECK) CNI_NETNS; every missing one named at once. */
export function attachmentEnvironment(env: NodeJS.ProcessEnv, command: 'ADD' | 'CHECK' | 'DEL'): AttachmentEnvironment {
  const required = command === 'DEL' ? ['CNI_CONTAINERID', 'CNI_IFNAME'] : ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'];
  const missing = required.filter((name) => !env[name]);
  if (missing.length > 0) throw badEnvironment(`missing ${missing.join(', ')} (required for ${command})`);
  const containerId = env.CNI_CONTAINERID!;
  const ifname = env.CNI_IFNAME!;
  const netns = env.CNI_NETNS || undefined;
  if (!isContainerId(containerId))
    throw badEnvironment(
      `CNI_CONTAINERID: letters, digits, "_", "." and "-", starting with a letter or digit (got ${quoted(containerId)})`,
    );
  if (!isInterfaceName(ifname))
    throw badEnvironment(
      `CNI_IFNAME: an interface name is 1-15 bytes, not "." or "..", without "/", ":" or white space (got ${quoted(ifname)})`,
    );
  if (netns !== undefined && !isAbsolutePath(netns)) throw badEnvironment(`CNI_NETNS: must be an absolute path (got ${quoted(netns)})`);
  return { containerId, ifname, ...(netns === undefined ? {} : { netns }) };
}

export interface PodArguments {
  podNamespace?: string;
  podName?: string;
  podUid?: string;
}

/** K8S_POD_NAMESPACE, K8S_POD_NAME and K8S_POD_UID from CNI_ARGS ("K1=V1;K2=V2"); the first two required for ADD and CHECK. */
export function podArguments(env: NodeJS.ProcessEnv, command: 'ADD' | 'CHECK' | 'DEL'): PodArguments {
  const args = new Map<string, string>();
  for (const pair of (env.CNI_ARGS ?? '').split(';')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    if (at <= 0) throw badEnvironment(`CNI_ARGS: ${quoted(pair)} is not KEY=VALUE (got ${quoted(env.CNI_ARGS)})`);
    args.set(pair.slice(0, at), pair.slice(at + 1));
  }
  if (command !== 'DEL') {
    const missing = ['K8S_POD_NAMESPACE', 'K8S_POD_NAME'].filter((key) => !args.get(key));
    if (missing.length > 0)
      throw badEnvironment(`CNI_ARGS: missing ${missing.join(', ')} (required for ${command}; got ${quoted(env.CNI_ARGS ?? '')})`);
  }
  // Read by the service from the API server by these names: refused here, not answered as a lookup that failed.
  for (const [key, valid, what] of [
    ['K8S_POD_NAMESPACE', isNamespaceName, 'a namespace name (a DNS-1123 label)'],
    ['K8S_POD_NAME', isObjectName, 'a pod name (a DNS-1123 subdomain)'],
  ] as const) {
    const value = args.get(key);
    if (value !== undefined && value !== '' && !valid(value))
      throw badEnvironment(`CNI_ARGS: ${key} must be ${what} (got ${quoted(value)})`);
  }
  const found = { podNamespace: args.get('K8S_POD_NAMESPACE'), podName: args.get('K8S_POD_NAME'), podUid: args.get('K8S_POD_UID') };
  return Object.fromEntries(Object.entries(found).filter(([, value]) => value)) as PodArguments;
}
