/**
 * ClusterSetIPs where no API server allocates them (the standalone control plane; on Kubernetes each is
 * the cluster IP of the import's derived Service): one address per service network of the cluster, the
 * one a service had kept while it stays, the lowest free one otherwise. The network's first two
 * addresses are left out (the network's own, and the `kubernetes` Service's on a real cluster), and an
 * IPv4 network's last (its broadcast).
 */
import { type Cidr, cidrLast, containsIp, formatIp, parseIp } from '../net/cidr';

export interface ClusterSetIps {
  /** By service key, the addresses in the networks' order (a network with none free gives none). */
  readonly ips: Map<string, string[]>;
  /** Service networks with no free address left, and who got none. */
  readonly exhausted: string[];
}

export function allocateClusterSetIps(
  keys: readonly string[],
  previous: ReadonlyMap<string, readonly string[]>,
  serviceCIDRs: readonly Cidr[],
): ClusterSetIps {
  const ips = new Map<string, string[]>(keys.map((k) => [k, []]));
  const exhausted: string[] = [];
  for (const cidr of serviceCIDRs) {
    const first = cidr.base + 2n;
    const last = cidr.family === 4 ? cidrLast(cidr) - 1n : cidrLast(cidr);
    const taken = new Set<bigint>();
    const kept = new Map<string, bigint>();
    // A key keeps its address in this network unless an earlier key holds it already (hand-edited state).
    for (const key of keys) {
      const text = previous.get(key)?.find((ip) => {
        try {
          const parsed = parseIp('ip', ip);
          return parsed.family === cidr.family && containsIp(cidr, parsed) && parsed.value >= first && parsed.value <= last;
        } catch {
          return false;
        }
      });
      const value = text === undefined ? undefined : parseIp('ip', text).value;
      if (value !== undefined && !taken.has(value)) {
        taken.add(value);
        kept.set(key, value);
      }
    }
    let next = first;
    for (const key of keys) {
      let value = kept.get(key);
      if (value === undefined) {
        while (next <= last && taken.has(next)) next++;
        if (next > last) {
          exhausted.push(`${key}: no free address in ${formatIp({ family: cidr.family, value: cidr.base })}/${cidr.prefix}`);
          continue;
        }
        value = next;
        taken.add(value);
      }
      ips.get(key)!.push(formatIp({ family: cidr.family, value }));
    }
  }
  return { ips, exhausted };
}
