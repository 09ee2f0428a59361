import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError } from '../../src/errors';
import { type Cidr, cidrsOverlap, containsIp, formatCidr, formatIp, parseCidr, parseIp, translateIp } from '../../src/net/cidr';

function refusedWith(field: string, pattern: RegExp): (err: unknown) => boolean {
  return (err) => err instanceof InputError && err.field === field && pattern.test(err.message);
}

describe('cidr: parsing and formatting', () => {
  it('round-trips IPv4 and IPv6 networks', () => {
    for (const text of ['10.0.0.0/24', '0.0.0.0/1', '255.255.255.255/32', 'fd00::/8', '2001:db8::1:0:0:1/128', '::/1']) {
      assert.equal(formatCidr(parseCidr('c', text)), text);
    }
    assert.equal(formatCidr(parseCidr('c', 'fd00:0:0:0::/64')), 'fd00::/64');
  });

  it('parses addresses to their numeric value', () => {
    assert.deepEqual(parseIp('ip', '10.0.0.34'), { family: 4, value: 0x0a000022n });
    assert.deepEqual(parseIp('ip', '::ffff:1.2.3.4'), { family: 6, value: 0xffff01020304n });
    assert.equal(formatIp({ family: 6, value: 1n }), '::1');
  });

  it('refuses a network with host bits set, naming the network meant', () => {
    assert.throws(() => parseCidr('podCIDR', '10.0.0.1/24'), refusedWith('podCIDR', /host bits are set; did you mean 10\.0\.0\.0\/24/));
    assert.throws(() => parseCidr('pools', 'fd00::1/64'), refusedWith('pools', /did you mean fd00::\/64/));
  });

  it('refuses bad prefix lengths and malformed text with the field and value', () => {
    for (const bad of [
      '10.0.0.0/0',
      '10.0.0.0/33',
      '::/129',
      '10.0.0.0/024',
      '10.0.0.0',
      '10.0.0/8',
      '010.0.0.0/8',
      'fe80::%eth0/64',
      'x/8',
      '',
    ]) {
      assert.throws(
        () => parseCidr('externalCIDR', bad),
        (err: unknown) => err instanceof InputError && err.field === 'externalCIDR' && err.value === bad,
        bad,
      );
    }
    // /0 is refused for its length, not only for its host bits (0.0.0.0/0 has none: every address).
    assert.throws(() => parseCidr('externalCIDR', '0.0.0.0/0'), refusedWith('externalCIDR', /prefix length must be 1 to 32 for IPv4/));
    assert.throws(() => parseCidr('externalCIDR', '::/0'), refusedWith('externalCIDR', /prefix length must be 1 to 128 for IPv6/));
    assert.throws(() => parseCidr('podCIDR', 42), refusedWith('podCIDR', /expected a CIDR string/));
    assert.throws(() => parseIp('ip', '1.2.3.256'), refusedWith('ip', /not an IPv4 address/));
  });
});

describe('cidr: relations', () => {
  it('overlap and containment respect family and bounds', () => {
    const a = parseCidr('a', '10.0.0.0/16');
    assert.equal(cidrsOverlap(a, parseCidr('b', '10.0.255.0/24')), true);
    assert.equal(cidrsOverlap(a, parseCidr('b', '10.1.0.0/24')), false);
    assert.equal(cidrsOverlap(a, parseCidr('b', '10.0.0.0/8')), true);
    assert.equal(cidrsOverlap(parseCidr('a', '::/96'), parseCidr('b', '0.0.0.0/1')), false);
    assert.equal(containsIp(a, parseIp('ip', '10.0.255.255')), true);
    assert.equal(containsIp(a, parseIp('ip', '10.1.0.0')), false);
    assert.equal(containsIp(parseCidr('c', '::/96'), parseIp('ip', '0.0.0.1')), false);
  });
});

describe('cidr: translation keeps host bits for every prefix length', () => {
  it('maps the docs/packet-contract.md example 10.0.0.34 in 10.0.0.0/24 to 192.168.0.34 in 192.168.0.0/24', () => {
    const ip = translateIp(parseIp('ip', '10.0.0.34'), parseCidr('f', '10.0.0.0/24'), parseCidr('t', '192.168.0.0/24'));
    assert.equal(formatIp(ip), '192.168.0.34');
  });

  it('is not a /16 assumption: /20, /12, /27, /9 and IPv6 /56 give exact answers', () => {
    const cases: [string, string, string, string][] = [
      ['10.0.15.200', '10.0.0.0/20', '172.16.240.0/20', '172.16.255.200'],
      ['10.5.6.7', '10.0.0.0/12', '172.16.0.0/12', '172.21.6.7'],
      ['192.168.1.66', '192.168.1.64/27', '10.9.9.96/27', '10.9.9.98'],
      ['10.127.255.255', '10.0.0.0/9', '10.128.0.0/9', '10.255.255.255'],
      ['fd00:1:2:3400::5', 'fd00:1:2:3400::/56', 'fd99::/56', 'fd99::5'],
    ];
    for (const [ip, from, to, expected] of cases) {
      assert.equal(formatIp(translateIp(parseIp('ip', ip), parseCidr('f', from), parseCidr('t', to))), expected, `${ip} ${from} -> ${to}`);
    }
  });

  for (const [family, bits] of [
    [4, 32],
    [6, 128],
  ] as const) {
    it(`/1 to /${bits} (IPv${family}): first, last and a random host land on the same host`, () => {
      const all = (1n << BigInt(bits)) - 1n;
      fc.assert(
        fc.property(fc.bigInt(0n, all), fc.bigInt(0n, all), fc.bigInt(0n, all), (x, y, h) => {
          for (let prefix = 1; prefix <= bits; prefix++) {
            const hostMask = (1n << BigInt(bits - prefix)) - 1n;
            const from: Cidr = { family, base: x & ~hostMask & all, prefix };
            const to: Cidr = { family, base: y & ~hostMask & all, prefix };
            const ip = { family, value: from.base | (h & hostMask) };
            const out = translateIp(ip, from, to);
            assert.equal(out.value & hostMask, h & hostMask);
            assert.equal(out.value & ~hostMask, to.base);
            assert.equal(translateIp({ family, value: from.base }, from, to).value, to.base);
            assert.equal(translateIp({ family, value: from.base | hostMask }, from, to).value, to.base | hostMask);
            assert.deepEqual(translateIp(out, to, from), ip);
          }
        }),
        { numRuns: 30 },
      );
    });
  }

  it('refuses to translate between networks of different sizes', () => {
    assert.throws(
      () => translateIp(parseIp('ip', '10.0.0.1'), parseCidr('f', '10.0.0.0/24'), parseCidr('t', '10.1.0.0/16')),
      /differ in family or prefix length/,
    );
  });
});
