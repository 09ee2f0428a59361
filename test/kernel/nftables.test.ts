/**
 * nftables through libnftables in-process, in a throwaway namespace: a script applies there (and only
 * there) as one transaction, the listing is nft's JSON, and a refusal names errno and nft's message.
 */
import assert from 'node:assert/strict';
import { isBpfError } from '../../src/bpf/error';
import { run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
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
    listing.nftables.flatMap((item) => ('table' in item ? [`${(item.table as { family: string }).family} ${(item.table as { name: string }).name}`] : []));

  it('applies a script in the namespace only, and lists it as nft -j does', () => {
    runNft(`table inet ${table} {\n  map m { type ipv4_addr : ipv4_addr; elements = { 10.0.0.1 : 10.1.0.1 } }\n}\n`, ns);
    const listing = listRuleset(ns);
    assert.deepEqual(tablesIn(listing), [`inet ${table}`]);
    assert.deepEqual(
      listing.nftables.filter((item) => 'map' in item).map((item) => ({ ...(item.map as object), handle: 0 })),
      [{ family: 'inet', name: 'm', table, type: 'ipv4_addr', handle: 0, map: 'ipv4_addr', elem: [['10.0.0.1', '10.1.0.1']] }],
    );
    assert.equal(run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'tables']).trim(), `table inet ${table}`, 'nft sees what the library wrote');
    assert.ok(!tablesIn(listRuleset()).includes(`inet ${table}`), 'not in the current namespace');
  });

  it('runs a script as one transaction: a command the kernel refuses (EEXIST) leaves nothing of the script', () => {
    assert.throws(
      () => runNft(`table inet ${table} {\n  map m { type ipv4_addr : ipv4_addr; elements = { 10.0.0.1 : 10.1.0.1 } }\n}\ncreate element inet ${table} m { 10.0.0.1 : 10.1.0.2 }\n`, ns),
      (err: unknown) => isBpfError(err, 'EEXIST') && err.errno === 17 && err.operation === 'nft' && err.message.includes('Could not process rule: File exists'),
    );
    assert.deepEqual(tablesIn(listRuleset(ns)), [], 'the commands before it were not applied either');
  });

  it("a missing object nft's own checks find is ENOENT too", () => {
    assert.throws(() => runNft('delete table inet strait_test_missing\n', ns), (err: unknown) => isBpfError(err, 'ENOENT') && err.errno === 2);
  });

  it("a script nft's parser refuses is EINVAL with nft's message", () => {
    assert.throws(() => runNft('bogus\n', ns), (err: unknown) => isBpfError(err, 'EINVAL') && /syntax error/.test(err.message));
  });
});
