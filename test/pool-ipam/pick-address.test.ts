import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatIp } from '../../src/net/cidr';
import { type AddressUse, fnv1a64, pickAddress, poolSize, startOffset } from '../../src/pool-ipam/pick-address';
import { pool, ranges } from './fixtures';

const none: AddressUse = { taken: [], reserved: [], pending: [] };
const picked = (p: ReturnType<typeof pool>, use: Partial<AddressUse> & { start?: bigint } = {}) => {
  const ip = pickAddress(p, { ...none, start: 0n, ...use });
  return ip && formatIp(ip);
};

describe('pool IPAM: picking an address', () => {
  it('never gives the network address, the IPv4 broadcast address nor the gateway', () => {
    const p = pool('a', { subnet: '10.6.0.0/29', ips: ['10.6.0.0-10.6.0.7'], gateway: '10.6.0.1' });
    assert.equal(poolSize(p), 5n);
    assert.equal(picked(p), '10.6.0.2');
    assert.equal(picked(p, { start: 4n }), '10.6.0.6');
    assert.equal(picked(p, { taken: ranges('10.6.0.2-10.6.0.6') }), undefined);
  });

  it('IPv6: never the network (Subnet-Router anycast) address nor the gateway; the last address is a host', () => {
    const p = pool('a', { subnet: 'fd00::/125', ips: ['fd00::-fd00::7'], gateway: 'fd00::1' });
    assert.equal(picked(p), 'fd00::2');
    assert.equal(picked(p, { taken: ranges('fd00::2-fd00::6') }), 'fd00::7');
  });

  it('an IPv4 /31 or /32 (RFC 3021) has no network or broadcast address: every address is a host', () => {
    assert.equal(poolSize(pool('a', { subnet: '10.6.0.0/31', ips: ['10.6.0.0-10.6.0.1'] })), 2n);
    assert.equal(picked(pool('a', { subnet: '10.6.0.4/32', ips: ['10.6.0.4'] })), '10.6.0.4');
    assert.equal(picked(pool('a', { subnet: '10.6.0.0/31', ips: ['10.6.0.0-10.6.0.1'], gateway: '10.6.0.0' })), '10.6.0.1');
  });

  it('skips excluded, reserved, taken and pending addresses', () => {
    const p = pool('a', { ips: ['10.6.0.10-10.6.0.20'], excludeIps: ['10.6.0.10'] });
    assert.equal(picked(p), '10.6.0.11');
    assert.equal(
      picked(p, { reserved: ranges('10.6.0.11'), taken: ranges('10.6.0.12-10.6.0.13'), pending: ranges('10.6.0.14') }),
      '10.6.0.15',
    );
    assert.equal(
      picked(p, { reserved: ranges('10.6.0.11-10.6.0.14'), taken: ranges('10.6.0.15-10.6.0.19'), pending: ranges('10.6.0.20') }),
      undefined,
    );
  });

  it('starts at the start-th usable address, in address order, and wraps around to the lowest free one', () => {
    const p = pool('a', { ips: ['10.6.0.10-10.6.0.12', '10.6.0.30-10.6.0.32'], excludeIps: ['10.6.0.11'] });
    assert.equal(picked(p, { start: 1n }), '10.6.0.12');
    assert.equal(picked(p, { start: 2n }), '10.6.0.30');
    assert.equal(picked(p, { start: 2n, taken: ranges('10.6.0.30-10.6.0.31') }), '10.6.0.32');
    assert.equal(picked(p, { start: 3n, taken: ranges('10.6.0.31-10.6.0.32') }), '10.6.0.10', 'wrapped');
    assert.equal(picked(p, { start: 5n + 4n }), '10.6.0.32', 'start is taken modulo the pool size');
  });

  it('startOffset is the 64-bit FNV-1a of the node name modulo the pool size', () => {
    assert.equal(fnv1a64(''), 0xcbf29ce484222325n);
    assert.equal(fnv1a64('a'), 0xaf63dc4c8601ec8cn);
    assert.equal(fnv1a64('foobar'), 0x85944171f73967e8n);
    assert.equal(startOffset('node-a', 253n), 177n);
    assert.equal(startOffset('node-b', 253n), 96n);
    assert.equal(startOffset('kind-worker', 65534n), 32162n);
    assert.equal(startOffset('node-a', 0n), 0n);
  });

  it('property: the first free address at or after the start, never excluded, reserved, taken, pending, network, broadcast or gateway; undefined only when none is free', () => {
    const offsets = fc.uniqueArray(fc.integer({ min: 0, max: 31 }), { maxLength: 24 });
    const text = (os: number[]) => os.map((o) => `10.6.0.${o}`);
    fc.assert(
      fc.property(
        offsets,
        offsets,
        offsets,
        offsets,
        offsets,
        fc.integer({ min: 0, max: 31 }),
        fc.nat(100),
        (ips, excluded, reserved, taken, pending, gateway, start) => {
          const p = pool('a', { subnet: '10.6.0.0/27', ips: text(ips), excludeIps: text(excluded), gateway: `10.6.0.${gateway}` });
          const use = {
            reserved: ranges(...text(reserved)),
            taken: ranges(...text(taken)),
            pending: ranges(...text(pending)),
            start: BigInt(start),
          };
          const usable = [...ips].filter((o) => !excluded.includes(o) && o !== 0 && o !== 31 && o !== gateway).sort((x, y) => x - y);
          const free = usable.filter((o) => !reserved.includes(o) && !taken.includes(o) && !pending.includes(o));
          const from = usable.length ? usable[start % usable.length]! : 0;
          const expected = free.find((o) => o >= from) ?? free[0];
          const got = pickAddress(p, use);
          assert.equal(got && formatIp(got), expected === undefined ? undefined : `10.6.0.${expected}`);
        },
      ),
    );
  });
});
