/**
 * TypeScript mirror of bpf/lib/common.h and of the maps in bpf/lib/maps.h: the struct codecs, the map
 * names with their key/value codecs, and the enums. test/dataplane/ebpf/layout.test.ts checks every struct
 * against the BTF of dist/bpf/strait.o, so a field changed on one side only fails the build's tests.
 */
import { join } from 'node:path';
import {
  type BpfMap,
  type BpfObject,
  type Codec,
  type CodecValue,
  type StructCodec,
  array,
  be16,
  ipv4,
  ipv6,
  lpmKey,
  mac,
  perCpu,
  struct,
  u16,
  u32,
  u64,
  u8,
} from '../../native';

/** The compiled datapath object (bpf/strait.c). */
export const datapathObjectPath = join(__dirname, '..', '..', '..', 'bpf', 'strait.o');

export const Program = {
  FromPod: 'strait_from_pod',
  FromOverlay: 'strait_from_overlay',
  ToOverlay: 'strait_to_overlay',
  Liveness: 'strait_liveness_reply',
} as const;

export const Flags = { Gateway: 1 << 0, Standby: 1 << 1 } as const;

/** The slots of strait_progs (enum strait_prog_slot, bpf/lib/common.h). */
export enum TailCall {
  Transit6 = 0,
}

export enum PrefixKind {
  Pod = 0,
  External = 1,
}

/** enum strait_drop_reason; the index into strait_drops. */
export enum DropReason {
  Malformed = 0,
  NoPeer = 1,
  NotOurs = 2,
  NoNatMapping = 3,
  TransitState = 4,
  NoConfig = 5,
  Csum = 6,
  Tunnel = 7,
  ExtHdrs = 8,
  Transit6 = 9,
  TooBig = 10,
}
export const DROP_REASON_COUNT = 11;

type WithoutPad<T> = { [K in keyof T as K extends `_pad${string}` ? never : K]: T[K] };

/** struct() whose values leave out the `_pad` fields (they are written as zero and never read). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- codecs of different value types, as native/codec.ts's Fields
function cstruct<F extends Record<string, Codec<any>>>(fields: F): StructCodec<WithoutPad<CodecValue<ReturnType<typeof struct<F>>>>> {
  return struct(fields) as StructCodec<never>;
}

/**
 * STRAIT_PREFIX_LEN_NONE (bpf/lib/common.h): the prefix length of a network a family lacks (the IPv4
 * networks of an IPv6-only home or peering, the IPv6 ones of an IPv4-only home), its address all zero.
 * Nothing is in it and the programs translate nothing into it.
 */
export const PREFIX_LEN_NONE = 255;

/** Whether a map's network is one, not PREFIX_LEN_NONE (inspect also reads a /0 strait_config6 PodCIDR as never written). */
export const isNetwork = (c: { prefixLen: number }, family: 4 | 6): boolean => c.prefixLen <= (family === 4 ? 32 : 128);

export const cidr = struct({ addr: ipv4, prefixLen: u32 });

export const config = cstruct({
  podCidr: cidr,
  externalCidr: cidr,
  nodeAddr: ipv4,
  gatewayAddr: ipv4,
  transitAddr: ipv4,
  overlayIfindex: u32,
  overlayVni: u32,
  flags: u32,
  overlayMac: mac,
  tunnelMtu: u16,
  /** An IPv6 underlay: nodeAddr and gatewayAddr are 0.0.0.0 and these are the node's and the gateway's. */
  nodeAddr6: ipv6,
  gatewayAddr6: ipv6,
});

export const route = struct({ peerId: u32, kind: u32 });
export const lpmV4Key = lpmKey(ipv4);
/**
 * The VNI and the MACs are the peering's wire format (src/nodespec/peer-tunnel.ts); 52 bytes, no padding.
 * The tunnel's remote end is `endpoint`, or where it is 0.0.0.0 (a peering over IPv6) `endpoint6`.
 */
