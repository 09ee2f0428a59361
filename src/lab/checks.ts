/**
 * What `lab test` checks, derived from the topology and from what the controllers decided (node specs,
 * reflections): every peered pair both ways from every pod to every pod, the hub path, and that clusters
 * that are not peered cannot reach each other. Pure: the runner executes the list.
 */
import { type Cidr, containsIp, formatIp, parseCidr, parseIp, translateIp } from '../net/cidr';
import type { Reflection } from '../api/controller-status';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import type { EchoMode } from './echo-client';
import type { LabTopology } from './topology';

/**
 * What a check sends: a ping; a TCP or UDP echo; a fragmented UDP echo (`frag`); a datagram to a closed
 * port whose ICMP error must come back translated (`unreach`). See echo-client.ts.
 */
export type Probe = 'icmp' | EchoMode;

export interface TrafficCheck {
  /** Source pod. */
  from: string;
  /** Target pod (or the reflected pod for the hub path). */
  to: string;
  /** The address dialled, in the source cluster's view. */
  address: string;
  probe: Probe;
  expect: 'reach' | 'blocked';
  kind: 'peered' | 'hub' | 'not-peered';
}

export interface ClusterView {
  /** Any node spec of the cluster (peers and their prefixes are the same on every node). */
  spec: NodeDataplaneSpec;
  reflections: Reflection[];
}

/** Every probe between peered pods. */
const peeredProbes: Probe[] = ['icmp', 'tcp', 'udp', 'frag', 'unreach'];
/**
 * Through a hub, all but fragments: the eBPF hub drops later fragments of transit flows, which carry no
 * ports to map (docs/datapath.md).
 */
const hubProbes: Probe[] = ['icmp', 'tcp', 'udp', 'unreach'];

/** A pod's address as cluster `viewer` sees it: its own PodCIDR's host bits in viewer's remotePodCIDR. */
export function addressSeenFrom(topology: LabTopology, views: Record<string, ClusterView>, viewer: string, owner: string, podIP: string): string {
  const peer = views[viewer]!.spec.peers.find((p) => p.clusterId === owner);
  if (!peer) throw new Error(`${viewer} has no peering with ${owner}`);
  const ownPodCIDR = parseCidr('podCIDR', topology.clusters.find((c) => c.id === owner)!.podCIDR);
  return formatIp(translateIp(parseIp('podIP', podIP), ownPodCIDR, peer.remotePodCIDR));
}

/** Every network that means something in cluster x: its own and its peers' as x sees them. */
function knownNetworks(topology: LabTopology, views: Record<string, ClusterView>, x: string): Cidr[] {
  const own = topology.clusters.find((c) => c.id === x)!;
  return [parseCidr('podCIDR', own.podCIDR), parseCidr('externalCIDR', own.externalCIDR), ...views[x]!.spec.peers.flatMap((p) => [p.remotePodCIDR, p.remoteExternalCIDR])];
}

export function planChecks(topology: LabTopology, views: Record<string, ClusterView>): TrafficCheck[] {
  const pods = (cluster: string) => topology.clusters.find((c) => c.id === cluster)!.nodes.flatMap((n) => n.pods);
  const checks: TrafficCheck[] = [];
  for (const [a, b] of topology.peerings) {
    for (const [src, dst] of [[a, b], [b, a]] as const) {
      for (const s of pods(src)) for (const t of pods(dst)) {
        const address = addressSeenFrom(topology, views, src, dst, t.ip);
        for (const probe of peeredProbes) checks.push({ from: s.name, to: t.name, address, probe, expect: 'reach', kind: 'peered' });
      }
    }
  }
  for (const r of topology.reflections) {
    const target = topology.clusters.flatMap((c) => c.nodes.flatMap((n) => n.pods)).find((p) => p.name === r.pod)!;
    const reflected = views[r.hub]!.reflections.find((x) => x.to === r.to && x.podIP === target.ip);
    if (!reflected) throw new Error(`${r.hub} has not reflected ${r.pod} to ${r.to}`);
    for (const s of pods(r.to)) for (const probe of hubProbes) checks.push({ from: s.name, to: r.pod, address: reflected.address, probe, expect: 'reach', kind: 'hub' });
  }
  const ids = topology.clusters.map((c) => c.id);
  const peered = (x: string, y: string) => topology.peerings.some(([p, q]) => (p === x && q === y) || (p === y && q === x));
  for (const x of ids) for (const y of ids) {
    if (x === y || peered(x, y)) continue;
    // A pod of y dialled by its own address, where that address means nothing in x (with overlapping
    // clusters it may be a pod of x or of one of x's peers: that pair is skipped).
    const known = knownNetworks(topology, views, x);
    const s = pods(x)[0];
    const t = pods(y).find((p) => !known.some((c) => containsIp(c, parseIp('podIP', p.ip))));
    if (s && t) checks.push({ from: s.name, to: t.name, address: t.ip, probe: 'udp', expect: 'blocked', kind: 'not-peered' });
  }
  return checks;
}
