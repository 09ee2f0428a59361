/**
 * What `lab test` checks, derived from the topology and from what the controllers decided (node specs,
 * reflections, imports): every peered pair both ways from every pod to every pod, the path MTU of each
 * peering, every pair of pods on different nodes of a cluster, the hub path, that clusters that are not
 * peered cannot reach each other, and every imported service from every pod of its importer at each of
 * its ClusterSetIPs, each ready endpoint answering. Pure: the runner executes the list.
 */
import { type Cidr, type Ip, containsIp, formatIp, parseCidr, parseIp, translateIp } from '../../src/net/cidr';
import { peerNetworks } from '../../src/nodespec/families';
import type { Reflection } from '../../src/api/controller-status';
import { networkFamily } from '../../src/api/secondary-family';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import type { EchoMode } from './echo-client';
import type { LabPod, LabTopology } from './topology';

/**
 * What a check sends: a ping; a TCP or UDP echo; a fragmented UDP echo (`frag`); a datagram to a closed
 * port whose ICMP error must come back translated (`unreach`); a bulk TCP echo in full-size segments
 * (`pmtu-tcp`, which must leave no fragment on the wire); a ping of the pod's MTU with DF set, which
 * must be refused with an ICMP "fragmentation needed" naming a smaller MTU (`pmtu-icmp`). See
 * echo-client.ts and run-checks.ts.
 */
export type Probe = 'icmp' | 'pmtu-icmp' | EchoMode;

export interface TrafficCheck {
  /** Source pod. */
  from: string;
  /** Target pod (or the reflected pod for the hub path). */
  to: string;
  /** The address dialled, in the source cluster's view. */
  address: string;
  probe: Probe;
  expect: 'reach' | 'blocked';
  kind: 'peered' | 'intra' | 'hub' | 'not-peered' | 'service';
  /** `whoami` (a service): the pods whose endpoints must all answer, and no other. */
  endpoints?: string[];
  /** `whoami` (a service): its clusterset name, which the pod's resolver must turn into `address` first. */
  name?: string;
  /** The pods' MTU, for the probes whose packets are that large (`pmtu-tcp`, `pmtu-icmp`). */
  mtu?: number;
  /**
   * `frag` over tunnels that answer a datagram too large for them rather than fragment it (an IPv4 one
   * over an IPv6 underlay: docs/datapath.md, "MTU"): the first is lost by design, and the probe sends
   * again as the path MTU is learnt each way, as it does for any IPv6 datagram (echo-client.ts).
   */
  learnsPathMtu?: true;
}

export interface ClusterView {
  /** Any node spec of the cluster (peers and their prefixes are the same on every node). */
  spec: NodeDataplaneSpec;
  reflections: Reflection[];
  /** The services it imports. */
  imports: ServiceImportDocument[];
}

/** Every probe between peered pods, and between pods of different nodes of a cluster. */
const peeredProbes: Probe[] = ['icmp', 'tcp', 'udp', 'frag', 'unreach'];
/** Once per peering each way: what a tunnel's headers do to packets as large as the pods' MTU. */
const pathMtuProbes: Probe[] = ['pmtu-tcp', 'pmtu-icmp'];
/**
 * Through a hub, all but fragments: the eBPF hub drops later fragments of transit flows, which carry no
 * ports to map (docs/datapath.md).
 */
const hubProbes: Probe[] = ['icmp', 'tcp', 'udp', 'unreach'];

/** A cluster's own networks of each family it has, the primary's first. */
function ownNetworks(topology: LabTopology, id: string): { podCIDR: Cidr; externalCIDR: Cidr }[] {
  const c = topology.clusters.find((x) => x.id === id)!;
  return [c, ...(c.secondary ? [c.secondary] : [])].map((n) => ({
    podCIDR: parseCidr('podCIDR', n.podCIDR),
    externalCIDR: parseCidr('externalCIDR', n.externalCIDR),
  }));
}

/** Whether the lab's nodes and gateways tunnel over IPv6 (one family per lab: topology.ts). */
const isIpv6Underlay = (topology: LabTopology) => networkFamily(topology.public) === 6;

