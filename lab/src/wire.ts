/**
 * What the lab's wires carry: nftables counters on the public bridge (`bridge strait_lab_wire` in the
 * public namespace) and on each cluster's underlay bridge (the same table in `sl-<cluster>-sw`).
 *
 * On the public bridge, per peering: ESP packets and every other packet between the two clusters'
 * public addresses, of the public network's family (an encrypted peering must show ESP and nothing in the
 * clear; a VXLAN one, the opposite), and fragments between them. On each underlay: packets and fragments
 * of either family. The fragment counters are read around the `pmtu-tcp` probes, which must leave no
 * fragment anywhere: a tunnel that wraps a full-size packet in its headers and lets the kernel fragment
 * the result shows there (`isFragment`).
 */
import { networkFamily } from '../../src/api/secondary-family';
import { nft, run } from '../../src/kernel/command';
import { publicNetns, switchNetns } from './names';
import { type LabTopology, isEncrypted } from './topology';

const table = 'strait_lab_wire';

/** A fragment of each family: an IPv4 one has an offset or "more fragments"; an IPv6 one a fragment header. */
const isFragment = { ip: 'ip frag-off & 0x3fff != 0', ip6: 'meta protocol ip6 exthdr frag exists' } as const;

export interface WireResult {
  peering: [string, string];
  encrypted: boolean;
  esp: number;
  clear: number;
  ok: boolean;
}

/** The family of the public network, and so of every gateway's public address (one per lab: topology.ts). */
const publicFamily = (topology: LabTopology) => (networkFamily(topology.public) === 6 ? 'ip6' : 'ip');

const publicAddresses = (topology: LabTopology, cluster: string) =>
  topology.clusters
    .find((c) => c.id === cluster)!
    .nodes.map((n) => n.publicAddress)
    .join(', ');

/** Counter names by cluster pair (cluster ids have no '_'), so a peering removed later keeps its counters. */
const counterName = (kind: 'esp' | 'clear' | 'frag', [a, b]: [string, string]) => `${kind}_${a}_${b}`;

/** The public bridge's counters (pure). */
function wireRuleset(topology: LabTopology): string {
  const lines = [`table bridge ${table} {`];
  for (const p of topology.peerings)
    lines.push(
      `\tcounter ${counterName('esp', p)} {}`,
      `\tcounter ${counterName('clear', p)} {}`,
      `\tcounter ${counterName('frag', p)} {}`,
    );
  lines.push('\tchain forward {', '\t\ttype filter hook forward priority 0; policy accept;');
  const family = publicFamily(topology);
  for (const [a, b] of topology.peerings) {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const between = `${family} saddr { ${publicAddresses(topology, from)} } ${family} daddr { ${publicAddresses(topology, to)} }`;
      lines.push(
        `\t\t${between} meta l4proto esp counter name ${counterName('esp', [a, b])}`,
        `\t\t${between} meta l4proto != esp counter name ${counterName('clear', [a, b])}`,
        `\t\t${between} ${isFragment[family]} counter name ${counterName('frag', [a, b])}`,
      );
    }
  }
  lines.push('\t}', '}');
  return `${lines.join('\n')}\n`;
}

/** An underlay bridge's counters (pure): every IP packet of either family, and the fragments among them. */
function underlayRuleset(): string {
  return [
    `table bridge ${table} {`,
    '\tcounter underlay_packets {}',
    '\tcounter underlay_frag {}',
    '\tchain forward {',
    '\t\ttype filter hook forward priority 0; policy accept;',
    '\t\tmeta protocol { ip, ip6 } counter name underlay_packets',
    `\t\t${isFragment.ip} counter name underlay_frag`,
    `\t\t${isFragment.ip6} counter name underlay_frag`,
    '\t}',
    '}',
    '',
  ].join('\n');
}

/** Installs the counters, replacing any from an earlier lab. */
export function installWireCounters(topology: LabTopology): void {
  const replace = (ruleset: string, netns: string) => nft(`table bridge ${table}\ndelete table bridge ${table}\n${ruleset}`, netns);
  replace(wireRuleset(topology), publicNetns);
  for (const c of topology.clusters) replace(underlayRuleset(), switchNetns(c.id));
}

interface CounterJson {
  counter?: { name: string; packets: number };
}

function counters(netns: string): Map<string, number> {
  const listing = JSON.parse(run(['ip', 'netns', 'exec', netns, 'nft', '-j', 'list', 'counters', 'table', 'bridge', table])) as {
    nftables: CounterJson[];
  };
  return new Map(listing.nftables.flatMap((e) => (e.counter ? [[e.counter.name, e.counter.packets] as const] : [])));
}

export function readWire(topology: LabTopology): WireResult[] {
  const packets = counters(publicNetns);
  return topology.peerings.map((peering) => {
    const encrypted = isEncrypted(topology, peering[0], peering[1]);
    const esp = packets.get(counterName('esp', peering)) ?? 0;
    const clear = packets.get(counterName('clear', peering)) ?? 0;
    return { peering, encrypted, esp, clear, ok: encrypted ? esp > 0 && clear === 0 : clear > 0 && esp === 0 };
  });
}

/** One line per peering for the lab's summary. */
export function wireLine(r: WireResult): string {
  const what = r.encrypted ? 'encrypted: ESP only' : 'VXLAN: no ESP';
  return `${r.ok ? 'ok  ' : 'FAIL'} wire ${r.peering[0]} <-> ${r.peering[1]} (${what}): ${r.esp} ESP packets, ${r.clear} others`;
}

/** Packets and fragments each wire has carried so far: a peering's public path, or a cluster's underlay. */
export interface WireCount {
  wire: string;
  packets: number;
  fragments: number;
}

export function readFragments(topology: LabTopology): WireCount[] {
  const pub = counters(publicNetns);
  return [
    ...topology.peerings.map((p) => ({
      wire: `${p[0]} <-> ${p[1]}`,
      packets: (pub.get(counterName('esp', p)) ?? 0) + (pub.get(counterName('clear', p)) ?? 0),
      fragments: pub.get(counterName('frag', p)) ?? 0,
    })),
    ...topology.clusters.map((c) => {
      const underlay = counters(switchNetns(c.id));
      return { wire: `underlay ${c.id}`, packets: underlay.get('underlay_packets') ?? 0, fragments: underlay.get('underlay_frag') ?? 0 };
    }),
  ];
}

export interface FragmentResult {
  /** What each wire carried between the two readings. */
  during: WireCount[];
  ok: boolean;
}

/**
 * The verdict on the wires between two readings around the `pmtu-tcp` probes (pure): no fragment on
 * any of them, and every peering carried packets (else the probes did not cross it, and its zero says
 * nothing).
 */
export function fragmentResult(before: WireCount[], after: WireCount[]): FragmentResult {
  const during = after.map((a) => {
    const b = before.find((x) => x.wire === a.wire) ?? { packets: 0, fragments: 0 };
    return { wire: a.wire, packets: a.packets - b.packets, fragments: a.fragments - b.fragments };
  });
  const ok = during.every((d) => d.fragments === 0 && (d.wire.startsWith('underlay ') || d.packets > 0));
  return { during, ok };
}

/** The lab's summary line for the fragment counters. */
export function fragmentLine(r: FragmentResult): string {
  const wires = r.during.map((d) => `${d.wire} ${d.fragments} of ${d.packets}`).join(', ');
  return `${r.ok ? 'ok  ' : 'FAIL'} no fragments on the wire during pmtu-tcp (fragments of packets): ${wires}`;
}
