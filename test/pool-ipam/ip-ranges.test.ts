import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError } from '../../src/errors';
import { type Ip, parseCidr, parseIp } from '../../src/net/cidr';
import {
  addressAt,
  countAddresses,
  firstFreeAddress,
  formatIpRanges,
  normalizeRanges,
  parseIpRanges,
  rangesContain,
  rangesOfAddresses,
  subtractRanges,
} from '../../src/pool-ipam/ip-ranges';
import type { IpRange } from '../../src/pool-ipam/model';
import { ranges } from './fixtures';

const v4 = parseCidr('spec.subnet', '10.6.0.0/24');
const ip = (text: string): Ip => parseIp('ip', text);
const refusedWith = (field: string, value: unknown, pattern: RegExp) => (err: unknown) =>
  err instanceof InputError && err.field === field && err.value === value && pattern.test(err.message);

/** Offsets 0..63 of 10.6.0.0/24 as a model: a plain set of numbers. */
const offsetsArb = fc.uniqueArray(fc.integer({ min: 0, max: 63 }), { maxLength: 40 });
const toRanges = (offsets: number[]): IpRange[] => rangesOfAddresses(offsets.map((o) => ({ family: 4, value: v4.base + BigInt(o) })));
const toOffsets = (rs: readonly IpRange[]): number[] => {
  const out: number[] = [];
  for (const r of rs) for (let v = r.first; v <= r.last; v++) out.push(Number(v - v4.base));
  return out;
};

