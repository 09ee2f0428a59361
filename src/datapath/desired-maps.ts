/**
 * What the datapath maps of one node must hold for a spec: pure, so the reconciler only diffs and
 * writes. Everything comes from the node dataplane spec except the overlay device's ifindex, which only
 * the node knows.
 */
import type { CodecValue } from '../bpf';
import { InputError } from '../errors';
import { formatIp, parseCidr, parseIp } from '../ipam/cidr';
import { peeringVni, tunnelMac } from '../nodespec/peer-tunnel';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { CONFIG_KEY, Flags, PrefixKind, type cidr, type config, type lpmV4Key, type node, type peer, type route } from './layout';

type Entry<K, V> = readonly [K, V];
type Cidr = CodecValue<typeof cidr>;

export interface DesiredMaps {
  config: Entry<number, CodecValue<typeof config>>[];
  peers: Entry<number, CodecValue<typeof peer>>[];
  routes: Entry<CodecValue<typeof lpmV4Key>, CodecValue<typeof route>>[];
  natmap: Entry<string, string>[];
  natmapRev: Entry<string, string>[];
  nodes: Entry<CodecValue<typeof lpmV4Key>, CodecValue<typeof node>>[];
}

/** An IPv4 prefix as the maps hold it; the eBPF datapath is IPv4-only (IPv6 goes to the fallback). */
function v4(field: string, text: string): Cidr {
  const c = parseCidr(field, text);
  if (c.family !== 4) throw new InputError(field, text, 'the eBPF datapath translates IPv4 only; use --dataplane kernel for IPv6 clusters');
  return { addr: formatIp({ family: 4, value: c.base }), prefixLen: c.prefix };
}

function address(field: string, text: string): string {
  const ip = parseIp(field, text);
  if (ip.family !== 4) throw new InputError(field, text, 'the eBPF datapath translates IPv4 only');
  return text;
}

const lpm = (c: Cidr) => ({ prefixLen: c.prefixLen, addr: c.addr });

export function desiredMaps(spec: NodeDataplaneSpec, overlayIfindex: number): DesiredMaps {
  const gateway = spec.node.role === 'gateway';
  const configValue = {
    podCidr: v4('podCIDR', spec.podCIDR),
    externalCidr: v4('externalCIDR', spec.externalCIDR),
    nodeAddr: address('node.underlayAddress', spec.node.underlayAddress),
    gatewayAddr: address('activeGateway.underlayAddress', spec.activeGateway.underlayAddress),
    transitAddr: address('transitAddress', spec.transitAddress),
    overlayIfindex,
    overlayVni: spec.overlay.vni,
    flags: gateway ? Flags.Gateway : 0,
    overlayMac: spec.overlay.mac,
  };
  const peers = spec.peers.map((p, i) => [p.peerId, {
    localNatPod: v4(`peers[${i}].localNATPodCIDR`, p.localNATPodCIDR),
    localNatExternal: v4(`peers[${i}].localNATExternalCIDR`, p.localNATExternalCIDR),
    endpoint: address(`peers[${i}].endpoint.address`, p.endpoint.address),
    // The peering's wire format, the same as the kernel fallback's tunnel toward this peer.
    vni: peeringVni(spec.clusterId, p.clusterId, spec.overlay.vni),
    dstMac: tunnelMac(p.clusterId, spec.clusterId),
    srcMac: tunnelMac(spec.clusterId, p.clusterId),
  }] as const);
  const routes = spec.peers.flatMap((p, i) => [
    [lpm(v4(`peers[${i}].remotePodCIDR`, p.remotePodCIDR)), { peerId: p.peerId, kind: PrefixKind.Pod }] as const,
    [lpm(v4(`peers[${i}].remoteExternalCIDR`, p.remoteExternalCIDR)), { peerId: p.peerId, kind: PrefixKind.External }] as const,
  ]);
  const natmap = spec.natMappings.map((m, i) => [address(`natMappings[${i}].externalAddress`, m.externalAddress), address(`natMappings[${i}].endpointAddress`, m.endpointAddress)] as const);
  // Symmetric routing: the gateway sends peer traffic for another node's pods through the overlay.
  const nodes = spec.nodes.flatMap((n, i) => n.podCIDRs.map((c, j) => [lpm(v4(`nodes[${i}].podCIDRs[${j}]`, c)), { underlay: address(`nodes[${i}].underlayAddress`, n.underlayAddress) }] as const));
  return {
    config: [[CONFIG_KEY, configValue]],
    peers,
    routes,
    natmap,
    natmapRev: natmap.map(([ext, real]) => [real, ext] as const),
    nodes,
  };
}
