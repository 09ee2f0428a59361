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
 */
import { InputError } from '../errors';
import { type Cidr, cidrSize, cidrsOverlap, containsIp, formatCidr, formatIp, parseCidr, parseIp, translateIp } from '../ipam/cidr';
import type { NodeDataplaneSpec } from '../nodespec/spec';

export const NAT_TABLE = { family: 'ip', name: 'strait' } as const;
export const FILTER_TABLE = { family: 'inet', name: 'strait_filter' } as const;

export interface NatDevices {
  /** The name of the tunnel interface toward a peer gateway. */
  peerInterface(peerId: number): string;
}

const interfaceNamePattern = /^[a-z0-9.-]{1,15}$/;

interface CheckedPeer {
  peerId: number;
  field: string;
  interfaceName: string;
  remotePod: Cidr;
  remoteExternal: Cidr;
  localNatPod: Cidr;
  localNatExternal: Cidr;
}

function ipv4Cidr(field: string, text: unknown): Cidr {
  const cidr = parseCidr(field, text);
  if (cidr.family !== 4) throw new InputError(field, text, 'only IPv4 is supported by the kernel fallback NAT');
  return cidr;
}

function ipv4Address(field: string, text: unknown) {
  const ip = parseIp(field, text);
  if (ip.family !== 4) throw new InputError(field, text, 'only IPv4 is supported by the kernel fallback NAT');
  return ip;
}

const hostMask = (cidr: Cidr) => formatIp({ family: 4, value: cidrSize(cidr) - 1n });

