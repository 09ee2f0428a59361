/**
 * The nftables NAT of the kernel fallback (docs/kernel-fallback.md), equal in effect to the eBPF NAT of
 * docs/datapath.md: a pure function from the node spec to an nft script defining Strait's two tables.
 * `nat-apply.ts` installs it atomically.
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
import { InputError } from '../errors';
import { type Cidr, cidrSize, formatCidr, formatIp, translateIp } from '../net/cidr';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { type TunnelMtus, clampedMss, defaultUnderlayMtu, tunnelMtus } from '../nodespec/tunnel-mtu';

export const NAT_TABLE = { family: 'ip', name: 'strait' } as const;
export const FILTER_TABLE = { family: 'inet', name: 'strait_filter' } as const;

export interface NatDevices {
  /** The name of the tunnel interface toward a peer gateway. */
  peerInterface(peerId: number): string;
  /** The intra-cluster overlay device (the kernel fallback's `strait.vxlan`). */
  overlay: string;
}

const interfaceNamePattern = /^[a-z0-9.-]{1,15}$/;

const hostMask = (cidr: Cidr) => formatIp({ family: 4, value: cidrSize(cidr) - 1n });

/** The peer's tunnel interface, as a name that can go into a rule. */
function peerInterface(devices: NatDevices, peerId: number): string {
  const name = devices.peerInterface(peerId);
  if (!interfaceNamePattern.test(name)) throw new InputError(`devices.peerInterface(${peerId})`, name, 'an interface name must match ^[a-z0-9.-]{1,15}$');
  return name;
}

/**
 * A spec checked by src/api/node-dataplane.ts (disjoint prefixes, views of our size) and `requireIpv4`;
 * `mtus`: the node's tunnel MTUs (default: a 1500-byte underlay's).
 */
export function natRuleset(spec: NodeDataplaneSpec, devices: NatDevices, mtus: TunnelMtus = tunnelMtus(defaultUnderlayMtu)): string {
  const { podCIDR, externalCIDR } = spec;
  const peers = spec.peers.map((peer) => ({ ...peer, interfaceName: peerInterface(devices, peer.peerId) }));
  if (!interfaceNamePattern.test(devices.overlay)) throw new InputError('devices.overlay', devices.overlay, 'an interface name must match ^[a-z0-9.-]{1,15}$');
  // A gateway's tunnels to peers; a worker reaches them through the overlay only.
  const tunnels = [
    { name: devices.overlay, mtu: mtus.vxlan },
    ...(spec.node.role === 'gateway' ? peers.map((p) => ({ name: p.interfaceName, mtu: p.transport === 'ipsec' ? mtus.ipsec : mtus.vxlan })) : []),
  ];
  const syn = 'tcp flags syn / syn,rst tcp option maxseg size set';
  const remotePrefixes = peers.flatMap((p) => [p.remotePodCIDR, p.remoteExternalCIDR]).sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
  const filterTable = [
    `table ${FILTER_TABLE.family} ${FILTER_TABLE.name} {`,
    '\tset remote_prefixes {',
    '\t\ttype ipv4_addr',
    '\t\tflags interval',
    ...elements(remotePrefixes.map(formatCidr)),
    '\t}',
    '\tchain avoid_masquerade {',
    '\t\ttype nat hook postrouting priority srcnat - 5; policy accept;',
    '\t\tip daddr @remote_prefixes snat ip to ip saddr',
    '\t}',
    '\tchain clamp_mss {',
    '\t\ttype filter hook forward priority mangle; policy accept;',
    `\t\toifname { ${tunnels.map((t) => `"${t.name}"`).join(', ')} } ${syn} rt mtu`,
    ...tunnels.map((t) => `\t\tiifname "${t.name}" ${syn} ${clampedMss(t.mtu)}`),
    '\t}',
    '}',
  ];
  if (spec.node.role === 'worker') return `${filterTable.join('\n')}\n`;

  const transit = spec.transitAddress;
  const fromPeers: string[] = [];
  const toPeers: string[] = [];
  for (const peer of peers) {
    const iif = `iifname "${peer.interfaceName}"`;
    const oif = `oifname "${peer.interfaceName}"`;
    const seen = (home: Cidr, peerView: Cidr) => `${formatCidr(home)} : ${formatCidr(peerView)}`;
    const toHome = (peerView: Cidr, home: Cidr) => `${formatCidr(peerView)} : ${formatCidr(home)}`;
    fromPeers.push(
      `\t\t${iif} ip daddr ${formatCidr(peer.localNATExternalCIDR)} dnat ip to ip daddr & ${hostMask(externalCIDR)} | ${formatIp({ family: 4, value: externalCIDR.base })} map @natmappings`,
      `\t\t${iif} dnat ip prefix to ip daddr map { ${toHome(peer.localNATPodCIDR, podCIDR)}, ${toHome(peer.localNATExternalCIDR, externalCIDR)} }`,
    );
    toPeers.push(`\t\t${oif} snat ip prefix to ip saddr map { ${seen(podCIDR, peer.localNATPodCIDR)}, ${seen(externalCIDR, peer.localNATExternalCIDR)} }`);
    // Transit from any other peer leaves from our transit address, in this peer's view of our ExternalCIDR.
    const others = peers.filter((other) => other !== peer).flatMap((other) => [other.remotePodCIDR, other.remoteExternalCIDR]);
    if (others.length > 0) {
      const transitSeen = formatIp(translateIp(transit, externalCIDR, peer.localNATExternalCIDR));
      toPeers.push(`\t\t${oif} ip saddr { ${others.map(formatCidr).join(', ')} } snat ip to ${transitSeen}`);
    }
  }
  const natTable = [
    `table ${NAT_TABLE.family} ${NAT_TABLE.name} {`,
    '\tmap natmappings {',
    '\t\ttype ipv4_addr : ipv4_addr',
    ...elements(spec.natMappings.map((m) => `${formatIp(m.externalAddress)} : ${formatIp(m.endpointAddress)}`)),
    '\t}',
    '\tchain from_peers {',
    '\t\ttype nat hook prerouting priority dstnat - 10; policy accept;',
    ...fromPeers,
    '\t}',
    '\tchain to_peers {',
    '\t\ttype nat hook postrouting priority srcnat - 10; policy accept;',
    ...toPeers,
    '\t}',
    '}',
  ];
  return `${natTable.join('\n')}\n${filterTable.join('\n')}\n`;
}

const elements = (items: string[]) => (items.length === 0 ? [] : [`\t\telements = { ${items.join(', ')} }`]);