export const peer = struct({
  localNatPod: cidr,
  localNatExternal: cidr,
  endpoint: ipv4,
  vni: u32,
  dstMac: mac,
  srcMac: mac,
  endpoint6: ipv6,
});
/**
 * A tunnel end the maps hold in two fields (the config's addresses, a peer's endpoint, a node's
 * underlay) as text: the IPv4 one, or the IPv6 one where the IPv4 one is 0.0.0.0.
 */
export const tunnelEndText = (v4: string, v6: string): string => (v4 === '0.0.0.0' && v6 !== '::' ? v6 : v4);
/** The node's underlay address: `underlay`, or where it is 0.0.0.0 (an IPv6 underlay) `underlay6`. */
export const node = cstruct({ underlay: ipv4, _pad: u32, underlay6: ipv6 });
export const peerCounters = struct({ txPackets: u64, txBytes: u64, rxPackets: u64, rxBytes: u64 });
const flowKey = cstruct({ saddr: ipv4, daddr: ipv4, sport: be16, dport: be16, proto: u8, _pad: array(u8, 3) });
const snatEntry = cstruct({ addr: ipv4, port: be16, flags: u16, _pad: u32, closedNs: u64 });
/** What the probe responder answers with (bpf/lib/liveness.h); `state`: ProbeState. */
export const liveness = cstruct({
  addrs: array(ipv4, 2),
  generation: u32,
  port: u16,
  state: u8,
  _pad: u8,
  /** The same addresses on an IPv6 underlay. */
  addrs6: array(ipv6, 2),
});

/** IPv6: maps of their own, keyed by 128-bit addresses; the tunnel toward a peer stays in `peer`. */
export const cidr6 = struct({ addr: ipv6, prefixLen: u32 });
export const config6 = struct({ podCidr: cidr6, externalCidr: cidr6, transitAddr: ipv6 });
export const lpmV6Key = lpmKey(ipv6);
export const peer6 = struct({ localNatPod: cidr6, localNatExternal: cidr6 });
/** strait_snat6: IPv6 transit flows, as strait_snat's (the same fields after the addresses). */
const flow6Key = cstruct({ saddr: ipv6, daddr: ipv6, sport: be16, dport: be16, proto: u8, _pad: array(u8, 3) });
const snat6Entry = cstruct({ addr: ipv6, port: be16, flags: u16, _pad: u32, closedNs: u64 });

/** C struct name → codec, for the BTF layout test and for tools that print raw maps. */
export const structs = {
  strait_cidr: cidr,
  strait_config: config,
  strait_route: route,
  strait_lpm_v4_key: lpmV4Key,
  strait_peer: peer,
  strait_node: node,
  strait_peer_counters: peerCounters,
  strait_flow_key: flowKey,
  strait_snat_entry: snatEntry,
  strait_liveness: liveness,
  strait_in6: struct({ addr: ipv6 }),
  strait_cidr6: cidr6,
  strait_config6: config6,
  strait_lpm_v6_key: lpmV6Key,
  strait_peer6: peer6,
  strait_flow6_key: flow6Key,
  strait_snat6_entry: snat6Entry,
} as const;

