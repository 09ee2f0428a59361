/**
 * The native xfrm netlink calls against a real kernel, in a throwaway namespace: the dumps decode what
 * `ip xfrm` set up, a batch of changes gives one result per change in order, and a refused change
 * carries its errno and names its operation (never a key) without stopping the ones after it.
 */
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { type XfrmChange, type XfrmResult, applyXfrm, dumpXfrmPolicies, dumpXfrmStates } from '../../src/kernel/xfrm';
import { requireKernel, requireRoot, uniqueName } from '../support/kernel';

/** A result as comparable data: ok, or the error's errno, code, operation and message. */
const outcome = (r: XfrmResult) =>
  r.ok ? 'ok' : { errno: r.error.errno, code: r.error.code, operation: r.error.operation, message: r.error.message };

const key = Buffer.alloc(20, 0x3c);
const state: XfrmChange = {
  kind: 'state',
  op: 'add',
  src: '198.51.100.11',
  dst: '203.0.113.1',
  spi: 0x1234,
  reqid: 0x53540007,
  ifId: 7,
  aead: 'rfc4106(gcm(aes))',
  icvBits: 128,
  key,
};
const policy = (src: string, more: Partial<Extract<XfrmChange, { kind: 'policy'; op: 'add' | 'update' }>> = {}): XfrmChange => ({
  kind: 'policy',
  op: 'add',
  dir: 1,
  src,
  dst: '10.1.0.0/16',
  ifId: 7,
  tmplSrc: '198.51.100.11',
  tmplDst: '203.0.113.1',
  reqid: 0x53540007,
  ...more,
});

