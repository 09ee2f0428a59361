/**
 * What the datapath maps of one node must hold for a spec: pure, so the reconciler only diffs and
 * writes. Everything comes from the node dataplane spec except the overlay device's ifindex and the
 * tunnel MTU (its underlay device's, less VXLAN), which only the node knows. As typed entries (for
 * reading), and as the tables the reconciler diffs (map-sync.ts), built without formatting or encoding
 * the 100,000s of NAT addresses.
 */
import type { CodecValue } from '../../native';
import { type Cidr, type Ip, formatIp } from '../../net/cidr';
import { peeringVni, tunnelMac } from '../../nodespec/peer-tunnel';
import { homeNetworks, peerNetworks } from '../../nodespec/families';
import type { NodeDataplaneSpec, PeerSpec } from '../../nodespec/spec';
import { defaultUnderlayMtu, tunnelMtus } from '../../nodespec/tunnel-mtu';
import { type Table, be32Ids, hexIds, tableOf } from './map-sync';
import { U32Table } from './u32-table';
import {
  CONFIG_KEY,
  Flags,
  PREFIX_LEN_NONE,
  PrefixKind,
  type cidr,
  type cidr6,
  type config,
  type config6,
  type liveness,
  type lpmV4Key,
  type lpmV6Key,
  maps,
  type node,
  type peer,
  type peer6,
  type route,
} from './layout';
import { ProbeState, livenessPort } from '../../liveness/wire';
import { isStandby } from '../../liveness/local-gateway';

type Entry<K, V> = readonly [K, V];
type MapCidr = CodecValue<typeof cidr>;
type MapCidr6 = CodecValue<typeof cidr6>;

export interface DesiredMaps {
  config: Entry<number, CodecValue<typeof config>>[];
  peers: Entry<number, CodecValue<typeof peer>>[];
  routes: Entry<CodecValue<typeof lpmV4Key>, CodecValue<typeof route>>[];
  natmap: Entry<string, string>[];
  natmapRev: Entry<string, string>[];
  nodes: Entry<CodecValue<typeof lpmV4Key>, CodecValue<typeof node>>[];
  liveness: Entry<number, CodecValue<typeof liveness>>[];
  /**
   * The maps of each family hold that family's networks, whichever place it has in the spec; a home or
   * a peering without a family has PREFIX_LEN_NONE networks in the config and peer entry of that family.
   */
  config6: Entry<number, CodecValue<typeof config6>>[];
  peers6: Entry<number, CodecValue<typeof peer6>>[];
  routes6: Entry<CodecValue<typeof lpmV6Key>, CodecValue<typeof route>>[];
  natmap6: Entry<string, string>[];
  natmap6Rev: Entry<string, string>[];
  nodes6: Entry<CodecValue<typeof lpmV6Key>, CodecValue<typeof node>>[];
}

/** A prefix as the maps hold it: IPv4 ones in the IPv4 maps, IPv6 ones in the `6` ones. */
const mapCidr = (c: Cidr): MapCidr & MapCidr6 => ({ addr: formatIp({ family: c.family, value: c.base }), prefixLen: c.prefix });

/** A network of a family the home or the peering lacks (STRAIT_PREFIX_LEN_NONE): nothing is in it. */
const noNetwork = { 4: { addr: '0.0.0.0', prefixLen: PREFIX_LEN_NONE }, 6: { addr: '::', prefixLen: PREFIX_LEN_NONE } } as const;
const noAddress = { 4: '0.0.0.0', 6: '::' } as const;

/** A home's networks of `family` as a config holds them: the PodCIDR, the ExternalCIDR and the transit address. */
function homeConfig(spec: NodeDataplaneSpec, family: 4 | 6) {
  const home = homeNetworks(spec, family);
  return {
    podCidr: home ? mapCidr(home.podCIDR) : noNetwork[family],
    externalCidr: home ? mapCidr(home.externalCIDR) : noNetwork[family],
    transitAddr: home ? formatIp(home.transitAddress) : noAddress[family],
  };
}

/** A peering's views of our networks of `family`, as its peer entry holds them. */
function peerViews(p: PeerSpec, family: 4 | 6) {
  const n = peerNetworks(p, family);
  return {
    localNatPod: n ? mapCidr(n.localNATPodCIDR) : noNetwork[family],
    localNatExternal: n ? mapCidr(n.localNATExternalCIDR) : noNetwork[family],
  };
}