/** Every map of the datapath: its pinned name and the codecs of its key and value. */
export const maps = {
  config: { name: 'strait_config', key: u32, value: config },
  routes: { name: 'strait_routes', key: lpmV4Key, value: route },
  peers: { name: 'strait_peers', key: u32, value: peer },
  natmap: { name: 'strait_natmap', key: ipv4, value: ipv4 },
  natmapRev: { name: 'strait_natmap_rev', key: ipv4, value: ipv4 },
  nodes: { name: 'strait_nodes', key: lpmV4Key, value: node },
  snat: { name: 'strait_snat', key: flowKey, value: snatEntry },
  /** A peer's IPv4 traffic; IPv6's is in peerCounters6, of the same value. */
  peerCounters: { name: 'strait_peer_counters', key: u32, value: peerCounters, perCpu: true },
  drops: { name: 'strait_drops', key: u32, value: u64, perCpu: true },
  liveness: { name: 'strait_liveness', key: u32, value: liveness },
  config6: { name: 'strait_config6', key: u32, value: config6 },
  routes6: { name: 'strait_routes6', key: lpmV6Key, value: route },
  peers6: { name: 'strait_peers6', key: u32, value: peer6 },
  natmap6: { name: 'strait_natmap6', key: ipv6, value: ipv6 },
  natmap6Rev: { name: 'strait_natmap6_rev', key: ipv6, value: ipv6 },
  nodes6: { name: 'strait_nodes6', key: lpmV6Key, value: node },
  snat6: { name: 'strait_snat6', key: flow6Key, value: snat6Entry },
  peerCounters6: { name: 'strait_peer_counters6', key: u32, value: peerCounters, perCpu: true },
  /** A program array: slot (TailCall) → program (an fd written, an id read); the agent fills it (tail-calls.ts). */
  progs: { name: 'strait_progs', key: u32, value: u32 },
} as const;

/** The maps whose entries no spec can rebuild (the datapath writes them): an upgrade carries them over (map-upgrade.ts). */
export const stateMaps: ReadonlySet<string> = new Set([
  maps.snat.name,
  maps.snat6.name,
  maps.peerCounters.name,
  maps.peerCounters6.name,
  maps.drops.name,
]);

/** The key of strait_config's and strait_liveness's single element. */
export const CONFIG_KEY = 0;

/**
 * Whether a strait_config value is one the agent wrote: the map is an array, whose element exists zeroed
 * before that, and a programmed node always names its overlay device. The datapath's test
 * (strait_config_get in bpf/lib/maps.h).
 */
export const configProgrammed = (c: CodecValue<typeof config>): boolean => c.overlayIfindex !== 0;

/** Opens one map by its name through its codecs. */
export type MapOpener = <K, V>(name: string, key: Codec<K>, value: Codec<V>) => BpfMap<K, V>;

/** Opens every datapath map through `open` (per-CPU values: one per CPU). */
export function openMapsWith(open: MapOpener) {
  const m = maps;
  return {
    config: open(m.config.name, m.config.key, m.config.value),
    routes: open(m.routes.name, m.routes.key, m.routes.value),
    peers: open(m.peers.name, m.peers.key, m.peers.value),
    natmap: open(m.natmap.name, m.natmap.key, m.natmap.value),
    natmapRev: open(m.natmapRev.name, m.natmapRev.key, m.natmapRev.value),
    nodes: open(m.nodes.name, m.nodes.key, m.nodes.value),
    snat: open(m.snat.name, m.snat.key, m.snat.value),
    peerCounters: open(m.peerCounters.name, m.peerCounters.key, perCpu(m.peerCounters.value)),
    drops: open(m.drops.name, m.drops.key, perCpu(m.drops.value)),
    liveness: open(m.liveness.name, m.liveness.key, m.liveness.value),
    config6: open(m.config6.name, m.config6.key, m.config6.value),
    routes6: open(m.routes6.name, m.routes6.key, m.routes6.value),
    peers6: open(m.peers6.name, m.peers6.key, m.peers6.value),
    natmap6: open(m.natmap6.name, m.natmap6.key, m.natmap6.value),
    natmap6Rev: open(m.natmap6Rev.name, m.natmap6Rev.key, m.natmap6Rev.value),
    nodes6: open(m.nodes6.name, m.nodes6.key, m.nodes6.value),
    snat6: open(m.snat6.name, m.snat6.key, m.snat6.value),
    peerCounters6: open(m.peerCounters6.name, m.peerCounters6.key, perCpu(m.peerCounters6.value)),
  };
}

/** Opens every datapath map of a loaded object. */
export const openMaps = (obj: BpfObject) => openMapsWith((name, key, value) => obj.map(name, key, value));
export type DatapathMaps = ReturnType<typeof openMapsWith>;
