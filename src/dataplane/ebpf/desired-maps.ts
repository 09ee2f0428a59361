/**
 * What the datapath maps of one node must hold for a spec: pure, so the reconciler only diffs and
 * writes. Everything comes from the node dataplane spec except the overlay device's ifindex and the
 * tunnel MTU (its underlay device's, less VXLAN), which only the node knows. As typed entries (for
 * reading), and as the tables the reconciler diffs (map-sync.ts), built without formatting or encoding
 * the 100,000s of NAT addresses.
 */
import type { CodecValue } from '../../native';
import { type Cidr, formatIp } from '../../net/cidr';
import { peeringVni, tunnelMac } from '../../nodespec/peer-tunnel';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { defaultUnderlayMtu, tunnelMtus } from '../../nodespec/tunnel-mtu';
import { type Table, be32Ids, hexIds, tableOf } from './map-sync';
import { U32Table } from './u32-table';
import {
  CONFIG_KEY,
  Flags,
  PrefixKind,
  type cidr,
  type config,
  type liveness,
  type lpmV4Key,
  maps,
  type node,
  type peer,
  type route,
} from './layout';
import { ProbeState, livenessPort } from '../../liveness/wire';
import { isStandby } from '../../liveness/local-gateway';

type Entry<K, V> = readonly [K, V];
type MapCidr = CodecValue<typeof cidr>;

export interface DesiredMaps {
  config: Entry<number, CodecValue<typeof config>>[];
  peers: Entry<number, CodecValue<typeof peer>>[];
  routes: Entry<CodecValue<typeof lpmV4Key>, CodecValue<typeof route>>[];
  natmap: Entry<string, string>[];
  natmapRev: Entry<string, string>[];
  nodes: Entry<CodecValue<typeof lpmV4Key>, CodecValue<typeof node>>[];
  liveness: Entry<number, CodecValue<typeof liveness>>[];
}

/** A prefix as the maps hold it (IPv4: `requireIpv4` refused anything else before). */
const v4 = (c: Cidr): MapCidr => ({ addr: formatIp({ family: 4, value: c.base }), prefixLen: c.prefix });

type NodeMaps = Omit<DesiredMaps, 'natmap' | 'natmapRev'>;

/**
 * `tunnelMtu`: the node's (src/kernel/underlay-mtu.ts); default: a 1500-byte underlay's. `generation`:
 * what the probe responder answers as such (struct strait_liveness: which load of the datapath this is).
 */
export function desiredMaps(
  spec: NodeDataplaneSpec,
  overlayIfindex: number,
  tunnelMtu = tunnelMtus(defaultUnderlayMtu).vxlan,
  generation = 0,
): DesiredMaps {
  const natmap = spec.natMappings.map((m) => [formatIp(m.externalAddress), formatIp(m.endpointAddress)] as const);
  return { ...nodeMaps(spec, overlayIfindex, tunnelMtu, generation), natmap, natmapRev: natmap.map(([ext, real]) => [real, ext] as const) };
}

/**
 * Which load of the datapath this is, as the probes' answers say it: the second it loaded, so a restarted
 * agent's (or responder's) answers differ from its predecessor's.
 */
export const loadGeneration = (now = Date.now()): number => Math.floor(now / 1000) >>> 0;

/** What the probe responder answers with, on the addresses nodes and peers probe: the underlay's and the public one. */
export const livenessValue = (spec: NodeDataplaneSpec, generation: number): CodecValue<typeof liveness> => ({
  addrs: [formatIp(spec.node.underlayAddress), spec.node.publicAddress ? formatIp(spec.node.publicAddress) : '0.0.0.0'],
  generation,
  port: livenessPort,
  state: ProbeState.Ready,
});