export function natRuleset(spec: NodeDataplaneSpec, devices: NatDevices): string {
  const podCIDR = ipv4Cidr('podCIDR', spec.podCIDR);
  const externalCIDR = ipv4Cidr('externalCIDR', spec.externalCIDR);
  if (cidrsOverlap(podCIDR, externalCIDR)) throw new InputError('externalCIDR', spec.externalCIDR, `overlaps podCIDR ${spec.podCIDR}`);
  if (spec.node?.role !== 'gateway' && spec.node?.role !== 'worker') {
    throw new InputError('node.role', spec.node?.role, "expected 'gateway' or 'worker'");
  }
  if (!Array.isArray(spec.peers)) throw new InputError('peers', spec.peers, 'expected a list');
  if (!Array.isArray(spec.natMappings)) throw new InputError('natMappings', spec.natMappings, 'expected a list');

  const peers = spec.peers.map((peer, i) => checkPeer(peer, `peers[${i}]`, podCIDR, externalCIDR, devices));
  const remotePrefixes = checkRemotePrefixes(peers, podCIDR, externalCIDR);
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
    '}',
  ];
  if (spec.node.role === 'worker') return `${filterTable.join('\n')}\n`;

  const transit = ipv4Address('transitAddress', spec.transitAddress);
  if (!containsIp(externalCIDR, transit)) throw new InputError('transitAddress', spec.transitAddress, `not in externalCIDR ${spec.externalCIDR}`);
  const mappings = checkNatMappings(spec, externalCIDR, formatIp(transit));

  const fromPeers: string[] = [];
  const toPeers: string[] = [];
  for (const peer of peers) {
    const iif = `iifname "${peer.interfaceName}"`;
    const oif = `oifname "${peer.interfaceName}"`;
    const seen = (home: Cidr, peerView: Cidr) => `${formatCidr(home)} : ${formatCidr(peerView)}`;
    const toHome = (peerView: Cidr, home: Cidr) => `${formatCidr(peerView)} : ${formatCidr(home)}`;
    fromPeers.push(
      `\t\t${iif} ip daddr ${formatCidr(peer.localNatExternal)} dnat ip to ip daddr & ${hostMask(externalCIDR)} | ${formatIp({ family: 4, value: externalCIDR.base })} map @natmappings`,
      `\t\t${iif} dnat ip prefix to ip daddr map { ${toHome(peer.localNatPod, podCIDR)}, ${toHome(peer.localNatExternal, externalCIDR)} }`,
    );
    toPeers.push(`\t\t${oif} snat ip prefix to ip saddr map { ${seen(podCIDR, peer.localNatPod)}, ${seen(externalCIDR, peer.localNatExternal)} }`);
    // Transit from any other peer leaves from our transit address, in this peer's view of our ExternalCIDR.
    const others = peers.filter((other) => other !== peer).flatMap((other) => [other.remotePod, other.remoteExternal]);
    if (others.length > 0) {
      const transitSeen = formatIp(translateIp(transit, externalCIDR, peer.localNatExternal));
      toPeers.push(`\t\t${oif} ip saddr { ${others.map(formatCidr).join(', ')} } snat ip to ${transitSeen}`);
    }
  }
  const natTable = [
    `table ${NAT_TABLE.family} ${NAT_TABLE.name} {`,
    '\tmap natmappings {',
    '\t\ttype ipv4_addr : ipv4_addr',
    ...elements(mappings.map((m) => `${m.externalAddress} : ${m.endpointAddress}`)),
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

function checkPeer(peer: NodeDataplaneSpec['peers'][number], field: string, podCIDR: Cidr, externalCIDR: Cidr, devices: NatDevices): CheckedPeer {
  if (!Number.isInteger(peer.peerId) || peer.peerId < 0 || peer.peerId > 0xffffffff) {
    throw new InputError(`${field}.peerId`, peer.peerId, 'expected an integer 0 to 4294967295');
  }
  const interfaceName = devices.peerInterface(peer.peerId);
  if (typeof interfaceName !== 'string' || !interfaceNamePattern.test(interfaceName)) {
    throw new InputError(`devices.peerInterface(${peer.peerId})`, interfaceName, 'an interface name must match ^[a-z0-9.-]{1,15}$');
  }
  const checked: CheckedPeer = {
    peerId: peer.peerId,
    field,
    interfaceName,
    remotePod: ipv4Cidr(`${field}.remotePodCIDR`, peer.remotePodCIDR),
    remoteExternal: ipv4Cidr(`${field}.remoteExternalCIDR`, peer.remoteExternalCIDR),
    localNatPod: ipv4Cidr(`${field}.localNATPodCIDR`, peer.localNATPodCIDR),
    localNatExternal: ipv4Cidr(`${field}.localNATExternalCIDR`, peer.localNATExternalCIDR),
  };
  // Prefix NAT keeps host bits, so each view must be the same size as the network it stands for.
  if (checked.localNatPod.prefix !== podCIDR.prefix) {
    throw new InputError(`${field}.localNATPodCIDR`, peer.localNATPodCIDR, `prefix length must equal podCIDR's /${podCIDR.prefix}`);
  }
  if (checked.localNatExternal.prefix !== externalCIDR.prefix) {
    throw new InputError(`${field}.localNATExternalCIDR`, peer.localNATExternalCIDR, `prefix length must equal externalCIDR's /${externalCIDR.prefix}`);
  }
  if (cidrsOverlap(checked.localNatPod, checked.localNatExternal)) {
    throw new InputError(`${field}.localNATExternalCIDR`, peer.localNATExternalCIDR, `overlaps ${field}.localNATPodCIDR ${peer.localNATPodCIDR}`);
  }
  return checked;
}

/** Every peer's remote prefixes, sorted; they must be disjoint from each other and from our networks. */
function checkRemotePrefixes(peers: CheckedPeer[], podCIDR: Cidr, externalCIDR: Cidr): Cidr[] {
  const named = peers.flatMap((p) => [
    { field: `${p.field}.remotePodCIDR`, cidr: p.remotePod },
    { field: `${p.field}.remoteExternalCIDR`, cidr: p.remoteExternal },
  ]);
  const taken = [{ field: 'podCIDR', cidr: podCIDR }, { field: 'externalCIDR', cidr: externalCIDR }];
  for (const item of named) {
    const clash = taken.find((t) => cidrsOverlap(t.cidr, item.cidr));
    if (clash) throw new InputError(item.field, formatCidr(item.cidr), `overlaps ${clash.field} ${formatCidr(clash.cidr)}`);
    taken.push(item);
  }
  return named.map((n) => n.cidr).sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
}

function checkNatMappings(spec: NodeDataplaneSpec, externalCIDR: Cidr, transit: string): { externalAddress: string; endpointAddress: string }[] {
  const seen = new Set<string>([transit]);
  return spec.natMappings.map((mapping, i) => {
    const field = `natMappings[${i}]`;
    const external = formatIp(ipv4Address(`${field}.externalAddress`, mapping.externalAddress));
    if (!containsIp(externalCIDR, ipv4Address(`${field}.externalAddress`, mapping.externalAddress))) {
      throw new InputError(`${field}.externalAddress`, mapping.externalAddress, `not in externalCIDR ${spec.externalCIDR}`);
    }
    if (seen.has(external)) {
      throw new InputError(`${field}.externalAddress`, mapping.externalAddress, external === transit ? 'is the transitAddress' : 'mapped twice');
    }
    seen.add(external);
    return { externalAddress: external, endpointAddress: formatIp(ipv4Address(`${field}.endpointAddress`, mapping.endpointAddress)) };
  });
}
