/**
 * The imported EndpointSlices: every endpoint in exactly one slice of its exporter, family and ports, at
 * most 100 a slice; and the property the goal of O(1) writes per endpoint change rests on: from any
 * plan, one endpoint changed, added or removed writes one slice (an update, a create or a delete),
 * whatever the number of endpoints.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ImportedEndpoint, ImportedGroup } from '../../src/services/offer-check';
import { type EndpointSliceContent, importedSliceName, planEndpointSlices } from '../../src/services/endpoint-slices';

const http = [{ name: 'http', protocol: 'TCP' as const, port: 8080 }];
const ep = (host: number, ready = true): ImportedEndpoint => ({
  address: `10.71.${host >> 8}.${host & 255}`,
  ready,
  serving: ready,
  terminating: false,
});
const group = (cluster: string, endpoints: readonly ImportedEndpoint[], addressType: 'IPv4' | 'IPv6' = 'IPv4'): ImportedGroup => ({
  cluster,
  addressType,
  ports: http,
  endpoints,
});

/** The slices that differ between two plans: changed, added or removed. */
function written(before: readonly EndpointSliceContent[], after: readonly EndpointSliceContent[]): string[] {
  const text = (s: EndpointSliceContent | undefined) => JSON.stringify(s);
  const names = new Set([...before, ...after].map((s) => s.name));
  return [...names].filter((n) => text(before.find((s) => s.name === n)) !== text(after.find((s) => s.name === n)));
}

function assertWellFormed(groups: readonly ImportedGroup[], slices: readonly EndpointSliceContent[], max: number): void {
  for (const g of groups) {
    const mine = slices.filter((s) => s.cluster === g.cluster && s.addressType === g.addressType);
    const listed = mine.flatMap((s) => s.endpoints);
    assert.deepEqual(listed.map((e) => e.address).sort(), g.endpoints.map((e) => e.address).sort(), 'every endpoint once');
    for (const e of listed)
      assert.deepEqual(
        e,
        g.endpoints.find((w) => w.address === e.address),
      );
  }
  for (const s of slices) assert.ok(s.endpoints.length > 0 && s.endpoints.length <= max, `${s.name}: ${s.endpoints.length}`);
  assert.equal(new Set(slices.map((s) => s.name)).size, slices.length);
}

describe('services: imported EndpointSlices', () => {
  it('packs 1,000 endpoints of one cluster into 10 slices, one cluster per slice', () => {
    const slices = planEndpointSlices(
      'cart',
      [
        group(
          'cluster-b',
          Array.from({ length: 1000 }, (_, i) => ep(i)),
        ),
        group('cluster-c', [ep(5)]),
      ],
      [],
    );
    assert.equal(slices.filter((s) => s.cluster === 'cluster-b').length, 10);
    assert.equal(slices.filter((s) => s.cluster === 'cluster-c').length, 1);
    assert.ok(slices.every((s) => s.name.startsWith(`imported-cart-${s.cluster}-`)));
  });

  it('names slices apart where service and cluster names join alike', () => {
    assert.notEqual(importedSliceName('a-b', 'c', 0), importedSliceName('a', 'b-c', 0));
    assert.ok(importedSliceName('x'.repeat(63), 'y'.repeat(63), 99).length <= 253);
  });

  it('rewrites one slice of 1,000 endpoints when one goes unready, and deletes the slices of a cluster gone', () => {
    const all = Array.from({ length: 1000 }, (_, i) => ep(i));
    const before = planEndpointSlices('cart', [group('cluster-b', all), group('cluster-c', [ep(1)])], []);
    const flipped = all.map((e, i) => (i === 517 ? { ...e, ready: false, serving: false } : e));
    const after = planEndpointSlices('cart', [group('cluster-b', flipped), group('cluster-c', [ep(1)])], before);
    assert.equal(written(before, after).length, 1);
    const gone = planEndpointSlices('cart', [group('cluster-b', flipped)], after);
    assert.deepEqual(
      written(after, gone),
      after.filter((s) => s.cluster === 'cluster-c').map((s) => s.name),
    );
  });

  it('moves no endpoint that stays, writes one slice per change, and stays well formed (property)', () => {
    const max = 8;
    const hostsArb = fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 40 });
    const changeArb = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), host: fc.integer({ min: 0, max: 60 }) }),
      fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat() }),
    );
    fc.assert(
      fc.property(hostsArb, fc.array(changeArb, { maxLength: 12 }), (hosts, changes) => {
        let endpoints = hosts.map((h) => ep(h));
        let slices = planEndpointSlices('cart', [group('cluster-b', endpoints)], [], max);
        assertWellFormed([group('cluster-b', endpoints)], slices, max);
        for (const change of changes) {
          const before = slices;
          if (change.kind === 'add') {
            if (endpoints.some((e) => e.address === ep(change.host).address)) continue;
            endpoints = [...endpoints, ep(change.host)];
          } else if (endpoints.length === 0) continue;
          else if (change.kind === 'remove') endpoints = endpoints.filter((_, i) => i !== change.at % endpoints.length);
          else endpoints = endpoints.map((e, i) => (i === change.at % endpoints.length ? { ...e, ready: !e.ready } : e));
          slices = planEndpointSlices('cart', [group('cluster-b', endpoints)], before, max);
          assertWellFormed([group('cluster-b', endpoints)], slices, max);
          assert.equal(written(before, slices).length, 1, `${change.kind}: ${written(before, slices).join(', ')}`);
          // An endpoint that stays is in the slice it was in.
          for (const s of before)
            for (const e of s.endpoints) {
              const now = slices.find((n) => n.endpoints.some((x) => x.address === e.address));
              if (now) assert.equal(now.name, s.name);
            }
        }
      }),
    );
  });

  it('keeps families and port sets apart, and repairs a slice overfilled by hand', () => {
    const v6: ImportedEndpoint = { address: 'fd00:71::5', ready: true, serving: true, terminating: false };
    const other = { ...group('cluster-b', [ep(9)]), ports: [{ name: 'grpc', protocol: 'TCP' as const, port: 9090 }] };
    const slices = planEndpointSlices('cart', [group('cluster-b', [ep(1)]), group('cluster-b', [v6], 'IPv6'), other], []);
    assert.equal(slices.length, 3);
    const overfilled: EndpointSliceContent = {
      ...slices[0]!,
      ...group(
        'cluster-b',
        Array.from({ length: 5 }, (_, i) => ep(i)),
      ),
    };
    const repaired = planEndpointSlices('cart', [group('cluster-b', overfilled.endpoints)], [overfilled], 3);
    assertWellFormed([group('cluster-b', overfilled.endpoints)], repaired, 3);
  });
});
