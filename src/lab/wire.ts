/**
 * What the lab's public network carries between the clusters of each peering: nftables counters on
 * the public bridge (`bridge strait_lab_wire` in the public namespace), one pair per peering, counting
 * ESP packets and every other IPv4 packet between the two clusters' public addresses. An encrypted
 * peering must show ESP and nothing in the clear; a VXLAN one, the opposite.
 */
import { nft, run } from '../kernel/command';
import { publicNetns } from './names';
import { type LabTopology, isEncrypted } from './topology';

const table = 'strait_lab_wire';

export interface WireResult {
  peering: [string, string];
  encrypted: boolean;
  esp: number;
  clear: number;
  ok: boolean;
}

const publicAddresses = (topology: LabTopology, cluster: string) =>
  topology.clusters.find((c) => c.id === cluster)!.nodes.map((n) => n.publicAddress).join(', ');

/** Counter names by cluster pair (cluster ids have no '_'), so a peering removed later keeps its counters. */
const counterName = (kind: 'esp' | 'clear', [a, b]: [string, string]) => `${kind}_${a}_${b}`;

/** The counters' ruleset (pure). */
export function wireRuleset(topology: LabTopology): string {
  const lines = [`table bridge ${table} {`];
  for (const p of topology.peerings) lines.push(`\tcounter ${counterName('esp', p)} {}`, `\tcounter ${counterName('clear', p)} {}`);
  lines.push('\tchain forward {', '\t\ttype filter hook forward priority 0; policy accept;');
  for (const [a, b] of topology.peerings) {
    for (const [from, to] of [[a, b], [b, a]] as const) {
      const between = `ip saddr { ${publicAddresses(topology, from)} } ip daddr { ${publicAddresses(topology, to)} }`;
      lines.push(`\t\t${between} meta l4proto esp counter name ${counterName('esp', [a, b])}`, `\t\t${between} meta l4proto != esp counter name ${counterName('clear', [a, b])}`);
    }
  }
  lines.push('\t}', '}');
  return `${lines.join('\n')}\n`;
}

/** Installs the counters, replacing any from an earlier lab. */
export function installWireCounters(topology: LabTopology): void {
  nft(`table bridge ${table}\ndelete table bridge ${table}\n${wireRuleset(topology)}`, publicNetns);
}

interface CounterJson {
  counter?: { name: string; packets: number };
}

export function readWire(topology: LabTopology): WireResult[] {
  const listing = JSON.parse(run(['ip', 'netns', 'exec', publicNetns, 'nft', '-j', 'list', 'counters', 'table', 'bridge', table])) as { nftables: CounterJson[] };
  const packets = new Map(listing.nftables.flatMap((e) => (e.counter ? [[e.counter.name, e.counter.packets] as const] : [])));
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
