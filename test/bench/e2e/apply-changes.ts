/**
 * Time to apply 10,000 NatMapping changes to a hub holding 100,000, three ways, on the same specs
 * (reconcile.bench.ts's hubSpec: 5,000 removed, 5,000 added): Strait's batched map writes
 * (applyDesiredMaps), the incumbent's rule list rewritten with iptables-restore, and the kernel
 * fallback's nftables map, replaced with nft -j -f (its JSON document). The kernel parts run in
 * throwaway namespaces; no lab.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../../src/kernel/command';
import { withThrowawayNetns } from '../../../src/kernel/netns';
import { applyNat } from '../../../src/dataplane/kernel/nat-apply';
import { FILTER_TABLE, NAT_TABLE, natRuleset } from '../../../src/dataplane/kernel/nat-ruleset';
import { overlayDevice, tunnelDevice } from '../../../src/dataplane/kernel/identities';
import type { NftDocument } from '../../../src/kernel/nft-json';
import { hubSpec, mapApplySamples, timeMs } from '../reconcile.bench';
import { type BenchFigure, median } from '../result';
import { mappingRules, ruleListRestore } from './incumbent';

const rounds = 3;
const initial = () => hubSpec(100_000, 0);
const changed = () => hubSpec(100_000, 5_000);

function iptablesRestoreMs(): Promise<number> {
  // hubSpec's one peer is `p`.
  const before = ruleListRestore(mappingRules(initial(), 'p'), { jump: true });
  const after = ruleListRestore(mappingRules(changed(), 'p'), { jump: false });
  return withThrowawayNetns('strait-bench-ipt', (ns) => {
    const restore = (text: string) => run(['ip', 'netns', 'exec', ns, 'iptables-restore', '--noflush'], text);
    restore(before);
    return timeMs(() => restore(after));
  });
}

const devices = { peerInterface: tunnelDevice, overlay: overlayDevice };

/** The fallback's own apply (its two tables replaced in one transaction, then the listing it keeps to compare with). */
function fallbackApplyMs(): Promise<{ nft: number; applyNat: number }> {
  const before = natRuleset(initial(), devices);
  const after = natRuleset(changed(), devices);
  return withThrowawayNetns('strait-bench-nft', (ns) => {
    applyNat(before, ns);
    const applyNatMs = timeMs(() => applyNat(after, ns));
    // The same replacement without the listing: nft -j -f alone.
    const drop = [NAT_TABLE, FILTER_TABLE].flatMap((table) => [{ add: { table } }, { delete: { table } }]);
    // From a file: nft's JSON parser opens `-` as /dev/stdin, which cannot be opened on the socket a
    // Node.js child's stdin is. Each document is written before the clock starts.
    const dir = mkdtempSync(join(tmpdir(), 'strait-bench-nft-'));
    try {
      const replace = (ruleset: NftDocument) => {
        const path = join(dir, 'ruleset.json');
        writeFileSync(path, JSON.stringify({ nftables: [...drop, ...ruleset.nftables] }));
        return () => run(['ip', 'netns', 'exec', ns, 'nft', '-j', '-f', path]);
      };
      replace(before)();
      const replaceAfter = replace(after);
      return { nft: timeMs(replaceAfter), applyNat: applyNatMs };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

export async function applyChangeFigures(): Promise<BenchFigure[]> {
  const maps = await mapApplySamples(rounds);
  const iptables: number[] = [];
  const nft: number[] = [];
  const fallback: number[] = [];
  for (let i = 0; i < rounds; i++) {
    iptables.push(await iptablesRestoreMs());
    const f = await fallbackApplyMs();
    nft.push(f.nft);
    fallback.push(f.applyNat);
  }
  const ms = (samples: number[]) => Math.round(median(samples));
  const name = (how: string) => `apply 10,000 NatMapping changes at 100,000: ${how}`;
  const note = `5,000 removed + 5,000 added, median of ${rounds}`;
  return [
    {
      suite: 'e2e',
      name: name("Strait's eBPF maps (applyDesiredMaps, batched)"),
      value: ms(maps.change),
      unit: 'ms',
      note: `${note}; includes reading and diffing 100,000`,
    },
    { suite: 'e2e', name: name('rule list, iptables-restore of the chain (iptables-nft)'), value: ms(iptables), unit: 'ms', note },
    { suite: 'e2e', name: name("kernel fallback's nftables map, nft -f of its tables"), value: ms(nft), unit: 'ms', note },
    { suite: 'e2e', name: name("kernel fallback's applyNat (nft -f and the listing it compares)"), value: ms(fallback), unit: 'ms', note },
  ];
}
