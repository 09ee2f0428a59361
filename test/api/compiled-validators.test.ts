/**
 * The validators the build compiled (src/api/write-validators.ts) are their schemas' own: each makes of a
 * document what a run-time compile of its schema makes of it, the same errors included. A stale build (a
 * schema changed, dist/src/api/generated-validators/ not written again) fails here.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import type { CompiledValidatorName } from '../../src/api/compiled-validators';
import { documentSchemas, documentValidatorOptionsOf } from '../../src/api/write-validators';
import { outcomes, schemaSamples } from '../support/schema-samples';

const generated = join(__dirname, '../../src/api/generated-validators');

describe('the validators compiled at build time', () => {
  it('are one module per schema', () =>
    assert.deepEqual(
      readdirSync(generated).sort(),
      Object.keys(documentSchemas)
        .map((name) => `${name}.js`)
        .sort(),
    ));

  for (const [name, schema] of Object.entries(documentSchemas)) {
    it(`${name}: accepts and refuses as its schema compiled now`, () => {
      const samples = schemaSamples(schema);
      const compiled = new Ajv(documentValidatorOptionsOf(name as CompiledValidatorName)).compile(schema);
      assert.equal(compiled(structuredClone(samples[0])), true, 'the full sample is valid');
      // Each on its own copies: the requests' validators drop unknown keys from what they check.
      assert.deepEqual(
        outcomes(require(join(generated, name)) as ValidateFunction, structuredClone(samples)),
        outcomes(compiled, structuredClone(samples)),
      );
    });
  }
});
