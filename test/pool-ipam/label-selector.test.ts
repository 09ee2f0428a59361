import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError } from '../../src/errors';
import { formatSelector, parseLabelSelector, selectorMatches } from '../../src/pool-ipam/label-selector';
import type { LabelSelector } from '../../src/pool-ipam/model';

const node = { zone: 'east', 'topology.kubernetes.io/rack': 'r1', gpu: '' };
const refusedAt = (field: string, pattern: RegExp) => (err: unknown) =>
  err instanceof InputError && err.field === field && pattern.test(err.message);

describe('pool IPAM: label selectors', () => {
  it('an empty selector selects everything, also a resource without labels', () => {
    assert.equal(selectorMatches({}, node), true);
    assert.equal(selectorMatches({ matchLabels: {}, matchExpressions: [] }, {}), true);
  });

  it('matchLabels needs every pair, with the exact value', () => {
    assert.equal(selectorMatches({ matchLabels: { zone: 'east', 'topology.kubernetes.io/rack': 'r1' } }, node), true);
    assert.equal(selectorMatches({ matchLabels: { zone: 'east', 'topology.kubernetes.io/rack': 'r2' } }, node), false);
    assert.equal(selectorMatches({ matchLabels: { gpu: '' } }, node), true);
    assert.equal(selectorMatches({ matchLabels: { ssd: '' } }, node), false, 'an absent key is not an empty value');
  });

  it('In needs the key with one of the values', () => {
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['west', 'east'] }] }, node), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['west'] }] }, node), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'region', operator: 'In', values: ['east'] }] }, node), false);
  });

  it('NotIn holds when the key is absent or has none of the values', () => {
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['east'] }] }, node), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['west'] }] }, node), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['west', 'east'] }] }, node), false);
  });

  it('Exists and DoesNotExist look at the key only', () => {
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, node), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'ssd', operator: 'Exists' }] }, node), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'ssd', operator: 'DoesNotExist' }] }, node), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }, node), false);
  });

  it('matchLabels and every expression must all hold (AND)', () => {
    const selector: LabelSelector = {
      matchLabels: { zone: 'east' },
      matchExpressions: [
        { key: 'gpu', operator: 'Exists' },
        { key: 'zone', operator: 'NotIn', values: ['east'] },
      ],
    };
    assert.equal(selectorMatches(selector, node), false);
    assert.equal(selectorMatches({ ...selector, matchExpressions: selector.matchExpressions!.slice(0, 1) }, node), true);
  });

  it('prints the kubectl form', () => {
    const selector: LabelSelector = {
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'zone', operator: 'In', values: ['a', 'b'] },
        { key: 'tier', operator: 'NotIn', values: ['db'] },
        { key: 'gpu', operator: 'Exists' },
        { key: 'canary', operator: 'DoesNotExist' },
      ],
    };
    assert.equal(formatSelector(selector), 'app=web,zone in (a,b),tier notin (db),gpu,!canary');
    assert.equal(formatSelector({}), '<everything>');
  });

  it('parses a valid selector and refuses invalid ones, naming the field', () => {
    const text = {
      matchLabels: { 'example.com/zone': 'east' },
      matchExpressions: [
        { key: 'gpu', operator: 'Exists' },
        { key: 'zone', operator: 'In', values: ['a'] },
      ],
    };
    assert.deepEqual(parseLabelSelector('spec.nodeAffinity', text), text);
    const f = 'spec.nodeAffinity';
    assert.throws(() => parseLabelSelector(f, 'zone=east'), refusedAt(f, /expected a label selector object/));
    assert.throws(() => parseLabelSelector(f, { matchLabel: {} }), refusedAt(`${f}.matchLabel`, /unknown field/));
    assert.throws(() => parseLabelSelector(f, { matchLabels: { 'bad key': 'x' } }), refusedAt(`${f}.matchLabels`, /key name "bad key"/));
    assert.throws(
      () => parseLabelSelector(f, { matchLabels: { 'Example.com/zone': 'x' } }),
      refusedAt(`${f}.matchLabels`, /prefix "Example\.com" is not a DNS subdomain/),
    );
    assert.throws(
      () => parseLabelSelector(f, { matchLabels: { zone: 'x'.repeat(64) } }),
      refusedAt(`${f}.matchLabels`, /is not a label value/),
    );
    assert.throws(() => parseLabelSelector(f, { matchLabels: { zone: 3 } }), refusedAt(`${f}.matchLabels`, /a label value is a string/));
    assert.throws(
      () =>
        parseLabelSelector(f, {
          matchExpressions: [
            { key: 'a', operator: 'Exists' },
            { key: 'zone', operator: 'in', values: ['a'] },
          ],
        }),
      refusedAt(`${f}.matchExpressions[1].operator`, /expected In, NotIn, Exists or DoesNotExist/),
    );
    assert.throws(
      () => parseLabelSelector(f, { matchExpressions: [{ key: 'zone', operator: 'In', values: [] }] }),
      refusedAt(`${f}.matchExpressions[0].values`, /In needs a non-empty list/),
    );
    assert.throws(
      () => parseLabelSelector(f, { matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }),
      refusedAt(`${f}.matchExpressions[0].values`, /Exists takes no values/),
    );
    assert.throws(
      () => parseLabelSelector(f, { matchExpressions: [{ key: '-zone', operator: 'Exists' }] }),
      refusedAt(`${f}.matchExpressions[0].key`, /key name "-zone"/),
    );
  });

  it('properties: matchLabels {k: v} is the expression k In [v]; NotIn is the negation of In; adding a requirement never selects more', () => {
    const key = fc.constantFrom('a', 'b', 'c');
    const value = fc.constantFrom('x', 'y', 'z');
    const labelsArb = fc.dictionary(key, value, { maxKeys: 3 });
    const reqArb = fc.oneof(
      fc.record({
        key,
        operator: fc.constantFrom('In' as const, 'NotIn' as const),
        values: fc.uniqueArray(value, { minLength: 1, maxLength: 3 }),
      }),
      fc.record({ key, operator: fc.constantFrom('Exists' as const, 'DoesNotExist' as const) }),
    );
    fc.assert(
      fc.property(labelsArb, key, value, fc.array(reqArb, { maxLength: 3 }), reqArb, (labels, k, v, reqs, extra) => {
        assert.equal(
          selectorMatches({ matchLabels: { [k]: v } }, labels),
          selectorMatches({ matchExpressions: [{ key: k, operator: 'In', values: [v] }] }, labels),
        );
        assert.equal(
          selectorMatches({ matchExpressions: [{ key: k, operator: 'NotIn', values: [v] }] }, labels),
          !selectorMatches({ matchExpressions: [{ key: k, operator: 'In', values: [v] }] }, labels),
        );
        assert.equal(
          selectorMatches({ matchExpressions: [{ key: k, operator: 'DoesNotExist' }] }, labels),
          !selectorMatches({ matchExpressions: [{ key: k, operator: 'Exists' }] }, labels),
        );
        if (selectorMatches({ matchExpressions: [...reqs, extra] }, labels))
          assert.equal(selectorMatches({ matchExpressions: reqs }, labels), true);
      }),
    );
  });
});
