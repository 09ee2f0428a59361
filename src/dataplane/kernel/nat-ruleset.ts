/**
 * The nftables NAT of the kernel fallback (docs/kernel-fallback.md), equal in effect to the eBPF NAT of
 * docs/datapath.md: a pure function from the node spec to nft's JSON command document (libnftables-json(5);
 * typed in src/kernel/nft-json.ts) defining Strait's two tables. `nat-apply.ts` installs it atomically.
 * Rules below are quoted in nft syntax, which is how `nft list ruleset` shows them.
 *
 * Differences from the eBPF datapath, by design:
 * - Stateful. nftables NAT rules see only the first packet of a connection; conntrack translates the rest
 *   and un-NATs replies (the eBPF NAT is stateless 1:1 except transit). Replies of a pod to a peer, of a
 *   NatMapping endpoint to the peer that dialled its ExternalCIDR address, and transit replies are
 *   therefore translated by conntrack, not by rules.
 * - One DNAT per connection. A prerouting hook stops at the first NAT chain that binds a DNAT, so a
 *   second chain at a later priority could not map the ExternalCIDR address after the prefix translation.
 *   The NatMapping rule therefore computes the home-view ExternalCIDR address in the map key itself
 *   (`ip daddr & hostmask | externalBase`, the same host in our ExternalCIDR) and looks it up in the one
 *   `natmappings` map; it comes before the prefix translation, and a miss falls through to it.
 *
 * Tables (nothing else is created):
 * - `ip strait` (gateway only): map `natmappings`, chains `from_peers` (prerouting, dstnat - 10: before
 *   other DNAT such as kube-proxy's) and `to_peers` (postrouting, srcnat - 10).
 * - `inet strait_filter` (every node): set `remote_prefixes` (every peer's remote prefixes, home view)
 *   and chain `avoid_masquerade` (postrouting, srcnat - 5), to keep cross-cluster traffic out of a CNI's
 *   masquerading. nftables sets are visible only inside their own table, so a CNI's table cannot say
 *   `ip daddr @remote_prefixes return`; the chain holds an identity SNAT instead,
 *   `ip daddr @remote_prefixes snat ip to ip saddr`. The kernel runs every postrouting NAT chain of a
 *   new connection, of any family or table (iptables' and iptables-nft's included), from one NAT hook in
 *   priority order and stops at the first that binds a source NAT; the identity binding keeps the
 *   address and ends it before a CNI's masquerade (srcnat, 100). Priorities: `to_peers` (srcnat - 10)
 *   comes first, so on a gateway the prefix and transit SNAT bind before the identity one could; the
 *   identity SNAT catches only what `to_peers` left (a worker's pod traffic, which its gateway
 *   translates). A CNI chain below srcnat - 5 would still masquerade first.
 *   Chain `clamp_mss` (forward, mangle) clamps the MSS of SYN and SYN-ACK crossing a Strait tunnel device:
 *   leaving through one to the route's MTU less 40 (`rt mtu`), arriving from one to that tunnel's MTU less
 *   40 (the peer's side may offer more than our tunnels carry). nftables only ever lowers an MSS.
 */
import { InputError } from '../../errors';
import type { NftCommand, NftDocument, NftExpression, NftFamily, NftStatement } from '../../kernel/nft-json';
import { type Cidr, cidrSize, formatIp, translateIp } from '../../net/cidr';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { type TunnelMtus, clampedMss, defaultUnderlayMtu, tunnelMtus } from '../../nodespec/tunnel-mtu';

export const NAT_TABLE = { family: 'ip', name: 'strait' } as const;
export const FILTER_TABLE = { family: 'inet', name: 'strait_filter' } as const;

export interface NatDevices {
  /** The name of the tunnel interface toward a peer gateway. */
  peerInterface(peerId: number): string;
  /** The intra-cluster overlay device (the kernel fallback's `strait.vxlan`). */
  overlay: string;
}

const interfaceNamePattern = /^[a-z0-9.-]{1,15}$/;

