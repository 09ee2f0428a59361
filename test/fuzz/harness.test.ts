/**
 * The fuzz harness fails on each kind of defect it is there to find: a crash, a leaked internal error,
 * a refusal naming no field, a refusal that changed state, a hang. A harness that passed them would
 * make every fuzz suite a test that cannot fail.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type FuzzSurface, type Verdict, accepted, checkInput, documentTexts, mutationsOf, pathsOf, refused } from '../support/fuzz';

const surface = (feed: (input: string) => Promise<Verdict>, extra: Partial<FuzzSurface<string>> = {}): FuzzSurface<string> => ({
  name: 'test surface',
  inputs: fc.string(),
  feed,
  timeoutMs: 200,
  ...extra,
});

describe('fuzz harness', () => {
  it('passes an accepted input and a clear refusal', async () => {
    assert.deepEqual(
      await checkInput(
        surface(async () => accepted),
        'x',
      ),
      accepted,
    );
    const clear = refused('spec.podCIDR: not a network (got "x")');
    assert.deepEqual(
      await checkInput(
        surface(async () => clear),
        'x',
      ),
      clear,
    );
  });

  it('fails a crash, leaked internals, a refusal naming no field, a changed state and a hang', async () => {
    await assert.rejects(
      checkInput(
        surface(async () => {
          throw new TypeError('boom');
        }),
        'x',
      ),
      /boom/,
    );
    await assert.rejects(
      checkInput(
        surface(async () => refused("spec: Cannot read properties of undefined (reading 'x')")),
        'x',
      ),
      /leaks internals/,
    );
    await assert.rejects(
      checkInput(
        surface(async () => refused('spec: failed\n    at readSpec (/src/spec.js:10:3)')),
        'x',
      ),
      /leaks internals/,
    );
    await assert.rejects(
      checkInput(
        surface(async () => refused('something went wrong')),
        'x',
      ),
      /names no field/,
    );
    let state = 0;
    await assert.rejects(
      checkInput(
        surface(
          async () => {
            state++;
            return refused('spec.x: no (got 1)');
          },
          { state: () => state },
        ),
        'x',
      ),
      /changed the state/,
    );
    await assert.rejects(
      checkInput(
        surface(() => new Promise(() => {})),
        'x',
      ),
      /no answer within 200 ms \(a hang\)/,
    );
  });

  it('prepares each input before the state is read, so what the input finds is not taken for its change', async () => {
    const calls: string[] = [];
    const prepared = surface(
      async () => {
        calls.push('feed');
        return refused('spec.x: no (got 1)');
      },
      { prepare: (input) => void calls.push(`prepare ${input}`), state: () => void calls.push('state') },
    );
    await checkInput(prepared, 'x');
    assert.deepEqual(calls, ['prepare x', 'state', 'feed', 'state']);
  });

  it('mutates every field of a document, and texts include cut-short and prototype-keyed ones', () => {
    const valid = { a: { b: [1, 2] }, c: 'x' };
    assert.deepEqual(pathsOf(valid), [[], ['a'], ['a', 'b'], ['a', 'b', 0], ['a', 'b', 1], ['c']]);
    const mutated = fc.sample(mutationsOf(valid), { seed: 1, numRuns: 300 });
    assert.ok(
      mutated.some((m) => JSON.stringify(m) !== JSON.stringify(valid)),
      'no mutation changed the document',
    );
    const texts = fc.sample(documentTexts(valid), { seed: 1, numRuns: 300 });
    assert.ok(
      texts.some((t) => t.startsWith('{"__proto__"')),
      'no text with an own __proto__ key',
    );
    assert.ok(
      texts.some((t) => {
        try {
          JSON.parse(t);
          return false;
        } catch {
          return true;
        }
      }),
      'no text that is not JSON',
    );
    assert.ok(
      Object.hasOwn(JSON.parse(texts.find((t) => t.startsWith('{"__proto__"'))!), '__proto__'),
      'JSON.parse keeps __proto__ as an own key',
    );
  });
});
