/**
 * What an action asked of the kernel besides BPF map operations: the binding's rtnetlink, xfrm, nftables,
 * interface and tc calls by name, and the processes it started (by argv[0]). How a test shows that a
 * reconcile looked at nothing, now that looking costs no process.
 */
import { native } from '../../src/native/binding';
import { recordChildProcesses } from './child-processes';

const kernelCalls = [
  'rtnlRouteDump',
  'rtnlRuleDump',
  'rtnlNeighbourDump',
  'rtnlLinkDump',
  'rtnlAddressDump',
  'rtnlApply',
  'xfrmStateDump',
  'xfrmPolicyDump',
  'xfrmApply',
  'nftRun',
  'interfaces',
  'ifNameToIndex',
  'tcQuery',
] as const;

export function recordKernelLooks(action: () => void): string[] {
  const binding = native() as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = new Map(kernelCalls.map((name) => [name, binding[name]!]));
  const calls: string[] = [];
  for (const [name, original] of originals) binding[name] = (...args: unknown[]) => (calls.push(name), original(...args));
  try {
    const { started, error } = recordChildProcesses(action);
    if (error !== undefined) throw error;
    return [...calls, ...started.map((p) => p.argv[0]!)];
  } finally {
    for (const [name, original] of originals) binding[name] = original;
  }
}