/** The remote prefixes of the peerings that carry `family`, as route entries. */
const routesOf = (spec: NodeDataplaneSpec, family: 4 | 6) =>
  spec.peers.flatMap((p) => {
    const n = peerNetworks(p, family);
    return n
      ? [
          [mapCidr(n.remotePodCIDR), { peerId: p.peerId, kind: PrefixKind.Pod }] as const,
          [mapCidr(n.remoteExternalCIDR), { peerId: p.peerId, kind: PrefixKind.External }] as const,
        ]
      : [];
  });

type NatMaps = 'natmap' | 'natmapRev' | 'natmap6' | 'natmap6Rev';
type NodeMaps = Omit<DesiredMaps, NatMaps>;

/** The NatMappings of one family as map entries, external → real. */
const natEntries = (spec: NodeDataplaneSpec, family: 4 | 6) =>
  spec.natMappings
    .filter((m) => m.externalAddress.family === family)
    .map((m) => [formatIp(m.externalAddress), formatIp(m.endpointAddress)] as const);
const reversed = (entries: Entry<string, string>[]) => entries.map(([ext, real]) => [real, ext] as const);

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
  const natmap = natEntries(spec, 4);
  const natmap6 = natEntries(spec, 6);
  return {
    ...nodeMaps(spec, overlayIfindex, tunnelMtu, generation),
    natmap,
    natmapRev: reversed(natmap),
    natmap6,
    natmap6Rev: reversed(natmap6),
  };
}

/**
 * Which load of the datapath this is, as the probes' answers say it: the second it loaded, so a restarted
 * agent's (or responder's) answers differ from its predecessor's.
 */
export const loadGeneration = (now = Date.now()): number => Math.floor(now / 1000) >>> 0;

/**
 * A tunnel end (an underlay address, a peer's endpoint) as the maps hold it: in its family's field, the
 * other one zero (bpf/lib/common.h: IPv4's 0 means "see the IPv6 field").
 */
const tunnelEnd = (address: Ip): { v4: string; v6: string } =>
  address.family === 4 ? { v4: formatIp(address), v6: '::' } : { v4: '0.0.0.0', v6: formatIp(address) };

/**
 * What the probe responder answers with, on the addresses nodes and peers probe: the underlay's and the
 * public one, each in its family's pair (a public address may be of the other family than the underlay's).
 */
export const livenessValue = (spec: NodeDataplaneSpec, generation: number): CodecValue<typeof liveness> => {
  const [underlay, publicEnd] = [
    tunnelEnd(spec.node.underlayAddress),
    spec.node.publicAddress ? tunnelEnd(spec.node.publicAddress) : undefined,
  ];
  return {
    addrs: [underlay.v4, publicEnd?.v4 ?? '0.0.0.0'],
    addrs6: [underlay.v6, publicEnd?.v6 ?? '::'],
    generation,
    port: livenessPort,
    state: ProbeState.Ready,
  };
};

