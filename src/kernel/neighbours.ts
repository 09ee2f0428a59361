/**
 * Permanent neighbour entries on one device as desired state. Only permanent entries on that device are
 * read, so learned entries and other devices are never deleted; an entry's identity is its address.
 */
import { type Changes, type Diff, type Identity, applyDiff, diffByIdentity } from './desired-state';
import { ipAddress, linkName, macAddress } from './kernel-values';
import { applyNetlink, dumpNeighbours, nud } from './rtnetlink';

export interface Neighbour {
  address: string;
  lladdr: string;
}

export function neighbour(value: Neighbour, field = 'neighbour'): Neighbour {
  return { address: ipAddress(`${field}.address`, value.address), lladdr: macAddress(`${field}.lladdr`, value.lladdr) };
}

export const neighbourIdentity: Identity<Neighbour> = {
  key: (n) => n.address,
  same: (a, b) => a.lladdr === b.lladdr,
};

/** The permanent entries on `device`. */
function readNeighbours(device: string, netns?: string): Neighbour[] {
  const dev = linkName('device', device);
  return dumpNeighbours(dev, netns)
    .filter((e): e is typeof e & { address: string } => (e.state & nud.permanent) !== 0 && e.address !== undefined)
    .map((e) => ({ address: e.address, lladdr: e.lladdr ?? '' }));
}

/** Pure: the changes that make the permanent entries of a device exactly `desired` (validated). */
export function diffNeighbours(current: readonly Neighbour[], desired: readonly Neighbour[]): Diff<Neighbour> {
  return diffByIdentity(
    current,
    desired.map((n, i) => neighbour(n, `desired[${i}]`)),
    neighbourIdentity,
  );
}

/** Makes the permanent neighbour entries on `device` exactly `desired`, in one batch of rtnetlink changes. */
export function reconcileNeighbours(desired: readonly Neighbour[], device: string, netns?: string): Changes<Neighbour> {
  const diff = diffNeighbours(readNeighbours(device, netns), desired);
  // replace, also for a new entry: a learned (not permanent) entry for the address is ours to overwrite.
  return applyDiff(diff, {
    add: (n) => [{ kind: 'neighbour', op: 'replace', dev: device, ...n }],
    change: (_from, to) => [{ kind: 'neighbour', op: 'replace', dev: device, ...to }],
    remove: (n) => [{ kind: 'neighbour', op: 'del', dev: device, address: n.address }],
    run: (changes) => applyNetlink(changes, netns),
  });
}
