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
 * - `ip6 strait` (gateway of a cluster with IPv6 networks): the same map and chains for IPv6, built by
 *   the same function. A table per family rather than one `inet` table: every map and prefix NAT is
 *   typed by one family anyway, so each family keeps the same names and rules, and the IPv4 table of an
 *   IPv4-only node is what it was before IPv6 existed (nothing to migrate at an upgrade).
 * - `inet strait_filter` (every node): sets `remote_prefixes` (every peer's remote IPv4 prefixes, home
 *   view) and `remote_prefixes6` (IPv6, on a cluster that has IPv6) and chain `avoid_masquerade`
 *   (postrouting, srcnat - 5, a rule per family), to keep cross-cluster traffic out of a CNI's
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
 *   leaving through one to the route's MTU less 40 (`rt mtu`, per family), arriving from one to that
 *   tunnel's MTU less 40, and less 60 for IPv6 (the peer's side may offer more than our tunnels carry).
 *   nftables only ever lowers an MSS.
 */
import { InputError } from '../../errors';
import type {
  NftAddressType,
  NftCommand,
  NftDocument,
  NftExpression,
  NftFamily,
  NftNetworkProtocol,
  NftStatement,
} from '../../kernel/nft-json';
import { type Cidr, type IpFamily, cidrSize, formatIp, translateIp } from '../../net/cidr';
import { familiesOf, homeNetworks, peerNetworks } from '../../nodespec/families';
import type { NodeDataplaneSpec, PeerFamilyNetworks, PeerSpec } from '../../nodespec/spec';
import { type TunnelMtus, clampedMss, defaultUnderlayMtu, tunnelMtus } from '../../nodespec/tunnel-mtu';

export const NAT_TABLE = { family: 'ip', name: 'strait' } as const;
export const NAT6_TABLE = { family: 'ip6', name: 'strait' } as const;
export const FILTER_TABLE = { family: 'inet', name: 'strait_filter' } as const;

/** What nft calls each family's header, address type, NAT table and set of remote prefixes. */
const familyTerms: Record<
  IpFamily,
  { protocol: NftNetworkProtocol; addressType: NftAddressType; natTable: { family: NftFamily; name: string }; remotePrefixes: string }
> = {
  4: { protocol: 'ip', addressType: 'ipv4_addr', natTable: NAT_TABLE, remotePrefixes: 'remote_prefixes' },
  6: { protocol: 'ip6', addressType: 'ipv6_addr', natTable: NAT6_TABLE, remotePrefixes: 'remote_prefixes6' },
};

export interface NatDevices {
  /** The name of the tunnel interface toward a peer gateway. */
  peerInterface(peerId: number): string;
  /** The intra-cluster overlay device (the kernel fallback's `strait.vxlan`). */
  overlay: string;
}

const interfaceNamePattern = /^[a-z0-9.-]{1,15}$/;

/** The priorities nft names `dstnat`, `srcnat` and `mangle` (its JSON takes numbers only). */
const priority = { dstnat: -100, srcnat: 100, mangle: -150 } as const;

