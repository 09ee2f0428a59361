import assert from 'node:assert/strict';
import { run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { requireRoot, uniqueName } from '../support/kernel';

describe('run (external tools)', function () {
  requireRoot(this);
  const ns = uniqueName('strait-cmd');
  before(() => createNetns(ns));
  after(() => deleteNetns(ns));

  it('returns an output of several MiB whole: the JSON listing of a map of 100,000 elements, as the kernel fallback reads it', () => {
    const elements = Array.from({ length: 100_000 }, (_, i) => `11.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255} : 13.0.0.1`);
    run(
      ['ip', 'netns', 'exec', ns, 'nft', '-f', '-'],
      `table ip t {\n\tmap m {\n\t\ttype ipv4_addr : ipv4_addr\n\t\telements = { ${elements.join(', ')} }\n\t}\n}\n`,
    );
    const listing = run(['ip', 'netns', 'exec', ns, 'nft', '-j', 'list', 'ruleset']);
    assert.ok(listing.length > 2 ** 20, `the listing is ${listing.length} characters`);
    const map = (JSON.parse(listing) as { nftables: { map?: { elem: unknown[] } }[] }).nftables.find((e) => e.map)!.map!;
    assert.equal(map.elem.length, 100_000);
  });
});
