/**
 * Static FDB entries with a destination (a VXLAN device's remote VTEPs) on one device, as desired state.
 * Only static or permanent entries with a `dst` on that device are read, so learned entries and other
 * devices are never changed. An entry's identity is its MAC and destination: the all-zeros MAC has one
 * entry per remote (head-end replication), so moving a MAC to another destination is a delete plus an add.
 */
import { type Changes, type Diff, type Identity, applyDiff, diffByIdentity } from './desired-state';
import { ipAddress, linkName, macAddress } from './kernel-values';
import { type NativeNeighbour, applyNetlink, dumpFdb, nud } from './rtnetlink';

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

/** Pure: the static (permanent or noarp) entries with a destination among the kernel's; learned ones are left out. */
export function fdbFromKernel(entries: readonly NativeNeighbour[]): FdbEntry[] {
  return entries
    .filter(
      (e): e is NativeNeighbour & { address: string; lladdr: string } =>
        e.address !== undefined && e.lladdr !== undefined && (e.state & (nud.permanent | nud.noarp)) !== 0,
    )
    .map((e) => ({ mac: e.lladdr, dst: e.address }));
}

/** The static entries with a destination on `device`. */
function readFdb(device: string, netns?: string): FdbEntry[] {
  return fdbFromKernel(dumpFdb(linkName('device', device), netns));
}

/** Pure: the changes that make the static FDB entries of a device exactly `desired` (validated). */
export function diffFdb(current: readonly FdbEntry[], desired: readonly FdbEntry[]): Diff<FdbEntry> {
  return diffByIdentity(
    current,
    desired.map((e, i) => fdbEntry(e, `desired[${i}]`)),
    fdbIdentity,
  );
}

/** Makes the static FDB entries with a destination on `device` exactly `desired`, in one batch of rtnetlink changes. */
export function reconcileFdb(desired: readonly FdbEntry[], device: string, netns?: string): Changes<FdbEntry> {
  const diff = diffFdb(readFdb(device, netns), desired);
  return applyDiff(diff, {
    // append, not add: another destination for the same MAC (the all-zeros one above all) is another entry.
    add: (e) => [{ kind: 'fdb', op: 'append', dev: device, ...e }],
    change: () => [], // never called: an entry is all identity, so it is never changed
    remove: (e) => [{ kind: 'fdb', op: 'del', dev: device, ...e }],
    run: (changes) => applyNetlink(changes, netns),
  });
}
