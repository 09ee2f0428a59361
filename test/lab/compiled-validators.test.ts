/**
 * The lab's validators compiled at build time (lab/src/write-validators.ts) are their schemas' own: the
 * topology's, and those of the chart's CRDs as the lab's API server checks custom resources against them
 * (every one compiled at build, so the server loads no ajv compiler). Each makes of a document what a
 * run-time compile makes of it, the same errors included; a stale build fails here.
 */
import assert from 'node:assert/strict';
import Ajv, { type ValidateFunction } from 'ajv';
import { resources } from '../../src/api/resources';
import { apiVersion } from '../../src/api/resource-names';
import { crdFiles } from '../../src/api/write-crds';
import { documentValidatorOptions } from '../../src/api/write-validators';
import { parseCrds, servedVersion } from '../../lab/src/apiserver/resource-types';
import { crdValidatorOptions, schemaDigest, toJsonSchema } from '../../lab/src/apiserver/validation';
import { labSchemas } from '../../lab/src/write-validators';
import { outcomes, schemaSamples } from '../support/schema-samples';

const builtCrds = require('../../lab/src/apiserver/generated-crd-validators.js') as Record<string, ValidateFunction>;

describe("the lab's validators compiled at build time", () => {
  for (const [name, schema] of Object.entries(labSchemas)) {
    it(`${name}: accepts and refuses as its schema compiled now`, () => {
      const samples = schemaSamples(schema);
      const compiled = new Ajv(documentValidatorOptions).compile(schema);
      assert.equal(compiled(samples[0]), true, 'the full sample is valid');
      assert.deepEqual(
        outcomes(require(`../../lab/src/generated-validators/${name}.js`) as ValidateFunction, samples),
        outcomes(compiled, samples),
      );
    });
  }

  const crds = parseCrds([...crdFiles().values()]);
  for (const resource of resources) {
    it(`the ${resource.plural} CRD: compiled at build, accepts and refuses as its schema compiled now`, () => {
      const crd = crds.find((c) => (c.spec as { names: { kind: string } }).names.kind === resource.kind)!;
      const schema = toJsonSchema(servedVersion(crd).schema.openAPIV3Schema);
      const built = builtCrds[schemaDigest(schema)];
      assert.ok(built, 'compiled at build');
      const object = {
        type: 'object',
        properties: {
          apiVersion: { const: apiVersion },
          kind: { const: resource.kind },
          metadata: { type: 'object', properties: { name: { type: 'string' } } },
          spec: resource.spec,
          ...(resource.status ? { status: resource.status } : {}),
        },
      };
      const samples = schemaSamples(object);
      const compiled = new Ajv(crdValidatorOptions).compile(schema);
      assert.equal(compiled(samples[0]), true, 'the full sample is valid');
      assert.deepEqual(outcomes(built, samples), outcomes(compiled, samples));
    });
  }
});
