/**
 * `strait inspect`: decodes the pinned datapath maps of a node into one report (the maps of
 * docs/datapath.md, in the home cluster's view). It only reads, so it is safe on a live node (the binding
 * opens pins without BPF_F_RDONLY, so that is this module's promise, not the kernel's); each map is read
 * once, so the figures are a snapshot per map.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BpfMap, type Codec, isBpfError } from '../../native';
import { parseIp } from '../../net/cidr';
import { StateError } from '../../errors';
import {
  CONFIG_KEY,
  isNetwork,
  DROP_REASON_COUNT,
  type DatapathMaps,
  DropReason,
  Flags,
  PrefixKind,
  configProgrammed,
  maps,
  openMapsWith,
  tunnelEndText,
} from './layout';

export const inspectSections = ['config', 'peers', 'nat', 'nodes', 'snat', 'drops'] as const;
export type InspectSection = (typeof inspectSections)[number];

interface ConfigReport {
  role: 'gateway' | 'worker';
  /** The IPv4 family's networks; absent on a node without IPv4 (PREFIX_LEN_NONE in strait_config). */
  podCIDR?: string;
  externalCIDR?: string;
  transitAddress?: string;
  nodeAddress: string;
  activeGatewayAddress: string;
  overlayIfindex: number;
  overlayVni: number;
  overlayMac: string;
  tunnelMtu: number;
  /** The IPv6 family (strait_config6), on a node with IPv6. */
  ipv6?: { podCIDR: string; externalCIDR: string; transitAddress: string };
}

/** Counters summed over CPUs. Numbers, not bigints, so JSON carries them (exact up to 2^53). */
interface TrafficCounts {
  txPackets: number;
  txBytes: number;
  rxPackets: number;
  rxBytes: number;
}
const countFields = ['txPackets', 'txBytes', 'rxPackets', 'rxBytes'] as const;

/** The families a peer's traffic is counted in: strait_peer_counters and strait_peer_counters6. */
export const counterFamilies = ['ipv4', 'ipv6'] as const;
export type CounterFamily = (typeof counterFamilies)[number];

/**
 * A peer's traffic, each family's and both together (the figures of the one map there was before IPv6
 * had its own, which readers of `counters.txPackets` and the like keep).
 */
type PeerCountersReport = TrafficCounts & Record<CounterFamily, TrafficCounts>;

interface PeerReport {
  peerId: number;
  /** Normally one each (per family); two while the reconciler replaces a changed prefix. */
  remotePodCIDRs: string[];
  remoteExternalCIDRs: string[];
  /** How the peer sees our IPv4 networks; absent when the peering does not carry IPv4 (PREFIX_LEN_NONE). */
  localNATPodCIDR?: string;
  localNATExternalCIDR?: string;
  endpoint: string;
  vni: number;
  /** The inner Ethernet addresses of frames toward the peer: ours toward it (source), its toward us. */
  srcMac: string;
  dstMac: string;
  counters: PeerCountersReport;
  /** How the peer sees our IPv6 networks (strait_peers6), on a peering that carries IPv6. */
  ipv6?: { localNATPodCIDR: string; localNATExternalCIDR: string };
}

/** A strait_routes entry the datapath cannot use (it drops packets matching it as NoPeer). */
interface StrayRoute {
  prefix: string;
  peerId: number;
  kind: number;
  problem: string;
}

interface NatMappingReport {
  externalAddress: string;
  endpointAddress: string;
  /** Set when strait_natmap_rev does not lead back: replies from the endpoint would leave unmapped. */
  problem?: string;
}

/** A strait_natmap_rev entry whose forward mapping is absent or points elsewhere. */
interface StrayReverseMapping {
  endpointAddress: string;
  externalAddress: string;
  problem: string;
}

interface NodeRouteReport {
  prefix: string;
  underlay: string;
}

/**
 * One half of a transit flow on the hub: `forward` (from a peer, source becomes `to`) or `reply` (back
 * to the transit address, destination becomes `to`); `unknown` when the node has no config to tell.
 */
export interface SnatFlowReport {
  direction: 'forward' | 'reply' | 'unknown';
  proto: string;
  src: string;
  sport: number;
  dst: string;
  dport: number;
  to: { addr: string; port: number };
}

interface SnatReport {
  total: number;
  limit: number;
  flows: SnatFlowReport[];
}

type DropsReport = Record<keyof typeof DropReason, number>;