/** The priorities nft names `dstnat`, `srcnat` and `mangle` (its JSON takes numbers only). */
const priority = { dstnat: -100, srcnat: 100, mangle: -150 } as const;

const address = (value: bigint) => formatIp({ family: 4, value });
const hostMask = (cidr: Cidr) => address(cidrSize(cidr) - 1n);
const prefix = (cidr: Cidr): NftExpression => ({ prefix: { addr: address(cidr.base), len: cidr.prefix } });
const ip = (field: 'saddr' | 'daddr'): NftExpression => ({ payload: { protocol: 'ip', field } });
const is = (left: NftExpression, right: NftExpression): NftStatement => ({ match: { op: '==', left, right } });
const iifname = (name: string) => is({ meta: { key: 'iifname' } }, name);
const oifname = (names: string | string[]) => is({ meta: { key: 'oifname' } }, typeof names === 'string' ? names : { set: names });
/** `tcp flags syn / syn,rst`: SYN and SYN-ACK. */
const syn = is({ '&': [{ payload: { protocol: 'tcp', field: 'flags' } }, ['syn', 'rst']] }, 'syn');
/** `tcp option maxseg size set <value>`. */
const setMss = (value: NftExpression): NftStatement => ({ mangle: { key: { 'tcp option': { name: 'maxseg', field: 'size' } }, value } });
/** `snat|dnat ip prefix to <key> map { from : to, ... }`: the host part kept, the prefix replaced. */
const prefixNat = (key: NftExpression, pairs: [Cidr, Cidr][]) => ({
  family: 'ip' as const,
  addr: { map: { key, data: { set: pairs.map(([from, to]): [NftExpression, NftExpression] => [prefix(from), prefix(to)]) } } },
  flags: 'netmap' as const,
  type_flags: 'prefix' as const,
});

/** The peer's tunnel interface, checked to be an interface name. */
function peerInterface(devices: NatDevices, peerId: number): string {
  const name = devices.peerInterface(peerId);
  if (!interfaceNamePattern.test(name))
    throw new InputError(`devices.peerInterface(${peerId})`, name, 'an interface name must match ^[a-z0-9.-]{1,15}$');
  return name;
}

/** The commands adding one table: the table, then its sets and maps, their elements, chains and rules. */
class TableBuilder {
  readonly commands: NftCommand[];
  constructor(private readonly table: { family: NftFamily; name: string }) {
    this.commands = [{ add: { table: { ...table } } }];
  }

  private get at() {
    return { family: this.table.family, table: this.table.name };
  }

  set(name: string, keys: NftExpression[]): void {
    this.commands.push({ add: { set: { ...this.at, name, type: 'ipv4_addr', flags: ['interval'] } } });
    if (keys.length > 0) this.commands.push({ add: { element: { ...this.at, name, elem: keys } } });
  }

  map(name: string, pairs: [NftExpression, NftExpression][]): void {
    this.commands.push({ add: { map: { ...this.at, name, type: 'ipv4_addr', map: 'ipv4_addr' } } });
    if (pairs.length > 0) this.commands.push({ add: { element: { ...this.at, name, elem: pairs } } });
  }

  /** A base chain with policy accept, and its rules in order. */
  chain(
    name: string,
    hook: { type: 'filter' | 'nat'; hook: 'prerouting' | 'forward' | 'postrouting'; prio: number },
    rules: NftStatement[][],
  ): void {
    this.commands.push({ add: { chain: { ...this.at, name, ...hook, policy: 'accept' } } });
    for (const expr of rules) this.commands.push({ add: { rule: { ...this.at, chain: name, expr } } });
  }
}

/**
 * A spec checked by src/api/node-dataplane.ts (disjoint prefixes, views of our size) and `requireIpv4`;
 * `mtus`: the node's tunnel MTUs (default: a 1500-byte underlay's).
 */
