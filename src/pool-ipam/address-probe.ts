/**
 * Conflict and gateway detection: probes an address from inside a pod's network namespace, before CNI ADD
 * returns. IPv4 sends ARP probes (RFC 5227: sender address 0.0.0.0, so no neighbour cache anywhere learns
 * an entry from them; Spiderpool #4475), IPv6 DAD Neighbor Solicitations (RFC 4862: source ::). An answer
 * means the address is in use (a conflict) or, for a gateway, reachable.
 */
import { native } from '../native/binding';
import { InputError } from '../errors';
import { type Ip, addressBits, formatIp } from '../net/cidr';

export interface AddressProbe {
  /** The pod's network namespace, as a path (CNI_NETNS: /var/run/netns/x, /proc/PID/ns/net). */
  netns: string;
  /** The pod's interface (CNI_IFNAME); brought up for the probe when down, then put back down. */
  ifname: string;
  address: Ip;
  /** Probes sent at most, stopping at the first answer (the document: 3). */
  tries?: number;
  /** How long each probe waits for an answer (the document: 100 ms). */
  timeoutMs?: number;
}

export interface ProbeAnswer {
  answered: boolean;
  /** The answering host's MAC, lower case, when answered. */
  mac?: string;
}

const maxTries = 100;
const maxTimeoutMs = 60_000;

function checkInteger(field: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new InputError(field, value, `must be an integer from 1 to ${max}`);
  }
  return value;
}

/**
 * Sends up to `tries` probes for `address` on `ifname` in `netns`, each waiting `timeoutMs` for an answer.
 * Resolves with whether any host answered (and its MAC); a send that fails is retried, and when no probe
 * could be sent at all it rejects with a SocketError carrying the last errno. A missing namespace rejects
 * with ENOENT, a missing interface with ENODEV.
 */
export function probeAddress(probe: AddressProbe): Promise<ProbeAnswer> {
  const { netns, ifname, address, tries = 3, timeoutMs = 100 } = probe;
  if (typeof netns !== 'string' || !netns.startsWith('/'))
    throw new InputError('netns', netns, 'must be the absolute path of a network namespace');
  // What the kernel accepts as a name (dev_valid_name): 1 to 15 bytes, no '/', ':' or white space, not . or ..
  if (typeof ifname !== 'string' || !/^[^/:\s]{1,15}$/.test(ifname) || ifname === '.' || ifname === '..') {
    throw new InputError('ifname', ifname, 'must be an interface name (1 to 15 characters, no "/", ":" or spaces)');
  }
  if (
    (address?.family !== 4 && address?.family !== 6) ||
    typeof address.value !== 'bigint' ||
    address.value < 0n ||
    address.value >= 1n << BigInt(addressBits(address.family))
  ) {
    // The value shown as text: InputError's message is JSON, which has no bigints.
    const shown = typeof address === 'object' && address !== null ? { ...address, value: String(address.value) } : address;
    throw new InputError('address', shown, 'must be an IPv4 or IPv6 address (an Ip of src/net/cidr.ts)');
  }
  checkInteger('tries', tries, maxTries);
  checkInteger('timeoutMs', timeoutMs, maxTimeoutMs);
  return native().probeAddress(netns, ifname, address.family, formatIp(address), tries, timeoutMs);
}
