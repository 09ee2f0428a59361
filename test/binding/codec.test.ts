import assert from 'node:assert/strict';
import fc from 'fast-check';
import { array, be16, encode, ipv4, ipv6, mac, struct, u16, u32, u64, u8 } from '../../src/native';

describe('codecs (pure)', () => {
  it('round-trips every IPv4 address in network order and refuses anything else', () => {
    fc.assert(
      fc.property(fc.ipV4(), (a) => {
        const buf = encode(ipv4, a);
        assert.deepEqual([...buf], a.split('.').map(Number));
        assert.equal(ipv4.decode(buf, 0), a);
      }),
    );
    for (const bad of ['256.1.1.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', ' 1.2.3.4', '::1', ''])
      assert.throws(() => encode(ipv4, bad), /not an IPv4 address/, bad);
  });

  it('round-trips IPv6 and MAC addresses', () => {
    assert.deepEqual(ipv6.decode(encode(ipv6, 'fd00::1'), 0), 'fd00::1');
    assert.throws(() => encode(ipv6, '10.0.0.1'), /not an IPv6 address/);
    assert.equal(mac.decode(encode(mac, '02:53:54:00:0A:ff'), 0), '02:53:54:00:0a:ff');
    assert.throws(() => encode(mac, '02:53:54:00:0a'), /not a MAC address/);
  });

  it('lays structs out as C does: natural alignment, size rounded to the widest member', () => {
    const s = struct({ a: u8, b: u32, c: u16, d: u64, e: array(u8, 3) });
    assert.deepEqual(
      s.fields.map((f) => [f.name, f.offset, f.size]),
      [
        ['a', 0, 1],
        ['b', 4, 4],
        ['c', 8, 2],
        ['d', 16, 8],
        ['e', 24, 3],
      ],
    );
    assert.equal(s.size, 32);
    const v = { a: 1, b: 2, c: 3, d: 4n, e: [5, 6, 7] };
    assert.deepEqual(s.decode(encode(s, v), 0), v);
    assert.equal(encode(struct({ port: be16 }), { port: 0x1234 }).toString('hex'), '1234');
    assert.throws(() => encode(s, { ...v, e: [1] }), /expected an array of 3/);
    assert.throws(() => encode(s, { a: 1 } as never), /missing field 'b'/);
  });
});