/** A pod's addresses, of each family it has (every pod of a dual-stack cluster has both). */
const podAddresses = (pod: LabPod): Ip[] => [pod.ip, ...(pod.secondaryIp ? [pod.secondaryIp] : [])].map((a) => parseIp('podIP', a));

/**
 * A pod's address (of either family) as cluster `viewer` sees it: its own PodCIDR's host bits in viewer's
 * remotePodCIDR of that family; undefined when the peering does not carry that family.
 */
function seenFrom(topology: LabTopology, views: Record<string, ClusterView>, viewer: string, owner: string, podIP: string) {
  const peer = views[viewer]!.spec.peers.find((p) => p.clusterId === owner);
  if (!peer) throw new Error(`${viewer} has no peering with ${owner}`);
  const ip = parseIp('podIP', podIP);
  const networks = peerNetworks(peer, ip.family);
  const own = ownNetworks(topology, owner).find((n) => n.podCIDR.family === ip.family);
  return networks && own ? formatIp(translateIp(ip, own.podCIDR, networks.remotePodCIDR)) : undefined;
}

/** `seenFrom`, for a family the peering carries. */
export function addressSeenFrom(
  topology: LabTopology,
  views: Record<string, ClusterView>,
  viewer: string,
  owner: string,
  podIP: string,
): string {
  const seen = seenFrom(topology, views, viewer, owner, podIP);
  if (seen === undefined) throw new Error(`the peering of ${viewer} with ${owner} does not carry ${podIP}'s family`);
  return seen;
}

/** Every network that means something in cluster x: its own and its peers' as x sees them, in every family. */
function knownNetworks(topology: LabTopology, views: Record<string, ClusterView>, x: string): Cidr[] {
  return [
    ...ownNetworks(topology, x).flatMap((n) => [n.podCIDR, n.externalCIDR]),
    ...views[x]!.spec.peers.flatMap((p) =>
      [p, ...(p.secondary ? [p.secondary] : [])].flatMap((n) => [n.remotePodCIDR, n.remoteExternalCIDR]),
    ),
  ];
}

/**
 * The pod a path MTU probe starts or ends at: one on a node other than the cluster's gateway, when there
 * is one, so that the path crosses the cluster's underlay too (worker, gateway, peer gateway, worker).
 */
function pathMtuPod(topology: LabTopology, views: Record<string, ClusterView>, cluster: string) {
  const nodes = topology.clusters.find((c) => c.id === cluster)!.nodes;
  const pods = [...nodes.filter((n) => n.name !== views[cluster]!.spec.activeGateway.name), ...nodes].flatMap((n) => n.pods);
  return pods[0];
}