export function natRuleset(spec: NodeDataplaneSpec, devices: NatDevices, mtus: TunnelMtus = tunnelMtus(defaultUnderlayMtu)): NftDocument {
  const { podCIDR, externalCIDR } = spec;
  const peers = spec.peers.map((peer) => ({ ...peer, interfaceName: peerInterface(devices, peer.peerId) }));
  if (!interfaceNamePattern.test(devices.overlay))
    throw new InputError('devices.overlay', devices.overlay, 'an interface name must match ^[a-z0-9.-]{1,15}$');
  // A gateway's tunnels to peers; a worker reaches them through the overlay only.
  const tunnels = [
    { name: devices.overlay, mtu: mtus.vxlan },
    ...(spec.node.role === 'gateway'
      ? peers.map((p) => ({ name: p.interfaceName, mtu: p.transport === 'ipsec' ? mtus.ipsec : mtus.vxlan }))
      : []),
  ];
  const remotePrefixes = peers
    .flatMap((p) => [p.remotePodCIDR, p.remoteExternalCIDR])
    .sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
  const filter = new TableBuilder(FILTER_TABLE);
  filter.set('remote_prefixes', remotePrefixes.map(prefix));
  // `ip daddr @remote_prefixes snat ip to ip saddr`
  filter.chain('avoid_masquerade', { type: 'nat', hook: 'postrouting', prio: priority.srcnat - 5 }, [
    [is(ip('daddr'), '@remote_prefixes'), { snat: { family: 'ip', addr: ip('saddr') } }],
  ]);
  filter.chain('clamp_mss', { type: 'filter', hook: 'forward', prio: priority.mangle }, [
    [oifname(tunnels.map((t) => t.name)), syn, setMss({ rt: { key: 'mtu' } })],
    ...tunnels.map((t) => [iifname(t.name), syn, setMss(clampedMss(t.mtu))]),
  ]);
  if (spec.node.role === 'worker') return { nftables: filter.commands };

  const transit = spec.transitAddress;
  const fromPeers: NftStatement[][] = [];
  const toPeers: NftStatement[][] = [];
  for (const peer of peers) {
    fromPeers.push(
      // `ip daddr <A's view of our ExternalCIDR> dnat ip to ip daddr & hostmask | externalBase map @natmappings`
      [
        iifname(peer.interfaceName),
        is(ip('daddr'), prefix(peer.localNATExternalCIDR)),
        {
          dnat: {
            family: 'ip',
            addr: {
              map: { key: { '|': [{ '&': [ip('daddr'), hostMask(externalCIDR)] }, address(externalCIDR.base)] }, data: '@natmappings' },
            },
          },
        },
      ],
      [
        iifname(peer.interfaceName),
        {
          dnat: prefixNat(ip('daddr'), [
            [peer.localNATPodCIDR, podCIDR],
            [peer.localNATExternalCIDR, externalCIDR],
          ]),
        },
      ],
    );
    toPeers.push([
      oifname(peer.interfaceName),
      {
        snat: prefixNat(ip('saddr'), [
          [podCIDR, peer.localNATPodCIDR],
          [externalCIDR, peer.localNATExternalCIDR],
        ]),
      },
    ]);
    // Transit from any other peer leaves from our transit address, in this peer's view of our ExternalCIDR.
    const others = peers.filter((other) => other !== peer).flatMap((other) => [other.remotePodCIDR, other.remoteExternalCIDR]);
    if (others.length > 0) {
      const transitSeen = formatIp(translateIp(transit, externalCIDR, peer.localNATExternalCIDR));
      toPeers.push([
        oifname(peer.interfaceName),
        is(ip('saddr'), { set: others.map(prefix) }),
        { snat: { family: 'ip', addr: transitSeen } },
      ]);
    }
  }
  const nat = new TableBuilder(NAT_TABLE);
  nat.map(
    'natmappings',
    spec.natMappings.map((m) => [formatIp(m.externalAddress), formatIp(m.endpointAddress)]),
  );
  nat.chain('from_peers', { type: 'nat', hook: 'prerouting', prio: priority.dstnat - 10 }, fromPeers);
  nat.chain('to_peers', { type: 'nat', hook: 'postrouting', prio: priority.srcnat - 10 }, toPeers);
  return { nftables: [...nat.commands, ...filter.commands] };
}