/** Every map but the NAT ones: a few entries per peer and node. */
function nodeMaps(spec: NodeDataplaneSpec, overlayIfindex: number, tunnelMtu: number, generation: number): NodeMaps {
  const gateway = spec.node.role === 'gateway';
  const configValue = {
    podCidr: v4(spec.podCIDR),
    externalCidr: v4(spec.externalCIDR),
    nodeAddr: formatIp(spec.node.underlayAddress),
    gatewayAddr: formatIp(spec.activeGateway.underlayAddress),
    transitAddr: formatIp(spec.transitAddress),
    overlayIfindex,
    overlayVni: spec.overlay.vni,
    flags: gateway ? Flags.Gateway : isStandby(spec) ? Flags.Standby : 0,
    overlayMac: spec.overlay.mac,
    tunnelMtu,
  };
  const peers = spec.peers.map(
    (p) =>
      [
        p.peerId,
        {
          localNatPod: v4(p.localNATPodCIDR),
          localNatExternal: v4(p.localNATExternalCIDR),
          endpoint: formatIp(p.endpoint.address),
          // The peering's wire format, the same as the kernel fallback's tunnel toward this peer.
          vni: peeringVni(spec.clusterId, p.clusterId, spec.overlay.vni),
          dstMac: tunnelMac(p.clusterId, spec.clusterId),
          srcMac: tunnelMac(spec.clusterId, p.clusterId),
        },
      ] as const,
  );
  const routes = spec.peers.flatMap((p) => [
    [v4(p.remotePodCIDR), { peerId: p.peerId, kind: PrefixKind.Pod }] as const,
    [v4(p.remoteExternalCIDR), { peerId: p.peerId, kind: PrefixKind.External }] as const,
  ]);
  // Symmetric routing: the gateway sends peer traffic for another node's pods through the overlay.
  const nodes = spec.nodes.flatMap((n) => n.podCIDRs.map((c) => [v4(c), { underlay: formatIp(n.underlayAddress) }] as const));
  return {
    config: [[CONFIG_KEY, configValue]],
    peers,
    routes,
    nodes,
    liveness: [[CONFIG_KEY, livenessValue(spec, generation)]],
  };
}

/** The maps' contents as map-sync.ts diffs them: bytes in hex, the NAT maps' addresses as numbers. */
export interface DesiredTables {
  config: Table<string, string>;
  peers: Table<string, string>;
  routes: Table<string, string>;
  natmap: Table<number, number>;
  natmapRev: Table<number, number>;
  nodes: Table<string, string>;
  liveness: Table<string, string>;
}

const hex = (map: { key: { size: number }; value: { size: number } }) => ({ key: hexIds(map.key.size), value: hexIds(map.value.size) });
const be32 = { key: be32Ids, value: be32Ids };

/** The ids of each map's tables. */
export const tableIds = {
  config: hex(maps.config),
  peers: hex(maps.peers),
  routes: hex(maps.routes),
  natmap: be32,
  natmapRev: be32,
  nodes: hex(maps.nodes),
  liveness: hex(maps.liveness),
};

const nodeTables = (m: NodeMaps) => ({
  config: tableOf(maps.config, tableIds.config, m.config),
  peers: tableOf(maps.peers, tableIds.peers, m.peers),
  routes: tableOf(maps.routes, tableIds.routes, m.routes),
  nodes: tableOf(maps.nodes, tableIds.nodes, m.nodes),
  liveness: tableOf(maps.liveness, tableIds.liveness, m.liveness),
});

/** Typed entries as tables. */
export function tablesOf(desired: DesiredMaps): DesiredTables {
  return {
    ...nodeTables(desired),
    natmap: tableOf(maps.natmap, be32, desired.natmap),
    natmapRev: tableOf(maps.natmapRev, be32, desired.natmapRev),
  };
}

/** The same as `tablesOf(desiredMaps(...))`, at a fraction of the cost: no address is formatted or encoded. */
export function desiredTables(spec: NodeDataplaneSpec, overlayIfindex: number, tunnelMtu: number, generation = 0): DesiredTables {
  const natmap = new U32Table(spec.natMappings.length);
  const natmapRev = new U32Table(spec.natMappings.length);
  // IPv4 only (requireIpv4): the value is the `__be32` as a number. Later mappings win, as in desiredMaps.
  for (const m of spec.natMappings) {
    const ext = Number(m.externalAddress.value);
    const real = Number(m.endpointAddress.value);
    natmap.set(ext, real);
    natmapRev.set(real, ext);
  }
  return { ...nodeTables(nodeMaps(spec, overlayIfindex, tunnelMtu, generation)), natmap, natmapRev };
}
