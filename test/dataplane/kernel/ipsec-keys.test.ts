import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { InputError } from '../../../src/errors';
import { type Expand, Secret, deriveDirections, derivePeeringKeys, peeringSecret } from '../../../src/dataplane/kernel/ipsec-keys';

const secretBytes = Buffer.from('9f'.repeat(8) + '0123456789abcdef'.repeat(3), 'hex');
const secret = () => peeringSecret('peerings[0].secret', secretBytes);
const hex = (s: Secret) => s.reveal().toString('hex');

describe('IPsec key derivation', () => {
  it('is a contract between clusters: these SPIs and keys must never change (a peer of another version could not decrypt)', () => {
    // HKDF-SHA256(ikm = secret, salt = 'strait-ipsec-v1 ["cluster-a","cluster-b"]', info = 'from->to', 24 bytes):
    // 4 SPI bytes, then the 16-byte AES key and 4-byte GCM salt. Computed independently with
    // `openssl kdf -keylen 24 -kdfopt digest:SHA256 -kdfopt hexkey:3c3c.. -kdfopt salt:.. -kdfopt info:.. HKDF`;
    // a changed salt, info or length would silently break peering with every earlier release.
    const k = derivePeeringKeys(peeringSecret('secret', Buffer.alloc(32, 0x3c)), 'cluster-a', 'cluster-b');
    assert.deepEqual(
      [k.forward.from, k.forward.to, k.forward.spi, hex(k.forward.key)],
      ['cluster-a', 'cluster-b', 0x445094d3, '2cf54876bcb43f2080d6a04602d816f9605a5b1e'],
    );
    assert.deepEqual(
      [k.reverse.from, k.reverse.to, k.reverse.spi, hex(k.reverse.key)],
      ['cluster-b', 'cluster-a', 0x0bd2afd4, 'f46235e1668ebeba78d32060a0ca4bf8b6da9686'],
    );
  });

  it('gives both clusters the same two directions', () => {
    const onA = derivePeeringKeys(secret(), 'cluster-a', 'cluster-b');
    const onB = derivePeeringKeys(peeringSecret('secret', secretBytes.toString('base64')), 'cluster-b', 'cluster-a');
    assert.deepEqual([onA.forward.from, onA.forward.to], ['cluster-a', 'cluster-b']);
    assert.deepEqual([onB.forward.from, onB.forward.to], ['cluster-b', 'cluster-a']);
    // A->B on A is A->B on B (B's reverse), and the other way round.
    assert.equal(onA.forward.spi, onB.reverse.spi);
    assert.equal(hex(onA.forward.key), hex(onB.reverse.key));
    assert.equal(onA.reverse.spi, onB.forward.spi);
    assert.equal(hex(onA.reverse.key), hex(onB.forward.key));
  });

  it('gives the two directions different SPIs and keys, each in range', () => {
    const k = derivePeeringKeys(secret(), 'cluster-a', 'cluster-b');
    assert.notEqual(k.forward.spi, k.reverse.spi);
    assert.notEqual(hex(k.forward.key), hex(k.reverse.key));
    for (const d of [k.forward, k.reverse]) {
      assert.equal(d.key.length, 20); // rfc4106(gcm(aes)): a 16-byte AES-128 key, then the 4-byte salt
      assert.ok(d.spi >= 256 && d.spi <= 0xffffffff, String(d.spi)); // 1..255 are reserved (RFC 4303)
    }
  });

  it('is deterministic, and a different secret or cluster pair changes everything', () => {
    const base = derivePeeringKeys(secret(), 'cluster-a', 'cluster-b');
    const again = derivePeeringKeys(secret(), 'cluster-a', 'cluster-b');
    assert.deepEqual(
      [again.forward.spi, hex(again.forward.key), again.reverse.spi, hex(again.reverse.key)],
      [base.forward.spi, hex(base.forward.key), base.reverse.spi, hex(base.reverse.key)],
    );
    const otherSecret = Buffer.from(secretBytes);
    otherSecret[0]! ^= 1;
    const variants = [
      derivePeeringKeys(peeringSecret('secret', otherSecret), 'cluster-a', 'cluster-b'),
      derivePeeringKeys(secret(), 'cluster-a', 'cluster-c'),
      derivePeeringKeys(secret(), 'cluster-x', 'cluster-b'),
    ];
    const seen = new Set([base.forward, base.reverse].flatMap((d) => [String(d.spi), hex(d.key)]));
    for (const v of variants) {
      for (const d of [v.forward, v.reverse]) {
        assert.ok(!seen.has(String(d.spi)), `spi ${d.spi} repeated`);
        assert.ok(!seen.has(hex(d.key)), 'key repeated');
      }
    }
  });

  it('redraws a reserved SPI, and the second direction on a tie, with a counter', () => {
    const infos: string[] = [];
    // 0x00000010 (reserved) first, then the same SPI for everything: the tie must be broken by a counter.
    const expand: Expand = (info) => {
      infos.push(info);
      const okm = Buffer.alloc(24, info.length);
      okm.writeUInt32BE(info === 'a->b' ? 0x10 : 0x1234, 0);
      return okm;
    };
    const fixed: Expand = (info) => {
      const okm = expand(info);
      if (info === 'b->a#1') okm.writeUInt32BE(0x5678, 0);
      return okm;
    };
    const [ab, ba] = deriveDirections(fixed, 'a', 'b');
    assert.deepEqual(infos, ['a->b', 'a->b#1', 'b->a', 'b->a#1']);
    assert.equal(ab.spi, 0x1234);
    assert.equal(ba.spi, 0x5678);
  });

  it('refuses a short or malformed secret, naming the field and its length but never its value', () => {
    const short = randomBytes(16);
    const cases: [Buffer | string, RegExp][] = [
      [short, /peerings\[0\]\.secret: .*at least 32 bytes.*16 bytes/],
      [short.toString('base64'), /at least 32 bytes.*16 bytes/],
      [short.toString('hex'), /at least 32 bytes/], // valid base64 of 24 bytes
      ['not base64 at all!' + short.toString('hex'), /must be base64.*characters/],
    ];
    for (const [value, expected] of cases) {
      const err = (() => {
        try {
          peeringSecret('peerings[0].secret', value);
        } catch (e) {
          return e as InputError;
        }
        assert.fail('accepted a bad secret');
      })();
      assert.ok(err instanceof InputError);
      assert.equal(err.field, 'peerings[0].secret');
      assert.match(err.message, expected);
      const text = `${err.message} ${JSON.stringify(err.value)} ${inspect(err)}`;
      for (const form of [short.toString('hex'), short.toString('base64'), short.toString('base64').replace(/=+$/, '')]) {
        assert.ok(!text.includes(form), `error echoes the secret: ${text}`);
      }
    }
  });

  it('prints a Secret as [redacted] everywhere', () => {
    const s = secret();
    const holder = { secret: s, nested: { key: s } };
    for (const text of [String(s), `${s}`, JSON.stringify(holder), inspect(holder, { depth: 5, showHidden: true })]) {
      assert.ok(!text.includes(secretBytes.toString('hex')) && !text.includes(secretBytes.toString('base64')), text);
      assert.ok(text.includes('[redacted]'), text);
    }
    assert.equal(hex(s), secretBytes.toString('hex'));
  });
});
