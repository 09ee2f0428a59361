/**
 * Rule 1 (the subnet annotation): an application gets its own pool carved from a StraitSubnet. Its name is a
 * function of the StraitSubnet, the application, the family and the interface, so every node's service (and a
 * restart of it) finds or makes the same pool; its addresses are the StraitSubnet's lowest free ones.
 */
import { createHash } from 'node:crypto';
import type { IpFamily } from '../net/cidr';
import { subtractRanges } from './ip-ranges';
import type { ApplicationRef, IpRange, PodContext, Subnet } from './model';
import { usableAddresses } from './usable-addresses';

/** The pod's application: its controller, or the pod itself when it has none (an orphan pod). */
export function applicationOf(pod: PodContext): ApplicationRef {
  return pod.owner ?? { apiVersion: 'v1', kind: 'Pod', namespace: pod.namespace, name: pod.name, uid: pod.uid };
}

const maxNameLength = 63;

/**
 * `auto-<kind>-<name>-v<family>-<hash8>`, a DNS-1123 label of at most 63 characters: kind and name are
 * lowercased, other characters than [a-z0-9-] become "-", and they are shortened to fit. The first 8 hex
 * digits of SHA-256 over (subnet, application apiVersion/kind/namespace/name/uid, family, interface) keep
 * names distinct when shortening or the namespace would not (and a re-created application, new uid, gets
 * a new pool, as in Spiderpool).
 */
export function applicationPoolName(subnet: string, application: ApplicationRef, family: IpFamily, ifname: string): string {
  const { apiVersion, kind, namespace, name, uid } = application;
  const hash = createHash('sha256')
    .update(JSON.stringify([subnet, apiVersion, kind, namespace, name, uid, family, ifname]))
    .digest('hex')
    .slice(0, 8);
  const suffix = `-v${family}-${hash}`;
  const readable = `${kind}-${name}`.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  const room = maxNameLength - 'auto-'.length - suffix.length;
  const middle = readable.slice(0, room).replace(/-+$/, '');
  return `auto-${middle}${suffix}`;
}

/**
 * `count` addresses for a new application pool: the lowest usable addresses of the StraitSubnet (spec.ips minus
 * excludeIPs, its network, broadcast and gateway addresses) that no other pool holds; undefined when the
 * StraitSubnet has fewer than `count` left.
 */
export function carvePool(subnet: Subnet, takenByOtherPools: readonly IpRange[], count: number): IpRange[] | undefined {
  let left = BigInt(count);
  const carved: IpRange[] = [];
  for (const r of subtractRanges(usableAddresses(subnet), takenByOtherPools)) {
    if (left === 0n) break;
    const size = r.last - r.first + 1n;
    const take = size < left ? size : left;
    carved.push({ family: r.family, first: r.first, last: r.first + take - 1n });
    left -= take;
  }
  return left === 0n ? carved : undefined;
}