describe('pool IPAM: address ranges', () => {
  it('parses addresses and ranges of spec.ips into sorted, merged ranges (IPv4 and IPv6)', () => {
    const parsed = parseIpRanges(
      'spec.ips',
      ['10.6.0.30', '10.6.0.10-10.6.0.20', '10.6.0.21', '10.6.0.15-10.6.0.18', '10.6.0.40-10.6.0.41'],
      v4,
    );
    assert.deepEqual(formatIpRanges(parsed), ['10.6.0.10-10.6.0.21', '10.6.0.30', '10.6.0.40-10.6.0.41']);
    assert.deepEqual(parsed[0], { family: 4, first: 0x0a06000an, last: 0x0a060015n });
    const v6 = parseIpRanges('spec.ips', ['fd00::9-fd00::a', 'fd00::2', 'fd00::3'], parseCidr('spec.subnet', 'fd00::/120'));
    assert.deepEqual(formatIpRanges(v6), ['fd00::2-fd00::3', 'fd00::9-fd00::a']);
  });

  it('refuses a wrong family, a reversed range, an address outside the subnet and malformed text, naming spec.ips[i] and the entry', () => {
    const ok = ['10.6.0.2', '10.6.0.3', '10.6.0.4'];
    assert.throws(
      () => parseIpRanges('spec.ips', [...ok, 'fd00::1'], v4),
      refusedWith('spec.ips[3]', 'fd00::1', /fd00::1 is IPv6 but the subnet 10\.6\.0\.0\/24 is IPv4/),
    );
    assert.throws(
      () => parseIpRanges('spec.ips', [...ok, '10.6.0.20-10.6.0.10'], v4),
      refusedWith('spec.ips[3]', '10.6.0.20-10.6.0.10', /first address 10\.6\.0\.20 is above the last 10\.6\.0\.10/),
    );
    assert.throws(
      () => parseIpRanges('spec.excludeIPs', ['10.6.0.250-10.6.1.3'], v4),
      refusedWith('spec.excludeIPs[0]', '10.6.0.250-10.6.1.3', /10\.6\.1\.3 is outside the subnet 10\.6\.0\.0\/24/),
    );
    assert.throws(() => parseIpRanges('spec.ips', ['10.5.255.255'], v4), refusedWith('spec.ips[0]', '10.5.255.255', /outside the subnet/));
    assert.throws(
      () => parseIpRanges('spec.ips', ['10.6.0.1-10.6.0.2-10.6.0.3'], v4),
      refusedWith('spec.ips[0]', '10.6.0.1-10.6.0.2-10.6.0.3', /one "-"/),
    );
    assert.throws(
      () => parseIpRanges('spec.ips', ['10.6.0.1-x'], v4),
      refusedWith('spec.ips[0]', '10.6.0.1-x', /"x": not an IPv4 address/),
    );
    assert.throws(() => parseIpRanges('spec.ips', ['10.6.0.1', 7], v4), refusedWith('spec.ips[1]', 7, /expected an address or a range/));
    assert.throws(() => parseIpRanges('spec.ips', '10.6.0.1', v4), refusedWith('spec.ips', '10.6.0.1', /expected a list/));
  });

  it('subtracts, counts and tests membership, ignoring ranges of the other family', () => {
    const left = subtractRanges(
      ranges('10.6.0.10-10.6.0.20', '10.6.0.30-10.6.0.40'),
      ranges('10.6.0.5-10.6.0.11', '10.6.0.15', '10.6.0.20-10.6.0.30', '10.6.0.40', 'fd00::1-fd00::ffff'),
    );
    assert.deepEqual(formatIpRanges(left), ['10.6.0.12-10.6.0.14', '10.6.0.16-10.6.0.19', '10.6.0.31-10.6.0.39']);
    assert.equal(countAddresses(left), 16n);
    assert.equal(countAddresses(ranges('fd00::-fd00::ffff:ffff')), 0x100000000n);
    assert.equal(rangesContain(left, ip('10.6.0.16')), true);
    assert.equal(rangesContain(left, ip('10.6.0.15')), false);
    assert.equal(rangesContain(left, ip('10.6.0.39')), true);
    assert.equal(rangesContain(left, ip('10.6.0.40')), false);
    assert.equal(rangesContain(ranges('0.0.0.1'), { family: 6, value: 1n }), false);
    assert.deepEqual(addressAt(left, 3n), ip('10.6.0.16'));
    assert.equal(addressAt(left, 16n), undefined);
  });

  it('finds the first free address at or after the start-th address, wrapping around, undefined when all are taken', () => {
    const pool = ranges('10.6.0.10-10.6.0.14', '10.6.0.20-10.6.0.22');
    const taken = ranges('10.6.0.11', '10.6.0.13-10.6.0.20');
    const found = (start: bigint, ...t: IpRange[][]) => firstFreeAddress(pool, start, ...t);
    assert.deepEqual(found(0n, taken), ip('10.6.0.10'));
    assert.deepEqual(found(1n, taken), ip('10.6.0.12'));
    assert.deepEqual(found(3n, taken), ip('10.6.0.21'));
    assert.deepEqual(found(7n, taken), ip('10.6.0.22'));
    assert.deepEqual(found(7n, taken, ranges('10.6.0.22')), ip('10.6.0.10'), 'wraps to the lowest free');
    assert.deepEqual(found(8n + 3n, taken), ip('10.6.0.21'), 'start is taken modulo the size');
    assert.equal(found(2n, taken, ranges('10.6.0.10', '10.6.0.12'), ranges('10.6.0.21-10.6.0.22')), undefined);
    assert.equal(firstFreeAddress([], 0n), undefined);
  });

  it('finds the one free address of a /16 with 61,439 of its addresses taken one by one', () => {
    const sixteen = parseCidr('spec.subnet', '10.6.0.0/16');
    const pool = parseIpRanges('spec.ips', ['10.6.0.1-10.6.255.254'], sixteen);
    const taken: Ip[] = [];
    for (let v = sixteen.base; v <= ip('10.6.239.255').value; v++) if (v !== ip('10.6.100.7').value) taken.push({ family: 4, value: v });
    const takenRanges = rangesOfAddresses(taken.reverse());
    assert.deepEqual(formatIpRanges(takenRanges), ['10.6.0.0-10.6.100.6', '10.6.100.8-10.6.239.255']);
    assert.deepEqual(firstFreeAddress(pool, 0n, takenRanges), ip('10.6.100.7'));
    assert.deepEqual(firstFreeAddress(pool, ip('10.6.100.8').value - ip('10.6.0.1').value, takenRanges), ip('10.6.240.0'));
  });

  it('round-trips: formatting normalized ranges and parsing the text gives them back', () => {
    fc.assert(
      fc.property(offsetsArb, (offsets) => {
        const rs = toRanges(offsets);
        assert.deepEqual(parseIpRanges('spec.ips', formatIpRanges(rs), v4), rs);
      }),
    );
  });

  it('normalizing, subtracting, counting and membership agree with a set of single addresses', () => {
    fc.assert(
      fc.property(offsetsArb, offsetsArb, fc.array(fc.tuple(fc.nat(63), fc.nat(8)), { maxLength: 6 }), (a, b, spans) => {
        const overlapping = spans.map(([o, n]) => ({ family: 4 as const, first: v4.base + BigInt(o), last: v4.base + BigInt(o + n) }));
        const merged = normalizeRanges([...toRanges(a), ...overlapping]);
        const model = new Set([...a, ...spans.flatMap(([o, n]) => Array.from({ length: n + 1 }, (_, i) => o + i))]);
        assert.deepEqual(
          toOffsets(merged),
          [...model].sort((x, y) => x - y),
        );
        for (let i = 1; i < merged.length; i++)
          assert.ok(merged[i]!.first > merged[i - 1]!.last + 1n, 'merged ranges neither overlap nor touch');
        const diff = subtractRanges(merged, toRanges(b));
        const modelDiff = [...model].filter((o) => !b.includes(o)).sort((x, y) => x - y);
        assert.deepEqual(toOffsets(diff), modelDiff);
        assert.equal(countAddresses(diff), BigInt(modelDiff.length));
        for (let o = 0; o < 80; o++) assert.equal(rangesContain(diff, { family: 4, value: v4.base + BigInt(o) }), modelDiff.includes(o));
      }),
    );
  });

  it('the first free address agrees with a scan from the start position, wrapping around', () => {
    fc.assert(
      fc.property(offsetsArb, offsetsArb, fc.nat(200), (pool, taken, start) => {
        const list = [...pool].sort((x, y) => x - y);
        const free = list.filter((o) => !taken.includes(o));
        const from = list.length ? list[start % list.length]! : 0;
        const expected = free.find((o) => o >= from) ?? free[0];
        const got = firstFreeAddress(toRanges(pool), BigInt(start), toRanges(taken));
        assert.deepEqual(got, expected === undefined ? undefined : { family: 4, value: v4.base + BigInt(expected) });
      }),
    );
  });
});
