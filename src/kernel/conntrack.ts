/**
 * The kernel's connection tracking, through conntrack-tools' `conntrack` (as kube-proxy uses it). NAT is
 * decided by a flow's first packet and kept in its entry: when a node changes what it translates (it
 * becomes its cluster's gateway, or stops being it), the flows it tracked before would go on with the old
 * translation (none, on a worker) for as long as they last. Forgetting them lets their next packet be
 * tracked, and translated, anew; the translation being stateless, a TCP connection carries on.
 */
import { spawnSync } from 'node:child_process';
import { type Cidr, addressBits, formatIp } from '../net/cidr';
import { CommandError } from './command';

/** The netmask of a prefix, as conntrack takes it. */
function maskOf({ family, prefix }: Cidr): string {
  const all = (1n << BigInt(addressBits(family))) - 1n;
  return formatIp({ family, value: all ^ (all >> BigInt(prefix)) });
}

/**
 * Deletes the entries of the IPv4 and IPv6 flows from or to `prefixes` in the namespace `netns` (by name); how many.
 * Throws a CommandError naming the command when conntrack fails (it is missing, or refused).
 */
export function forgetFlows(prefixes: readonly Cidr[], netns?: string): number {
  let deleted = 0;
  for (const prefix of prefixes)
    for (const [address, mask] of [
      ['-s', '--mask-src'],
      ['-d', '--mask-dst'],
    ] as const) {
      const command = [
        ...(netns ? ['ip', 'netns', 'exec', netns] : []),
        ...[
          'conntrack',
          '-D',
          '-f',
          `ipv${prefix.family}`,
          address,
          formatIp({ family: prefix.family, value: prefix.base }),
          mask,
          maskOf(prefix),
        ],
      ];
      const { status, stderr, error } = spawnSync(command[0]!, command.slice(1), { encoding: 'utf8' });
      // It says how many it deleted, and exits 1 when that is none.
      const count = /(\d+) flow entries have been deleted/.exec(stderr ?? '');
      if (error !== undefined || count === null) throw new CommandError(command, error?.message ?? stderr, status);
      deleted += Number(count[1]);
    }
  return deleted;
}