describe('xfrm netlink through the native addon (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-xfrm');
    createNetns(ns);
  });
  afterEach(() => deleteNetns(ns));

  /** `ip xfrm policy`, one line per policy. */
  const policies = () =>
    ip(['xfrm', 'policy'], ns)
      .split(/\n(?=\S)/)
      .map((p) => p.replace(/\s+/g, ' ').trim())
      .filter(Boolean)
      .sort();
  const ours = (src: string) =>
    `src ${src} dst 10.1.0.0/16 dir out priority 0 ptype main tmpl src 198.51.100.11 dst 203.0.113.1 proto esp reqid 1398013959 mode tunnel if_id 0x7`;

  it('dumps a policy with its whole selector, mark, if_id and templates, the direction as the kernel numbers it', () => {
    ip(
      [
        'xfrm',
        'policy',
        'add',
        'src',
        '10.1.0.0/16',
        'dst',
        '172.16.0.0/24',
        'proto',
        'tcp',
        'sport',
        '1000',
        'dport',
        '80',
        'dir',
        'fwd',
        'priority',
        '9',
        'mark',
        '5',
        'mask',
        '0xff',
        'if_id',
        '42',
        'tmpl',
        'src',
        '203.0.113.1',
        'dst',
        '198.51.100.11',
        'proto',
        'esp',
        'reqid',
        '1398013959',
        'mode',
        'tunnel',
      ],
      ns,
    );
    const [p, ...more] = dumpXfrmPolicies(ns);
    assert.deepEqual(more, []);
    assert.equal(typeof p!.index, 'number');
    assert.deepEqual(
      { ...p, index: undefined },
      {
        dir: 2,
        index: undefined,
        priority: 9,
        src: '10.1.0.0/16',
        dst: '172.16.0.0/24',
        proto: 6,
        sport: 1000,
        dport: 80,
        ifindex: 0,
        ifId: 42,
        mark: { value: 5, mask: 0xff },
        tmpls: [{ src: '203.0.113.1', dst: '198.51.100.11', proto: 50, reqid: 0x53540007, mode: 1 }],
      },
    );
  });

  it('gives one result per policy change in order; a refused one names its operation and errno and the ones after it are applied', () => {
    const results = applyXfrm(
      [
        policy('172.16.0.0/16'),
        policy('172.16.0.0/16'), // refused by the kernel: exists
        policy('172.16.0.0'), // refused before it is sent: not a network
        policy('172.17.0.0/24'),
        policy('172.17.0.0/24', { op: 'update', tmplDst: '192.0.2.9' }),
      ],
      ns,
    );
    assert.deepEqual(results.map(outcome), [
      'ok',
      {
        errno: 17,
        code: 'EEXIST',
        operation: 'xfrm policy add dir out src 172.16.0.0/16 dst 10.1.0.0/16',
        message: 'xfrm policy add dir out src 172.16.0.0/16 dst 10.1.0.0/16 failed: EEXIST (File exists)',
      },
      {
        errno: 22,
        code: 'EINVAL',
        operation: 'xfrm policy add dir out src 172.16.0.0 dst 10.1.0.0/16',
        message:
          'xfrm policy add dir out src 172.16.0.0 dst 10.1.0.0/16 failed: EINVAL (Invalid argument): the selectors are not both IPv4 or both IPv6 networks',
      },
      'ok',
      'ok',
    ]);
    assert.deepEqual(policies(), [ours('172.16.0.0/16'), ours('172.17.0.0/24').replace('dst 203.0.113.1', 'dst 192.0.2.9')]);
  });

  it('programs a policy of IPv6 selectors through an IPv4 tunnel, reads it back and deletes it; refuses mixed families by field', () => {
    const six = policy('fd00:10::/64', { dst: 'fd00:20::/56' });
    assert.deepEqual(applyXfrm([six], ns).map(outcome), ['ok']);
    const [dumped, ...more] = dumpXfrmPolicies(ns);
    assert.deepEqual(more, []);
    assert.deepEqual(
      [dumped!.src, dumped!.dst, dumped!.tmpls],
      ['fd00:10::/64', 'fd00:20::/56', [{ src: '198.51.100.11', dst: '203.0.113.1', proto: 50, reqid: 0x53540007, mode: 1 }]],
    );
    assert.deepEqual(policies(), [ours('fd00:10::/64').replace('dst 10.1.0.0/16', 'dst fd00:20::/56')], 'as ip xfrm shows it');
    const refused = applyXfrm(
      [
        policy('fd00:10::/64'), // an IPv6 source, an IPv4 destination
        policy('fd00:10::/64', { dst: 'fd00:20::/56', tmplSrc: '2001:db8::1' }), // a template of each family
      ],
      ns,
    );
    assert.deepEqual(
      refused.map((r) => (r.ok ? 'ok' : r.error.message)),
      [
        'xfrm policy add dir out src fd00:10::/64 dst 10.1.0.0/16 failed: EINVAL (Invalid argument): the selectors are not both IPv4 or both IPv6 networks',
        'xfrm policy add dir out src fd00:10::/64 dst fd00:20::/56 failed: EINVAL (Invalid argument): the template addresses are not both IPv4 or both IPv6',
      ],
    );
    const del: XfrmChange = { kind: 'policy', op: 'del', dir: dumped!.dir, index: dumped!.index, ifId: dumped!.ifId };
    assert.deepEqual(applyXfrm([del], ns).map(outcome), ['ok']);
    assert.deepEqual(policies(), []);
  });

  it('deletes a policy by the index its dump gave, with its mark and if_id; a second delete is ENOENT', () => {
    ip(['xfrm', 'policy', 'add', 'src', '10.9.0.0/16', 'dst', '10.8.0.0/16', 'dir', 'in', 'mark', '5', 'mask', '0xff', 'if_id', '3'], ns);
    applyXfrm([policy('172.16.0.0/16')], ns);
    const marked = dumpXfrmPolicies(ns).find((p) => p.src === '10.9.0.0/16')!;
    const del: XfrmChange = { kind: 'policy', op: 'del', dir: marked.dir, index: marked.index, ifId: marked.ifId, mark: marked.mark! };
    assert.deepEqual(
      applyXfrm([del, del], ns).map((r) => (r.ok ? 'ok' : r.error.code)),
      ['ok', 'ENOENT'],
    );
    assert.deepEqual(policies(), [ours('172.16.0.0/16')]);
  });

  it('without ESP, refuses a state with its errno, naming it without its key, and applies the policy of the same batch @no-esp', async function () {
    await requireKernel(this, { lacks: ['esp'] });
    const results = applyXfrm([state, policy('172.16.0.0/16')], ns);
    assert.deepEqual(results.map(outcome), [
      {
        errno: 38,
        code: 'ENOSYS',
        operation: 'xfrm state add 198.51.100.11 -> 203.0.113.1 spi 0x00001234',
        message:
          'xfrm state add 198.51.100.11 -> 203.0.113.1 spi 0x00001234 failed: ENOSYS (Function not implemented): Requested AEAD algorithm not found',
      },
      'ok',
    ]);
    assert.ok(!inspect(results, { depth: 5 }).includes(key.toString('hex')));
    assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
    assert.deepEqual(policies(), [ours('172.16.0.0/16')]);
  });

  it('refuses an IPv6 ESP state as an IPv4 one without ESP, and a state whose addresses are of both families before sending it @no-esp', async function () {
    await requireKernel(this, { lacks: ['esp'] });
    const six: XfrmChange = { ...state, src: '2001:db8::1', dst: '2001:db8::2' };
    const mixed: XfrmChange = { ...state, dst: '2001:db8::2' };
    assert.deepEqual(
      applyXfrm([six, mixed], ns).map((r) => (r.ok ? 'ok' : r.error.message)),
      [
        'xfrm state add 2001:db8::1 -> 2001:db8::2 spi 0x00001234 failed: ENOSYS (Function not implemented): Requested AEAD algorithm not found',
        'xfrm state add 198.51.100.11 -> 2001:db8::2 spi 0x00001234 failed: EINVAL (Invalid argument): the addresses are not both IPv4 or both IPv6',
      ],
    );
    assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
  });

  for (const afUnspec of [false, true]) {
    it(`installs a state${afUnspec ? ' with af-unspec (either inner family)' : ''} and reads it back with its fields and a digest of its key, never the key; deletes it @esp`, async function () {
      await requireKernel(this, { has: ['esp'] });
      assert.deepEqual(applyXfrm([{ ...state, afUnspec }], ns).map(outcome), ['ok']);
      const dumped = dumpXfrmStates(ns);
      assert.deepEqual(dumped, [
        {
          src: '198.51.100.11',
          dst: '203.0.113.1',
          proto: 50,
          spi: 0x1234,
          reqid: 0x53540007,
          mode: 1,
          ifId: 7,
          afUnspec,
          aead: { name: 'rfc4106(gcm(aes))', icvBits: 128 },
          keyDigest: 'df51ade4e10ab621f46b4bd86e46fbe264e5f989970f91a7a697bcd3116b1f8f',
        },
      ]);
      const text = ip(['xfrm', 'state'], ns);
      assert.ok(text.includes(`aead rfc4106(gcm(aes)) 0x${key.toString('hex')} 128`), 'the kernel holds the key sent');
      // Without the flag the kernel gives the empty selector the addresses' family (ip shows it); with it, none.
      assert.equal(/ flag af-unspec\n/.test(text), afUnspec, text);
      assert.equal(text.includes('sel src 0.0.0.0/0 dst 0.0.0.0/0'), !afUnspec, text);
      const del: XfrmChange = { kind: 'state', op: 'del', src: state.src, dst: state.dst, spi: 0x1234 };
      assert.deepEqual(
        applyXfrm([del, del], ns).map((r) => (r.ok ? 'ok' : r.error.code)),
        ['ok', 'ESRCH'],
      );
      assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
    });
  }
});
