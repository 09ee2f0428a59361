/**
 * The incumbent's hub path, built only for the benchmark: what Liqo's legacy gateway and Submariner's
 * globalnet write for reflected endpoints, one iptables DNAT rule per NatMapping in a chain jumped from
 * the nat table's PREROUTING, evaluated rule by rule for every new connection. It replaces the
 * `natmappings` lookup of the kernel fallback's `ip strait` on the hub gateway; the rest (prefix DNAT,
 * SNAT, transit SNAT, routes) stays the fallback's. The caller pauses the gateway's agent meanwhile,
 * which would otherwise restore its own ruleset at its next reconcile.
 */
import { run } from '../../../src/kernel/command';
import { formatIp, translateIp } from '../../../src/net/cidr';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';

const incumbentChain = 'STRAIT-BENCH-NATMAP';

export interface DnatRule {
  /** The address the peer dials (in the peer's view of our ExternalCIDR). */
  destination: string;
  /** The real endpoint, in our view. */
  endpoint: string;
}

/**
 * The hub's IPv4 NatMappings as the peer `peerId` dials them, one rule each, in the spec's order: the
 * rule list stands in for the fallback's `ip strait` map; its IPv6 mappings (`ip6 strait`) stay (pure).
 */
export function mappingRules(spec: NodeDataplaneSpec, peerId: string): DnatRule[] {
  const peer = spec.peers.find((p) => p.clusterId === peerId);
  if (!peer) throw new Error(`the hub has no peer ${peerId}`);
  return spec.natMappings
    .filter((m) => m.externalAddress.family === 4)
    .map((m) => ({
      destination: formatIp(translateIp(m.externalAddress, spec.externalCIDR, peer.localNATExternalCIDR)),
      endpoint: formatIp(m.endpointAddress),
    }));
}

/** The rule of `dialled` moved last, so every new connection to it walks the whole list (pure). */
export function dialledLast(rules: readonly DnatRule[], dialled: string): DnatRule[] {
  const last = rules.findIndex((r) => r.destination === dialled);
  if (last < 0) throw new Error(`no rule for the dialled address ${dialled}`);
  return [...rules.slice(0, last), ...rules.slice(last + 1), rules[last]!];
}

/**
 * iptables-restore input (run with --noflush) that (re)declares the chain, which empties it, and writes the
 * rules; `jump` adds the jump from PREROUTING (once, at the first install) (pure).
 */
export function ruleListRestore(rules: readonly DnatRule[], options: { jump: boolean }): string {
  return [
    '*nat',
    `:${incumbentChain} - [0:0]`,
    ...rules.map((r) => `-A ${incumbentChain} -d ${r.destination}/32 -j DNAT --to-destination ${r.endpoint}`),
    ...(options.jump ? [`-A PREROUTING -j ${incumbentChain}`] : []),
    'COMMIT',
    '',
  ].join('\n');
}

/**
 * The fallback's `from_peers` chain (as `nft list chain ip strait from_peers` prints it) without the
 * NatMapping lookup and hooked after iptables' nat PREROUTING (dstnat), so the rule list binds the
 * DNAT of a mapped address first and the prefix DNAT takes the rest; the map is emptied (pure).
 */
export function fromPeersWithoutNatMappings(listing: string): string {
  const hook = 'priority dstnat - 10;';
  if (!listing.includes(hook)) throw new Error(`from_peers is not hooked at dstnat - 10:\n${listing}`);
  const kept = listing
    .split('\n')
    .filter((line) => !line.includes('@natmappings'))
    .join('\n')
    .replace(hook, 'priority dstnat + 10;');
  return `delete chain ip strait from_peers\n${kept}\nflush map ip strait natmappings\n`;
}

const inNetns = (netns: string, argv: string[], input?: string) => run(['ip', 'netns', 'exec', netns, ...argv], input);

/** Replaces the hub gateway's NatMapping lookup by the rule list. */
export function installIncumbent(netns: string, rules: readonly DnatRule[]): void {
  inNetns(netns, ['iptables-restore', '--noflush'], ruleListRestore(rules, { jump: true }));
  inNetns(netns, ['nft', '-f', '-'], fromPeersWithoutNatMappings(inNetns(netns, ['nft', 'list', 'chain', 'ip', 'strait', 'from_peers'])));
}

/** The packets that matched the last rule (the dialled mapping's): proof that the rule list carried them. */
export function lastRulePackets(netns: string, ruleCount: number): number {
  const listing = inNetns(netns, ['iptables', '-t', 'nat', '-L', incumbentChain, String(ruleCount), '-v', '-x', '-n']);
  const packets = Number(listing.trim().split(/\s+/)[0]);
  if (!Number.isInteger(packets)) throw new Error(`no counter in ${JSON.stringify(listing)}`);
  return packets;
}

/** Removes the rule list; the gateway's agent, resumed, restores its own `from_peers` at its next reconcile. */
export function removeIncumbent(netns: string): void {
  inNetns(netns, ['iptables', '-t', 'nat', '-D', 'PREROUTING', '-j', incumbentChain]);
  inNetns(netns, ['iptables', '-t', 'nat', '-F', incumbentChain]);
  inNetns(netns, ['iptables', '-t', 'nat', '-X', incumbentChain]);
}