export function planChecks(topology: LabTopology, views: Record<string, ClusterView>): TrafficCheck[] {
  const cluster = (id: string) => topology.clusters.find((c) => c.id === id)!;
  const pods = (id: string) => cluster(id).nodes.flatMap((n) => n.pods);
  const checks: TrafficCheck[] = [];
  // Every check of a pair of pods runs in each family both have, and the peering carries (docs/dual-stack.md).
  for (const [a, b] of topology.peerings) {
    for (const [src, dst] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const s of pods(src))
        for (const t of pods(dst))
          for (const address of seenAddresses(topology, views, src, dst, t))
            for (const probe of peeredProbes)
              checks.push({
                from: s.name,
                to: t.name,
                address,
                probe,
                expect: 'reach',
                kind: 'peered',
                ...(probe === 'frag' && isIpv6Underlay(topology) ? { learnsPathMtu: true as const } : {}),
              });
      const s = pathMtuPod(topology, views, src);
      const t = pathMtuPod(topology, views, dst);
      if (!s || !t) continue;
      for (const address of seenAddresses(topology, views, src, dst, t))
        for (const probe of pathMtuProbes)
          checks.push({ from: s.name, to: t.name, address, probe, expect: 'reach', kind: 'peered', mtu: topology.mtu });
    }
  }
  // Inside a cluster, by the pod's own address: the routes of the CNI (network.ts), no Strait on the path.
  for (const c of topology.clusters) {
    for (const sn of c.nodes)
      for (const tn of c.nodes) {
        if (sn === tn) continue;
        for (const s of sn.pods)
          for (const t of tn.pods)
            for (const address of podAddresses(t).map(formatIp))
              for (const probe of peeredProbes) checks.push({ from: s.name, to: t.name, address, probe, expect: 'reach', kind: 'intra' });
      }
  }
  for (const r of topology.reflections) {
    const target = topology.clusters.flatMap((c) => c.nodes.flatMap((n) => n.pods)).find((p) => p.name === r.pod)!;
    const reflected = views[r.hub]!.reflections.find((x) => x.to === r.to && x.podIP === target.ip);
    if (!reflected) throw new Error(`${r.hub} has not reflected ${r.pod} to ${r.to}`);
    for (const s of pods(r.to))
      for (const probe of hubProbes)
        checks.push({ from: s.name, to: r.pod, address: reflected.address, probe, expect: 'reach', kind: 'hub' });
  }
  checks.push(...serviceChecks(topology, views));
  const ids = topology.clusters.map((c) => c.id);
  const peered = (x: string, y: string) => topology.peerings.some(([p, q]) => (p === x && q === y) || (p === y && q === x));
  for (const x of ids)
    for (const y of ids) {
      if (x === y || peered(x, y)) continue;
      // A pod of y dialled by its own address, where that address means nothing in x (with overlapping
      // clusters it may be a pod of x or of one of x's peers: that pair is skipped), in each family.
      const known = knownNetworks(topology, views, x);
      const s = pods(x)[0];
      for (const family of [4, 6] as const) {
        const t = pods(y).find((p) => podAddresses(p).some((ip) => ip.family === family && !known.some((c) => containsIp(c, ip))));
        const address = t && podAddresses(t).find((ip) => ip.family === family);
        if (s && t && address)
          checks.push({ from: s.name, to: t.name, address: formatIp(address), probe: 'udp', expect: 'blocked', kind: 'not-peered' });
      }
    }
  return checks;
}

/** Pod `t` of cluster `dst` as `src` dials it: an address per family the peering carries and `t` has. */
const seenAddresses = (topology: LabTopology, views: Record<string, ClusterView>, src: string, dst: string, t: LabPod): string[] =>
  podAddresses(t).flatMap((ip) => seenFrom(topology, views, src, dst, formatIp(ip)) ?? []);

/**
 * Each service a cluster imports, from each of its pods, at each of its ClusterSetIPs: every endpoint of
 * that family whose pod is of an exporting cluster the importer reaches answers (connections spread over
 * them), an unready one never. The endpoints are the import's, so the check follows what the controllers
 * decided; that they are the topology's pods is the import's own check (lab.ts waits for every exporter).
 */
function serviceChecks(topology: LabTopology, views: Record<string, ClusterView>): TrafficCheck[] {
  const checks: TrafficCheck[] = [];
  /** The pod of `exporter` at `address` in `importer`'s view. */
  const podOf = (importer: string, exporter: string, address: string) =>
    topology.clusters
      .find((x) => x.id === exporter)
      ?.nodes.flatMap((n) => n.pods)
      .find((p) =>
        podAddresses(p).some(
          (ip) => (exporter === importer ? formatIp(ip) : seenFrom(topology, views, importer, exporter, formatIp(ip))) === address,
        ),
      );
  for (const c of topology.clusters)
    for (const service of views[c.id]!.imports.filter((i) => i.type === 'ClusterSetIP'))
      for (const address of service.ips) {
        const v6 = parseIp('ip', address).family === 6;
        const endpoints = service.endpointSlices
          .filter((s) => (s.addressType === 'IPv6') === v6)
          .flatMap((s) => s.endpoints.filter((e) => e.ready).map((e) => podOf(c.id, s.cluster, e.address)?.name ?? e.address))
          .sort();
        for (const s of c.nodes.flatMap((n) => n.pods))
          checks.push({
            from: s.name,
            to: `${service.namespace}/${service.name}`,
            address,
            probe: 'whoami',
            expect: 'reach',
            kind: 'service',
            endpoints,
            name: `${service.name}.${service.namespace}.svc.clusterset.local`,
          });
      }
  return checks;
}
