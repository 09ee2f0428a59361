/**
 * nftables through libnftables in-process, in a throwaway namespace: nft's JSON document applies there
 * (and only there) as one transaction, the listing is nft's JSON, and a refusal names errno and nft's
 * message.
 */
import assert from 'node:assert/strict';
import { NftablesError } from '../../src/native/error';
import { run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import type { NftCommand, NftDocument } from '../../src/kernel/nft-json';
import { listRuleset, runNft } from '../../src/kernel/nftables';
import { requireRoot, uniqueName } from '../support/kernel';

describe('nftables through libnftables (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-nft');
    createNetns(ns);
  });
  afterEach(() => deleteNetns(ns));

  const table = 'strait_test_nft';
  const tablesIn = (listing: { nftables: Record<string, unknown>[] }) =>
    listing.nftables.flatMap((item) =>
      'table' in item ? [`${(item.table as { family: string }).family} ${(item.table as { name: string }).name}`] : [],
    );

  /** `inet <table>` with map m holding 10.0.0.1 : 10.1.0.1. */
  const tableWithMap: NftCommand[] = [
    { add: { table: { family: 'inet', name: table } } },
    { add: { map: { family: 'inet', table, name: 'm', type: 'ipv4_addr', map: 'ipv4_addr' } } },
    { add: { element: { family: 'inet', table, name: 'm', elem: [['10.0.0.1', '10.1.0.1']] } } },
  ];

  it('applies a document in the namespace only, and lists it as nft -j does', () => {
    runNft({ nftables: tableWithMap }, ns);
    const listing = listRuleset(ns);
    assert.deepEqual(tablesIn(listing), [`inet ${table}`]);
    assert.deepEqual(
      listing.nftables.filter((item) => 'map' in item).map((item) => ({ ...(item.map as object), handle: 0 })),
      [{ family: 'inet', name: 'm', table, type: 'ipv4_addr', handle: 0, map: 'ipv4_addr', elem: [['10.0.0.1', '10.1.0.1']] }],
    );
    assert.equal(
      run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'tables']).trim(),
      `table inet ${table}`,
      'nft sees what the library wrote',
    );
    assert.ok(!tablesIn(listRuleset()).includes(`inet ${table}`), 'not in the current namespace');
  });

  it('runs a document as one transaction: a command the kernel refuses (EEXIST) leaves nothing of it', () => {
    const conflicting: NftCommand = { add: { element: { family: 'inet', table, name: 'm', elem: [['10.0.0.1', '10.1.0.2']] } } };
    assert.throws(
      () => runNft({ nftables: [...tableWithMap, conflicting] }, ns),
      (err: unknown) =>
        err instanceof NftablesError &&
        err.code === 'EEXIST' &&
        err.errno === 17 &&
        err.operation === 'nft' &&
        err.message.includes('Error: Could not process rule: File exists'),
    );
    assert.deepEqual(tablesIn(listRuleset(ns)), [], 'the commands before it were not applied either');
  });

  it('a missing object is ENOENT', () => {
    assert.throws(
      () => runNft({ nftables: [{ delete: { table: { family: 'inet', name: 'strait_test_missing' } } }] }, ns),
      (err: unknown) =>
        err instanceof NftablesError &&
        err.code === 'ENOENT' &&
        err.errno === 2 &&
        err.message.includes('Error: Could not process rule: No such file or directory'),
    );
  });

  it("a document nft's parser refuses is EINVAL with nft's message, naming the command", () => {
    // A table without a name: the types forbid it, nft's parser is what refuses it here.
    const nameless = JSON.parse('{"nftables":[{"add":{"table":{"family":"inet"}}}]}') as NftDocument;
    assert.throws(
      () => runNft(nameless, ns),
      (err: unknown) =>
        err instanceof NftablesError &&
        err.code === 'EINVAL' &&
        err.message.includes('Object item not found: name') &&
        err.message.includes('Parsing command array at index 0 failed'),
    );
  });
});
