import assert from 'node:assert/strict';
import { networkFamily, requireOtherFamily } from '../../src/api/secondary-family';
import { InputError } from '../../src/errors';
import { parseCidr } from '../../src/net/cidr';

describe('the secondary family is the other one (every document with a secondary)', () => {
  const v4 = parseCidr('v4', '10.0.0.0/16');
  const v6 = parseCidr('v6', 'fd00:a::/48');

  it('reads a family from a network parsed or as written', () => {
    assert.deepEqual([v4, v6, '10.0.0.0/16', 'fd00:a::/48', '::/0'].map(networkFamily), [4, 6, 4, 6, 6]);
  });

  it('passes a secondary of the other family, either family primary, parsed or as written', () => {
    for (const [primary, secondary] of [
      [v4, v6],
      [v6, v4],
      ['10.0.0.0/16', 'fd00:a::/48'],
      ['fd00:a::/48', v4],
    ] as const)
      assert.doesNotThrow(() => requireOtherFamily(['podCIDR', primary], ['secondary.podCIDR', secondary]));
  });

  it("refuses a secondary of the primary's family, naming the caller's field of it and its value", () => {
    const refused = (
      primary: Parameters<typeof requireOtherFamily>[0],
      secondary: Parameters<typeof requireOtherFamily>[1],
      reason: string,
    ) =>
      assert.throws(
        () => requireOtherFamily(primary, secondary),
        (err: unknown) =>
          err instanceof InputError && err.field === secondary[0] && err.value === String(secondary[1]) && err.reason === reason,
      );
    refused(
      ['spec.podCIDR', '10.5.0.0/16'],
      ['spec.secondary.podCIDR', '10.6.0.0/16'],
      "is IPv4, as spec.podCIDR 10.5.0.0/16 is: a secondary holds the other IP family's networks",
    );
    refused(
      ['peers[0].remotePodCIDR', v6],
      ['peers[0].secondary.remotePodCIDR', 'fd00:b::/48'],
      "is IPv6, as peers[0].remotePodCIDR fd00:a::/48 is: a secondary holds the other IP family's networks",
    );
  });
});
