/**
 * TypeScript mirror of bpf/lib/common.h and of the maps in bpf/lib/maps.h: the struct codecs, the map
 * names with their key/value codecs, and the enums. test/dataplane/ebpf/layout.test.ts checks every struct
 * against the BTF of dist/bpf/strait.o, so a field changed on one side only fails the build's tests.
 */
import { join } from 'node:path';
import {
  type BpfObject,
  type Codec,
  type CodecValue,
  type StructCodec,
  array,
  be16,
  ipv4,
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

export const Program = { FromPod: 'strait_from_pod', FromOverlay: 'strait_from_overlay', Liveness: 'strait_liveness_reply' } as const;

export const Flags = { Gateway: 1 << 0, Standby: 1 << 1 } as const;

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
}
export const DROP_REASON_COUNT = 8;

type WithoutPad<T> = { [K in keyof T as K extends `_pad${string}` ? never : K]: T[K] };

/** struct() whose values leave out the `_pad` fields (they are written as zero and never read). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- codecs of different value types, as native/codec.ts's Fields
function cstruct<F extends Record<string, Codec<any>>>(fields: F): StructCodec<WithoutPad<CodecValue<ReturnType<typeof struct<F>>>>> {
  return struct(fields) as StructCodec<never>;
}

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
});

export const route = struct({ peerId: u32, kind: u32 });
export const lpmV4Key = lpmKey(ipv4);
/** The VNI and the MACs are the peering's wire format (src/nodespec/peer-tunnel.ts); 36 bytes, no padding. */
export const peer = struct({ localNatPod: cidr, localNatExternal: cidr, endpoint: ipv4, vni: u32, dstMac: mac, srcMac: mac });
export const node = cstruct({ underlay: ipv4, _pad: u32 });
export const peerCounters = struct({ txPackets: u64, txBytes: u64, rxPackets: u64, rxBytes: u64 });
const flowKey = cstruct({ saddr: ipv4, daddr: ipv4, sport: be16, dport: be16, proto: u8, _pad: array(u8, 3) });
const snatEntry = cstruct({ addr: ipv4, port: be16, flags: u16, _pad: u32, closedNs: u64 });
/** What the probe responder answers with (bpf/lib/liveness.h); `state`: ProbeState. */
export const liveness = cstruct({ addrs: array(ipv4, 2), generation: u32, port: u16, state: u8, _pad: u8 });

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
  peerCounters: { name: 'strait_peer_counters', key: u32, value: peerCounters, perCpu: true },
  drops: { name: 'strait_drops', key: u32, value: u64, perCpu: true },
  liveness: { name: 'strait_liveness', key: u32, value: liveness },
} as const;

/** The maps whose entries no spec can rebuild (the datapath writes them): an upgrade carries them over (map-upgrade.ts). */
export const stateMaps: ReadonlySet<string> = new Set([maps.snat.name, maps.peerCounters.name, maps.drops.name]);

/** The key of strait_config's and strait_liveness's single element. */
export const CONFIG_KEY = 0;

/**
 * Whether a strait_config value is one the agent wrote: the map is an array, whose element exists zeroed
 * before that, and a programmed node always names its overlay device. The datapath's test
 * (strait_config_get in bpf/lib/maps.h).
 */
export const configProgrammed = (c: CodecValue<typeof config>): boolean => c.overlayIfindex !== 0;

/** Opens every datapath map of a loaded object through its codecs (per-CPU values: one per CPU). */
export function openMaps(obj: BpfObject) {
  const m = maps;
  return {
    config: obj.map(m.config.name, m.config.key, m.config.value),
    routes: obj.map(m.routes.name, m.routes.key, m.routes.value),
    peers: obj.map(m.peers.name, m.peers.key, m.peers.value),
    natmap: obj.map(m.natmap.name, m.natmap.key, m.natmap.value),
    natmapRev: obj.map(m.natmapRev.name, m.natmapRev.key, m.natmapRev.value),
    nodes: obj.map(m.nodes.name, m.nodes.key, m.nodes.value),
    snat: obj.map(m.snat.name, m.snat.key, m.snat.value),
    peerCounters: obj.map(m.peerCounters.name, m.peerCounters.key, perCpu(m.peerCounters.value)),
    drops: obj.map(m.drops.name, m.drops.key, perCpu(m.drops.value)),
    liveness: obj.map(m.liveness.name, m.liveness.key, m.liveness.value),
  };
}
export type DatapathMaps = ReturnType<typeof openMaps>;
