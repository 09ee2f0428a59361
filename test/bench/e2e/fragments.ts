/**
 * IPv4 fragments on the lab's wires: a counter on every bridge (each cluster's switch, the public
 * network) of the frames that carry a fragment (offset or more-fragments set). A stream whose
 * encapsulated packets outgrow a link's MTU shows here, whichever node fragmented them.
 */
import { nft, run } from '../../../src/kernel/command';
import { publicNetns, switchNetns } from '../../../src/lab/names';
import type { LabTopology } from '../../../src/lab/topology';

const table = 'strait_bench_fragments';

const bridges = (topology: LabTopology) => [publicNetns, ...topology.clusters.map((c) => switchNetns(c.id))];

export function installFragmentCounters(topology: LabTopology): void {
  for (const ns of bridges(topology)) {
    nft(`table bridge ${table} {\n\tcounter fragments {}\n\tchain forward {\n\t\ttype filter hook forward priority 0; policy accept;\n\t\tether type ip ip frag-off & 0x3fff != 0 counter name fragments\n\t}\n}\n`, ns);
  }
}

/** Fragments counted so far on all bridges together. */
export function fragmentsSeen(topology: LabTopology): number {
  let sum = 0;
  for (const ns of bridges(topology)) {
    const listing = JSON.parse(run(['ip', 'netns', 'exec', ns, 'nft', '-j', 'list', 'counter', 'bridge', table, 'fragments'])) as { nftables: { counter?: { packets: number } }[] };
    sum += listing.nftables.find((e) => e.counter)?.counter?.packets ?? 0;
  }
  return sum;
}