const hostMask = (cidr: Cidr) => formatIp({ family: cidr.family, value: cidrSize(cidr) - 1n });
const prefix = (cidr: Cidr): NftExpression => ({ prefix: { addr: formatIp({ family: cidr.family, value: cidr.base }), len: cidr.prefix } });
/** `ip saddr`, `ip6 daddr`, ... */
const header = (family: IpFamily, field: 'saddr' | 'daddr'): NftExpression => ({
  payload: { protocol: familyTerms[family].protocol, field },
});
const is = (left: NftExpression, right: NftExpression): NftStatement => ({ match: { op: '==', left, right } });
const iifname = (name: string) => is({ meta: { key: 'iifname' } }, name);
const ipv6Only = is({ meta: { key: 'nfproto' } }, 'ipv6');
const oifname = (names: string | string[]) => is({ meta: { key: 'oifname' } }, typeof names === 'string' ? names : { set: names });
/** `tcp flags syn / syn,rst`: SYN and SYN-ACK. */
const syn = is({ '&': [{ payload: { protocol: 'tcp', field: 'flags' } }, ['syn', 'rst']] }, 'syn');
/** `tcp option maxseg size set <value>`. */
const setMss = (value: NftExpression): NftStatement => ({ mangle: { key: { 'tcp option': { name: 'maxseg', field: 'size' } }, value } });
/** `snat|dnat ip prefix to <key> map { from : to, ... }`: the host part kept, the prefix replaced. */
const prefixNat = (family: IpFamily, key: NftExpression, pairs: [Cidr, Cidr][]) => ({
  family: familyTerms[family].protocol,
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

  set(name: string, type: NftAddressType, keys: NftExpression[]): void {
    this.commands.push({ add: { set: { ...this.at, name, type, flags: ['interval'] } } });
    if (keys.length > 0) this.commands.push({ add: { element: { ...this.at, name, elem: keys } } });
  }

  map(name: string, type: NftAddressType, pairs: [NftExpression, NftExpression][]): void {
    this.commands.push({ add: { map: { ...this.at, name, type, map: type } } });
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

type NamedPeer = PeerSpec & { interfaceName: string };

/** The peers that carry `family`, with their networks of it. */
const peersOf = (peers: NamedPeer[], family: IpFamily) =>
  peers.flatMap((peer) => {
    const networks = peerNetworks(peer, family);
    return networks ? [{ peer, networks }] : [];
  });

const remotePrefixes = (networks: PeerFamilyNetworks) => [networks.remotePodCIDR, networks.remoteExternalCIDR];

/**
 * A spec checked by src/api/node-dataplane.ts (disjoint prefixes, views of our size) and the dataplane's
 * family check; `mtus`: the node's tunnel MTUs (default: a 1500-byte underlay's).
 */
export function natRuleset(spec: NodeDataplaneSpec, devices: NatDevices, mtus: TunnelMtus = tunnelMtus(defaultUnderlayMtu)): NftDocument {
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
  const families = familiesOf(spec);
  const filter = new TableBuilder(FILTER_TABLE);
  for (const family of families) {
    const { remotePrefixes: set, addressType } = familyTerms[family];
    const prefixes = peersOf(peers, family)
      .flatMap(({ networks }) => remotePrefixes(networks))
      .sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
    filter.set(set, addressType, prefixes.map(prefix));
  }
  // `ip daddr @remote_prefixes snat ip to ip saddr`, and the same for ip6
  filter.chain(
    'avoid_masquerade',
    { type: 'nat', hook: 'postrouting', prio: priority.srcnat - 5 },
    families.map((family) => [
      is(header(family, 'daddr'), `@${familyTerms[family].remotePrefixes}`),
      { snat: { family: familyTerms[family].protocol, addr: header(family, 'saddr') } },
    ]),
  );
  filter.chain('clamp_mss', { type: 'filter', hook: 'forward', prio: priority.mangle }, [
    [oifname(tunnels.map((t) => t.name)), syn, setMss({ rt: { key: 'mtu' } })],
    ...tunnels.map((t) => [iifname(t.name), syn, setMss(clampedMss(t.mtu))]),
    // IPv6's header is 20 bytes longer: its SYNs lowered again (nftables only ever lowers an MSS).
    ...(families.includes(6) ? tunnels.map((t) => [iifname(t.name), ipv6Only, syn, setMss(clampedMss(t.mtu, 6))]) : []),
  ]);
  if (spec.node.role === 'worker') return { nftables: filter.commands };
  return { nftables: [...families.flatMap((family) => gatewayNatTable(spec, family, peers)), ...filter.commands] };
}

/** The gateway's NAT table of one family: the NatMappings of that family, the prefix and transit NAT. */
function gatewayNatTable(spec: NodeDataplaneSpec, family: IpFamily, allPeers: NamedPeer[]): NftCommand[] {
  const { podCIDR, externalCIDR, transitAddress } = homeNetworks(spec, family)!;
  const daddr = header(family, 'daddr');
  const saddr = header(family, 'saddr');
  const peers = peersOf(allPeers, family);
  const fromPeers: NftStatement[][] = [];
  const toPeers: NftStatement[][] = [];
  for (const { peer, networks } of peers) {
    fromPeers.push(
      // `ip daddr <A's view of our ExternalCIDR> dnat ip to ip daddr & hostmask | externalBase map @natmappings`
      [
        iifname(peer.interfaceName),
        is(daddr, prefix(networks.localNATExternalCIDR)),
        {
          dnat: {
            family: familyTerms[family].protocol,
            addr: {
              map: {
                key: { '|': [{ '&': [daddr, hostMask(externalCIDR)] }, formatIp({ family, value: externalCIDR.base })] },
                data: '@natmappings',
              },
            },
          },
        },
      ],
      [
        iifname(peer.interfaceName),
        {
          dnat: prefixNat(family, daddr, [
            [networks.localNATPodCIDR, podCIDR],
            [networks.localNATExternalCIDR, externalCIDR],
          ]),
        },
      ],
    );
    toPeers.push([
      oifname(peer.interfaceName),
      {
        snat: prefixNat(family, saddr, [
          [podCIDR, networks.localNATPodCIDR],
          [externalCIDR, networks.localNATExternalCIDR],
        ]),
      },
    ]);
    // Transit from any other peer leaves from our transit address, in this peer's view of our ExternalCIDR.
    const others = peers.filter((other) => other.peer !== peer).flatMap((other) => remotePrefixes(other.networks));
    if (others.length > 0) {
      const transitSeen = formatIp(translateIp(transitAddress, externalCIDR, networks.localNATExternalCIDR));
      toPeers.push([
        oifname(peer.interfaceName),
        is(saddr, { set: others.map(prefix) }),
        { snat: { family: familyTerms[family].protocol, addr: transitSeen } },
      ]);
    }
  }
  const nat = new TableBuilder(familyTerms[family].natTable);
  nat.map(
    'natmappings',
    familyTerms[family].addressType,
    spec.natMappings
      .filter((m) => m.externalAddress.family === family)
      .map((m) => [formatIp(m.externalAddress), formatIp(m.endpointAddress)]),
  );
  nat.chain('from_peers', { type: 'nat', hook: 'prerouting', prio: priority.dstnat - 10 }, fromPeers);
  nat.chain('to_peers', { type: 'nat', hook: 'postrouting', prio: priority.srcnat - 10 }, toPeers);
  return nat.commands;
}