/** Every map but the NAT ones: a few entries per peer and node. */
function nodeMaps(spec: NodeDataplaneSpec, overlayIfindex: number, tunnelMtu: number, generation: number): NodeMaps {
  const gateway = spec.node.role === 'gateway';
  const [node, activeGateway] = [tunnelEnd(spec.node.underlayAddress), tunnelEnd(spec.activeGateway.underlayAddress)];
  const configValue = {
    ...homeConfig(spec, 4),
    nodeAddr: node.v4,
    gatewayAddr: activeGateway.v4,
    nodeAddr6: node.v6,
    gatewayAddr6: activeGateway.v6,
    overlayIfindex,
    overlayVni: spec.overlay.vni,
    flags: gateway ? Flags.Gateway : isStandby(spec) ? Flags.Standby : 0,
    overlayMac: spec.overlay.mac,
    tunnelMtu,
  };
  const peers = spec.peers.map((p) => {
    const endpoint = tunnelEnd(p.endpoint.address);
    return [
      p.peerId,
      {
        // A peering without IPv4 has an entry still: it holds the tunnel both families take.
        ...peerViews(p, 4),
        endpoint: endpoint.v4,
        endpoint6: endpoint.v6,
        // The peering's wire format, the same as the kernel fallback's tunnel toward this peer.
        vni: peeringVni(spec.clusterId, p.clusterId, spec.overlay.vni),
        dstMac: tunnelMac(p.clusterId, spec.clusterId),
        srcMac: tunnelMac(spec.clusterId, p.clusterId),
      },
    ] as const;
  });
  // Symmetric routing: the gateway sends peer traffic for another node's pods through the overlay.
  const nodesOf = (family: 4 | 6) =>
    spec.nodes.flatMap((n) =>
      n.podCIDRs
        .filter((c) => c.family === family)
        .map((c) => {
          const { v4, v6 } = tunnelEnd(n.underlayAddress);
          return [mapCidr(c), { underlay: v4, underlay6: v6 }] as const;
        }),
    );
  return {
    config: [[CONFIG_KEY, configValue]],
    peers,
    routes: routesOf(spec, 4),
    nodes: nodesOf(4),
    liveness: [[CONFIG_KEY, livenessValue(spec, generation)]],
    config6: [[CONFIG_KEY, homeConfig(spec, 6)]],
    peers6: spec.peers.filter((p) => peerNetworks(p, 6)).map((p) => [p.peerId, peerViews(p, 6)] as const),
    routes6: routesOf(spec, 6),
    nodes6: nodesOf(6),
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
  config6: Table<string, string>;
  peers6: Table<string, string>;
  routes6: Table<string, string>;
  natmap6: Table<string, string>;
  natmap6Rev: Table<string, string>;
  nodes6: Table<string, string>;
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
  config6: hex(maps.config6),
  peers6: hex(maps.peers6),
  routes6: hex(maps.routes6),
  natmap6: hex(maps.natmap6),
  natmap6Rev: hex(maps.natmap6Rev),
  nodes6: hex(maps.nodes6),
};

const nodeTables = (m: NodeMaps) => ({
  config: tableOf(maps.config, tableIds.config, m.config),
  peers: tableOf(maps.peers, tableIds.peers, m.peers),
  routes: tableOf(maps.routes, tableIds.routes, m.routes),
  nodes: tableOf(maps.nodes, tableIds.nodes, m.nodes),
  liveness: tableOf(maps.liveness, tableIds.liveness, m.liveness),
  config6: tableOf(maps.config6, tableIds.config6, m.config6),
  peers6: tableOf(maps.peers6, tableIds.peers6, m.peers6),
  routes6: tableOf(maps.routes6, tableIds.routes6, m.routes6),
  nodes6: tableOf(maps.nodes6, tableIds.nodes6, m.nodes6),
});

/** The IPv6 NAT maps (as many entries as IPv6 NatMappings: encoded like the small maps). */
const nat6Tables = (natmap6: Entry<string, string>[]) => ({
  natmap6: tableOf(maps.natmap6, tableIds.natmap6, natmap6),
  natmap6Rev: tableOf(maps.natmap6Rev, tableIds.natmap6Rev, reversed(natmap6)),
});

/** Typed entries as tables. */
export function tablesOf(desired: DesiredMaps): DesiredTables {
  return {
    ...nodeTables(desired),
    natmap: tableOf(maps.natmap, be32, desired.natmap),
    natmapRev: tableOf(maps.natmapRev, be32, desired.natmapRev),
    ...nat6Tables(desired.natmap6),
  };
}

/** The same as `tablesOf(desiredMaps(...))`, at a fraction of the cost: no address is formatted or encoded. */
export function desiredTables(spec: NodeDataplaneSpec, overlayIfindex: number, tunnelMtu: number, generation = 0): DesiredTables {
  const natmap = new U32Table(spec.natMappings.length);
  const natmapRev = new U32Table(spec.natMappings.length);
  // IPv4: the value is the `__be32` as a number. Later mappings win, as in desiredMaps.
  for (const m of spec.natMappings) {
    if (m.externalAddress.family !== 4) continue;
    const ext = Number(m.externalAddress.value);
    const real = Number(m.endpointAddress.value);
    natmap.set(ext, real);
    natmapRev.set(real, ext);
  }
  return { ...nodeTables(nodeMaps(spec, overlayIfindex, tunnelMtu, generation)), natmap, natmapRev, ...nat6Tables(natEntries(spec, 6)) };
}
