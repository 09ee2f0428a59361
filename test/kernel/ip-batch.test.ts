import assert from 'node:assert/strict';
import { InputError } from '../../src/errors';
import { ip } from '../../src/kernel/command';
import { parseBatchStderr, runBridgeBatch, runIpBatch } from '../../src/kernel/ip-batch';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { requireRoot, uniqueName } from '../support/kernel';

describe('ip -batch stderr (pure)', () => {
  it('attributes each message to the line named by the "Command failed" after it', () => {
    const stderr = 'Cannot find device "nosuch"\nCommand failed -:2\nError: first; \nRTNETLINK answers: File exists\nCommand failed -:5\nWarning: after the last failure\nDevice "strait/end" does not exist.\nCommand failed -:7\n';
    assert.deepEqual(parseBatchStderr(stderr, 6), [
      { ok: true },
      { ok: false, error: 'Cannot find device "nosuch"' },
      { ok: true },
      { ok: true },
      { ok: false, error: 'Error: first;; RTNETLINK answers: File exists' },
      { ok: true },
    ]);
  });

  it('marks every line after the last reported one as unknown when the sentinel never failed (the batch ended early)', () => {
    const results = parseBatchStderr('RTNETLINK answers: File exists\nCommand failed -:1\nError: any valid prefix is expected rather than "bogus".\n', 4);
    assert.deepEqual(results[0], { ok: false, error: 'RTNETLINK answers: File exists' });
    for (const r of results.slice(1)) {
      assert.equal(r.ok, false);
      assert.match((r as { error: string }).error, /^outcome unknown: the batch ended early after line 1 \(Error: any valid prefix .*"bogus"/);
    }
  });
});

describe('ip -batch input', () => {
  it('refuses a line that would become two commands, naming its index', () => {
    assert.throws(() => runIpBatch(['route show', 'route add 10.0.0.0/24 dev lo\nlink del eth0']), (err: unknown) => err instanceof InputError && err.field === 'lines[1]');
    assert.throws(() => runIpBatch(['link show', '']), (err: unknown) => err instanceof InputError && err.field === 'lines[1]');
    assert.throws(() => runIpBatch(['link show # hidden']), (err: unknown) => err instanceof InputError && err.field === 'lines[0]');
  });

  it('runs nothing for no lines', () => assert.deepEqual(runIpBatch([]), []));

  it('a warning on stderr after the last failure is not an early end', () => {
    assert.deepEqual(parseBatchStderr('Warning: something\nDevice "strait/end" does not exist.\nCommand failed -:3\n', 2), [{ ok: true }, { ok: true }]);
  });
});

describe('ip -batch (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-batch');
    createNetns(ns);
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1'], ns);
    ip(['link', 'set', 'veth0', 'up'], ns);
  });
  afterEach(() => deleteNetns(ns));

  const table = () => (JSON.parse(ip(['-j', 'route', 'show', 'table', '18952'], ns)) as { dst: string }[]).map((r) => r.dst).sort();

  it('reports lines 2 and 5 failed with their own messages and applies all the others', () => {
    const results = runIpBatch(
      [
        'route add 10.1.0.0/24 dev veth0 table 18952',
        'route add 10.2.0.0/24 dev nosuch table 18952',
        'route add 10.3.0.0/24 dev veth0 table 18952',
        'route add 10.4.0.0/24 dev veth0 table 18952',
        'route add 10.1.0.0/24 dev veth0 table 18952',
        'route add 10.6.0.0/24 dev veth0 table 18952',
      ],
      ns,
    );
    assert.deepEqual(results, [
      { ok: true },
      { ok: false, error: 'Cannot find device "nosuch"' },
      { ok: true },
      { ok: true },
      { ok: false, error: 'RTNETLINK answers: File exists' },
      { ok: true },
    ]);
    assert.deepEqual(table(), ['10.1.0.0/24', '10.3.0.0/24', '10.4.0.0/24', '10.6.0.0/24']);
  });

  it('says the outcome is unknown for every line after the last reported failure when ip stops at a line it cannot parse', () => {
    const lines = ['route add 10.1.0.0/24 dev nosuch table 18952', 'route add 10.2.0.0/24 dev veth0 table 18952', 'route add bogus dev veth0 table 18952', 'route add 10.4.0.0/24 dev veth0 table 18952'];
    const results = runIpBatch(lines, ns);
    assert.deepEqual(results[0], { ok: false, error: 'Cannot find device "nosuch"' });
    assert.ok(results.slice(1).every((r) => !r.ok && /^outcome unknown: the batch ended early after line 1 .*"bogus"/.test(r.error)), JSON.stringify(results));
    assert.deepEqual(table(), ['10.2.0.0/24'], 'the line before the bad one ran, nothing after it');
  });

  it('reports every line as unknown when ip cannot even start (no such namespace)', () => {
    const results = runIpBatch(['link show'], `${ns}-missing`);
    assert.equal(results.length, 1);
    assert.ok(!results[0]!.ok && results[0]!.error.startsWith('outcome unknown') && results[0]!.error.includes(`${ns}-missing`), JSON.stringify(results));
  });

  it('runs bridge commands the same way', () => {
    ip(['link', 'add', 'strait.vxlan', 'type', 'vxlan', 'id', '7', 'dstport', '4789', 'nolearning'], ns);
    const results = runBridgeBatch(['fdb append 00:00:00:00:00:00 dev strait.vxlan dst 192.0.2.2 self permanent', 'fdb del 02:00:00:00:00:09 dev strait.vxlan dst 192.0.2.9 self'], ns);
    assert.deepEqual(results[0], { ok: true });
    assert.equal(results[1]!.ok, false);
  });
});
