/**
 * Static FDB entries with a destination (a VXLAN device's remote VTEPs) on one device, as desired state.
 * Only static or permanent entries with a `dst` on that device are read, so learned entries and other
 * devices are never changed. An entry's identity is its MAC and destination: the all-zeros MAC has one
 * entry per remote (head-end replication), so moving a MAC to another destination is a delete plus an add.
 */
import { run } from './command';
import { type Changes, type Diff, type Identity, applyDiff, diffByIdentity } from './desired-state';
import { runBridgeBatch } from './ip-batch';
import { ipAddress, linkName, macAddress } from './kernel-values';

export interface FdbEntry {
  mac: string;
  /** The remote's address (the VTEP). */
  dst: string;
}

export function fdbEntry(value: FdbEntry, field = 'fdb'): FdbEntry {
  return { mac: macAddress(`${field}.mac`, value.mac), dst: ipAddress(`${field}.dst`, value.dst) };
}

export const fdbIdentity: Identity<FdbEntry> = {
  key: (e) => `${e.mac} dst ${e.dst}`,
  same: () => true,
};

export interface KernelFdbEntry {
  mac: string;
  dst?: string;
  state?: string;
}

/** Pure: the static entries with a destination among `bridge -j fdb show` output; learned ones are left out. */
export function fdbFromKernel(entries: readonly KernelFdbEntry[]): FdbEntry[] {
  return entries
    .filter((e): e is KernelFdbEntry & { dst: string } => e.dst !== undefined && (e.state === 'permanent' || e.state === 'static'))
    .map((e) => ({ mac: e.mac.toLowerCase(), dst: e.dst }));
}

/** The static entries with a destination on `device`. */
export function readFdb(device: string, netns?: string): FdbEntry[] {
  const dev = linkName('device', device);
  return fdbFromKernel(JSON.parse(run(['bridge', ...(netns ? ['-n', netns] : []), '-j', 'fdb', 'show', 'dev', dev])) as KernelFdbEntry[]);
}

/** Pure: the changes that make the static FDB entries of a device exactly `desired` (validated). */
export function diffFdb(current: readonly FdbEntry[], desired: readonly FdbEntry[]): Diff<FdbEntry> {
  return diffByIdentity(current, desired.map((e, i) => fdbEntry(e, `desired[${i}]`)), fdbIdentity);
}

/** Makes the static FDB entries with a destination on `device` exactly `desired`, in one `bridge -batch`. */
export function reconcileFdb(desired: readonly FdbEntry[], device: string, netns?: string): Changes<FdbEntry> {
  const diff = diffFdb(readFdb(device, netns), desired);
  return applyDiff(diff, {
    // append, not add: another destination for the same MAC (the all-zeros one above all) is another entry.
    add: (e) => [`fdb append ${e.mac} dev ${device} dst ${e.dst} self permanent`],
    change: () => [], // never called: an entry is all identity, so it is never changed
    remove: (e) => [`fdb del ${e.mac} dev ${device} dst ${e.dst} self`],
    run: (lines) => runBridgeBatch(lines, netns),
  });
}
