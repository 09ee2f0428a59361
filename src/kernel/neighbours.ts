/**
 * Permanent neighbour entries on one device as desired state. Only permanent entries on that device are
 * read, so learned entries and other devices are never deleted; an entry's identity is its address.
 */
import { ip } from './command';
import { type Changes, type Diff, type Identity, applyDiff, diffByIdentity } from './desired-state';
import { runIpBatch } from './ip-batch';
import { ipAddress, linkName, macAddress } from './kernel-values';

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
export function readNeighbours(device: string, netns?: string): Neighbour[] {
  const dev = linkName('device', device);
  const entries = JSON.parse(ip(['-j', 'neigh', 'show', 'dev', dev, 'nud', 'permanent'], netns)) as { dst: string; lladdr?: string }[];
  return entries.map((e) => ({ address: e.dst, lladdr: (e.lladdr ?? '').toLowerCase() }));
}

/** Pure: the changes that make the permanent entries of a device exactly `desired` (validated). */
export function diffNeighbours(current: readonly Neighbour[], desired: readonly Neighbour[]): Diff<Neighbour> {
  return diffByIdentity(current, desired.map((n, i) => neighbour(n, `desired[${i}]`)), neighbourIdentity);
}

/** Makes the permanent neighbour entries on `device` exactly `desired`, in one `ip -batch`. */
export function reconcileNeighbours(desired: readonly Neighbour[], device: string, netns?: string): Changes<Neighbour> {
  const diff = diffNeighbours(readNeighbours(device, netns), desired);
  // replace, also for a new entry: a learned (not permanent) entry for the address is ours to overwrite.
  const replaceLine = (n: Neighbour) => `neigh replace ${n.address} lladdr ${n.lladdr} dev ${device} nud permanent`;
  return applyDiff(diff, {
    add: (n) => [replaceLine(n)],
    change: (_from, to) => [replaceLine(to)],
    remove: (n) => [`neigh del ${n.address} dev ${device}`],
    run: (lines) => runIpBatch(lines, netns),
  });
}