export interface InspectReport {
  pinRoot: string;
  /** null: the node's maps exist but the agent has not programmed it yet. */
  config: ConfigReport | null;
  peers: PeerReport[];
  strayRoutes: StrayRoute[];
  natMappings: NatMappingReport[];
  strayReverseMappings: StrayReverseMapping[];
  nodes: NodeRouteReport[];
  snat: SnatReport;
  drops: DropsReport;
}

/** Which report fields each section fills; `pinRoot` is always there. */
export const sectionFields: Record<InspectSection, readonly (keyof InspectReport)[]> = {
  config: ['config'],
  peers: ['peers', 'strayRoutes'],
  nat: ['natMappings', 'strayReverseMappings'],
  nodes: ['nodes'],
  snat: ['snat'],
  drops: ['drops'],
};

export const DEFAULT_SNAT_LIMIT = 100;

type Cidr = { addr: string; prefixLen: number };
const cidrText = (c: Cidr) => `${c.addr}/${c.prefixLen}`;
const ipv4Number = (a: string) => a.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
const ipv6Number = (a: string) => parseIp('address', a).value;
/** IPv4 before IPv6, each in address order (IPv4, the many NAT and transit entries, without a parse). */
const byAddress = (a: string, b: string) => {
  const [a6, b6] = [a.includes(':'), b.includes(':')];
  if (a6 !== b6) return a6 ? 1 : -1;
  if (!a6) return ipv4Number(a) - ipv4Number(b);
  const d = ipv6Number(a) - ipv6Number(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
};
const byPrefix = (a: Cidr, b: Cidr) => byAddress(a.addr, b.addr) || a.prefixLen - b.prefixLen;
const protoNames: Record<number, string> = { 1: 'icmp', 6: 'tcp', 17: 'udp' };

function openPinnedMaps(pinRoot: string, opened: BpfMap<unknown, unknown>[]): DatapathMaps {
  const open = <K, V>(name: string, key: Codec<K>, value: Codec<V>): BpfMap<K, V> => {
    const path = join(pinRoot, name);
    let map: BpfMap<K, V>;
    try {
      map = BpfMap.openPinned(path, key, value);
    } catch (err) {
      if (isBpfError(err, 'EPERM') || isBpfError(err, 'EACCES'))
        throw new StateError(`${path}: permission denied; reading pinned BPF maps needs root (CAP_BPF and CAP_SYS_ADMIN)`);
      // A size mismatch: the pins were made by a build with another layout of common.h.
      if (err instanceof TypeError)
        throw new StateError(`${path}: ${err.message}; the pins come from a different Strait build, inspect them with the matching strait`);
      throw err;
    }
    opened.push(map as BpfMap<unknown, unknown>);
    return map;
  };
  return openMapsWith(open);
}

/** Refuses, before opening anything, a pin root that is absent or is not a node's (all maps pinned). */
function checkPinRoot(pinRoot: string): void {
  const expected = Object.values(maps).map((m) => m.name);
  let present: Set<string>;
  try {
    if (!statSync(pinRoot).isDirectory())
      throw new StateError(
        `pin root ${pinRoot} is not a directory; pass --pin-root the directory the node's agent pins the datapath maps in`,
      );
    present = new Set(readdirSync(pinRoot));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new StateError(
        `pin root ${pinRoot} does not exist; pass --pin-root the directory the node's agent pins the datapath maps in (is the agent running on this node?)`,
      );
    throw err;
  }
  const missing = expected.filter((name) => !present.has(name));
  if (missing.length === expected.length)
    throw new StateError(
      `pin root ${pinRoot} holds no Strait maps (expected ${expected.join(', ')}); pass the pin root of a node whose datapath is loaded`,
    );
  if (missing.length > 0)
    throw new StateError(
      `pin root ${pinRoot} lacks ${missing.join(', ')}; the pins are incomplete or from another Strait version: restart the node's agent to load the datapath again`,
    );
}

/** Reads every pinned map under `pinRoot` into a report; `snatLimit` caps the transit flows listed. */
export function inspectNode(pinRoot: string, snatLimit = DEFAULT_SNAT_LIMIT): InspectReport {
  checkPinRoot(pinRoot);
  const opened: BpfMap<unknown, unknown>[] = [];
  try {
    const m = openPinnedMaps(pinRoot, opened);
    const config = readConfig(m);
    return {
      pinRoot,
      config,
      ...readPeers(m),
      ...readNatMappings(m),
      nodes: readNodes(m),
      snat: readSnat(m, config, snatLimit),
      drops: readDrops(m),
    };
  } finally {
    for (const map of opened) map.close();
  }
}

/** The counters of a node's datapath: per peer (those in strait_peers), and drops per reason. */
export interface DatapathCounters {
  peers: { peerId: number; counters: PeerCountersReport }[];
  drops: DropsReport;
}

/**
 * The counters alone, through the readers of inspectNode, from maps the caller holds open (the agent's
 * own, for its metrics at every scrape): the same figures `strait inspect` prints.
 */
export function readCounters(m: PeerMaps & Pick<DatapathMaps, 'drops'>): DatapathCounters {
  return { peers: readPeers(m).peers.map(({ peerId, counters }) => ({ peerId, counters })), drops: readDrops(m) };
}

function readConfig(m: Pick<DatapathMaps, 'config' | 'config6'>): ConfigReport | null {
  const c = m.config.lookup(CONFIG_KEY);
  if (c === undefined || !configProgrammed(c)) return null;
  const c6 = m.config6.lookup(CONFIG_KEY);
  return {
    role: c.flags & Flags.Gateway ? 'gateway' : 'worker',
    ...(isNetwork(c.podCidr, 4)
      ? { podCIDR: cidrText(c.podCidr), externalCIDR: cidrText(c.externalCidr), transitAddress: c.transitAddr }
      : {}),
    nodeAddress: tunnelEndText(c.nodeAddr, c.nodeAddr6),
    activeGatewayAddress: tunnelEndText(c.gatewayAddr, c.gatewayAddr6),
    overlayIfindex: c.overlayIfindex,
    overlayVni: c.overlayVni,
    overlayMac: c.overlayMac,
    tunnelMtu: c.tunnelMtu,
    // All zero: never written.
    ...(c6 && c6.podCidr.prefixLen && isNetwork(c6.podCidr, 6)
      ? { ipv6: { podCIDR: cidrText(c6.podCidr), externalCIDR: cidrText(c6.externalCidr), transitAddress: c6.transitAddr } }
      : {}),
  };
}

type PeerMaps = Pick<DatapathMaps, 'peers' | 'routes' | 'peerCounters' | 'peers6' | 'routes6' | 'peerCounters6'>;

const noTraffic = (): TrafficCounts => ({ txPackets: 0, txBytes: 0, rxPackets: 0, rxBytes: 0 });

function readPeers(m: PeerMaps): { peers: PeerReport[]; strayRoutes: StrayRoute[] } {
  const peers = new Map<number, PeerReport>();
  for (const [peerId, p] of m.peers.entries()) {
    peers.set(peerId, {
      peerId,
      remotePodCIDRs: [],
      remoteExternalCIDRs: [],
      ...(isNetwork(p.localNatPod, 4)
        ? { localNATPodCIDR: cidrText(p.localNatPod), localNATExternalCIDR: cidrText(p.localNatExternal) }
        : {}),
      endpoint: tunnelEndText(p.endpoint, p.endpoint6),
      vni: p.vni,
      srcMac: p.srcMac,
      dstMac: p.dstMac,
      counters: { ...noTraffic(), ipv4: noTraffic(), ipv6: noTraffic() },
    });
  }
  for (const [peerId, p] of m.peers6.entries()) {
    const peer = peers.get(peerId);
    if (peer) peer.ipv6 = { localNATPodCIDR: cidrText(p.localNatPod), localNATExternalCIDR: cidrText(p.localNatExternal) };
  }
  const strayRoutes: StrayRoute[] = [];
  // An IPv6 route needs its peer in both peer maps (the tunnel is in strait_peers).
  const routes = [
    ...[...m.routes.entries()].map(([prefix, route]) => ({ prefix, route, ipv6: false })),
    ...[...m.routes6.entries()].map(([prefix, route]) => ({ prefix, route, ipv6: true })),
  ].sort((a, b) => byPrefix(a.prefix, b.prefix));
  for (const { prefix, route, ipv6 } of routes) {
    const peer = peers.get(route.peerId);
    const stray = (problem: string) => strayRoutes.push({ prefix: cidrText(prefix), peerId: route.peerId, kind: route.kind, problem });
    if (peer === undefined) stray(`peer ${route.peerId} is not in strait_peers`);
    else if (ipv6 && !peer.ipv6) stray(`peer ${route.peerId} is not in strait_peers6`);
    else if (!ipv6 && peer.localNATPodCIDR === undefined)
      stray(`peer ${route.peerId} carries no IPv4 (its strait_peers entry has no IPv4 network)`);
    else if (route.kind === PrefixKind.Pod) peer.remotePodCIDRs.push(cidrText(prefix));
    else if (route.kind === PrefixKind.External) peer.remoteExternalCIDRs.push(cidrText(prefix));
    else stray(`unknown prefix kind ${route.kind}`);
  }
  const counterMaps: Record<CounterFamily, PeerMaps['peerCounters']> = { ipv4: m.peerCounters, ipv6: m.peerCounters6 };
  for (const family of counterFamilies) {
    for (const [peerId, perCpuCounters] of counterMaps[family].entries()) {
      const peer = peers.get(peerId);
      if (peer === undefined) continue; // the reconciler deletes a gone peer's counters right after it
      for (const c of perCpuCounters) {
        for (const field of countFields) {
          peer.counters[family][field] += Number(c[field]);
          peer.counters[field] += Number(c[field]);
        }
      }
    }
  }
  return { peers: [...peers.values()].sort((a, b) => a.peerId - b.peerId), strayRoutes };
}

function readNatMappings(m: Pick<DatapathMaps, 'natmap' | 'natmapRev' | 'natmap6' | 'natmap6Rev'>): {
  natMappings: NatMappingReport[];
  strayReverseMappings: StrayReverseMapping[];
} {
  // Both families: their addresses never collide, and their maps' names differ by the same suffix.
  const forward = new Map([...m.natmap.lookupBatch(), ...m.natmap6.lookupBatch()]);
  const reverse = new Map([...m.natmapRev.lookupBatch(), ...m.natmap6Rev.lookupBatch()]);
  const natMappings = [...forward]
    .sort(([a], [b]) => byAddress(a, b))
    .map(([externalAddress, endpointAddress]): NatMappingReport => {
      const back = reverse.get(endpointAddress);
      if (back === externalAddress) return { externalAddress, endpointAddress };
      const problem =
        back === undefined
          ? `strait_natmap_rev has no entry for ${endpointAddress}`
          : `strait_natmap_rev maps ${endpointAddress} to ${back}`;
      return { externalAddress, endpointAddress, problem };
    });
  const strayReverseMappings = [...reverse]
    .filter(([endpointAddress, externalAddress]) => forward.get(externalAddress) !== endpointAddress)
    .sort(([a], [b]) => byAddress(a, b))
    .map(([endpointAddress, externalAddress]) => {
      const there = forward.get(externalAddress);
      const problem =
        there === undefined ? `strait_natmap has no entry for ${externalAddress}` : `strait_natmap maps ${externalAddress} to ${there}`;
      return { endpointAddress, externalAddress, problem };
    });
  return { natMappings, strayReverseMappings };
}

function readNodes(m: Pick<DatapathMaps, 'nodes' | 'nodes6'>): NodeRouteReport[] {
  return [...m.nodes.entries(), ...m.nodes6.entries()]
    .sort(([a], [b]) => byPrefix(a, b))
    .map(([prefix, n]) => ({ prefix: cidrText(prefix), underlay: tunnelEndText(n.underlay, n.underlay6) }));
}

/** The transit flows of both families (strait_snat, strait_snat6: the same fields after the addresses). */
function readSnat(m: Pick<DatapathMaps, 'snat' | 'snat6'>, config: ConfigReport | null, limit: number): SnatReport {
  // A reply entry is keyed by its destination, its family's transit address (bpf/lib/snat.h).
  const transit = new Set([config?.transitAddress, config?.ipv6?.transitAddress].filter((a): a is string => a !== undefined));
  const direction = (daddr: string): SnatFlowReport['direction'] =>
    config === null ? 'unknown' : transit.has(daddr) ? 'reply' : 'forward';
  const entries = [...m.snat.lookupBatch(), ...m.snat6.lookupBatch()];
  const flows = entries.map(([k, v]): SnatFlowReport => ({
    direction: direction(k.daddr),
    proto: protoNames[k.proto] ?? String(k.proto),
    src: k.saddr,
    sport: k.sport,
    dst: k.daddr,
    dport: k.dport,
    to: { addr: v.addr, port: v.port },
  }));
  const order = (a: SnatFlowReport, b: SnatFlowReport) =>
    a.direction.localeCompare(b.direction) ||
    a.proto.localeCompare(b.proto) ||
    byAddress(a.src, b.src) ||
    a.sport - b.sport ||
    byAddress(a.dst, b.dst) ||
    a.dport - b.dport;
  return { total: flows.length, limit, flows: flows.sort(order).slice(0, limit) };
}

function readDrops(m: Pick<DatapathMaps, 'drops'>): DropsReport {
  const packets = (reason: number) => Number((m.drops.lookup(reason) ?? []).reduce((sum, n) => sum + n, 0n));
  return Object.fromEntries(Array.from({ length: DROP_REASON_COUNT }, (_, reason) => [DropReason[reason], packets(reason)])) as DropsReport;
}
