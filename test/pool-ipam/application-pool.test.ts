import assert from 'node:assert/strict';
import fc from 'fast-check';
import { applicationPoolName, carvePool } from '../../src/pool-ipam/application-pool';
import { formatIpRanges } from '../../src/pool-ipam/ip-ranges';
import { ranges, subnet } from './fixtures';

const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'shop', name: 'web', uid: 'uid-sts-web' };

describe('pool IPAM: application pools carved from a Subnet (rule 1)', () => {
  it('names the pool auto-<kind>-<name>-v<family>-<first 8 hex of SHA-256 of subnet, application, family, interface>', () => {
    // sha256('["s1","apps/v1","StatefulSet","shop","web","uid-sts-web",4,"eth0"]') = cda9a607...
    assert.equal(applicationPoolName('s1', sts, 4, 'eth0'), 'auto-statefulset-web-v4-cda9a607');
  });

  it('shortens long names to a 63-character DNS-1123 label and replaces other characters than [a-z0-9-]', () => {
    const long = applicationPoolName('s1', { ...sts, name: `${'a'.repeat(30)}.b${'c'.repeat(40)}` }, 6, 'eth0');
    assert.equal(long.length, 63);
    assert.match(long, /^auto-statefulset-a{30}-bcc-v6-[0-9a-f]{8}$/);
    const cutAtDot = applicationPoolName('s1', { ...sts, name: `${'a'.repeat(33)}.b${'c'.repeat(40)}` }, 6, 'eth0');
    assert.match(cutAtDot, /^auto-statefulset-a{33}-v6-[0-9a-f]{8}$/, 'no "-" left before the suffix');
    assert.match(applicationPoolName('s1', { ...sts, kind: 'CloneSet', name: 'x' }, 4, 'eth0'), /^auto-cloneset-x-v4-[0-9a-f]{8}$/);
  });

  it('property: names are DNS-1123 labels of at most 63 characters, distinct for distinct inputs', () => {
    const part = fc.stringMatching(/^[a-z0-9][-a-z0-9.]{0,80}$/);
    const input = fc.record({
      subnet: fc.constantFrom('s1', 's2'),
      name: part,
      namespace: fc.constantFrom('a', 'b'),
      uid: fc.constantFrom('u1', 'u2'),
      family: fc.constantFrom(4 as const, 6 as const),
      ifname: fc.constantFrom('eth0', 'net1'),
    });
    fc.assert(
      fc.property(input, input, (a, b) => {
        const name = (i: typeof a) =>
          applicationPoolName(i.subnet, { ...sts, name: i.name, namespace: i.namespace, uid: i.uid }, i.family, i.ifname);
        assert.match(name(a), /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
        if (JSON.stringify(a) !== JSON.stringify(b)) assert.notEqual(name(a), name(b));
        else assert.equal(name(a), name(b));
      }),
    );
  });

  it('carves the lowest free addresses, skipping excludeIPs, other pools, the network, broadcast and gateway addresses', () => {
    const s = subnet('s1', '10.6.0.0/24', ['10.6.0.0-10.6.0.12', '10.6.0.250-10.6.0.255'], ['10.6.0.3'], '10.6.0.1');
    assert.deepEqual(formatIpRanges(carvePool(s, ranges('10.6.0.5-10.6.0.6'), 4)!), ['10.6.0.2', '10.6.0.4', '10.6.0.7-10.6.0.8']);
    assert.deepEqual(formatIpRanges(carvePool(s, ranges('10.6.0.2-10.6.0.12'), 5)!), ['10.6.0.250-10.6.0.254']);
    assert.equal(carvePool(s, ranges('10.6.0.2-10.6.0.12'), 6), undefined, 'only 5 left');
    assert.deepEqual(carvePool(s, [], 0), []);
  });

  it('property: carving takes exactly count free addresses, the lowest ones, or refuses when fewer are free', () => {
    const offsets = fc.uniqueArray(fc.integer({ min: 0, max: 31 }), { maxLength: 24 });
    fc.assert(
      fc.property(offsets, offsets, offsets, fc.nat(20), (ips, excluded, taken, count) => {
        const text = (os: number[]) => os.map((o) => `10.6.0.${o}`);
        const s = subnet('s', '10.6.0.0/27', text(ips), text(excluded), '10.6.0.30');
        const free = [...ips]
          .filter((o) => !excluded.includes(o) && !taken.includes(o) && o !== 0 && o !== 31 && o !== 30)
          .sort((x, y) => x - y);
        const carved = carvePool(s, ranges(...text(taken)), count);
        if (free.length < count) assert.equal(carved, undefined);
        else assert.deepEqual(carved, ranges(...text(free.slice(0, count))));
      }),
    );
  });
});
