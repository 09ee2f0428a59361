/**
 * The lab's build step after the product's (`npm run build:ts`): compiles, as ajv standalone code, the
 * lab topology's schema (dist/lab/src/generated-validators/, which topology.ts loads) and the schemas of
 * the chart's CRDs as the lab's API server checks custom resources against them, all in one module as
 * the server checks with every one (dist/lab/src/apiserver/generated-crd-validators.js, which
 * apiserver/validation.ts loads). So no `strait-lab` verb loads TypeBox or ajv's compiler.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { crdFiles } from '../../src/api/write-crds';
import { documentValidatorOptions, validatorsModule, writeValidatorModules } from '../../src/api/write-validators';
import { parseCrds, servedVersion } from './apiserver/resource-types';
import { crdValidatorOptions, schemaDigest, toJsonSchema } from './apiserver/validation';
import type { LabValidatorTypes } from './topology';
import { LabTopologySchema } from './topology-schema';

export const labSchemas: Record<keyof LabValidatorTypes, TSchema> = { labTopology: LabTopologySchema };

/** The chart's CRDs' schemas as the API server compiles them, by digest (what it looks them up by). */
export function crdSchemas(): Record<string, Record<string, unknown>> {
  const schemas = parseCrds([...crdFiles().values()]).map((crd) => toJsonSchema(servedVersion(crd).schema.openAPIV3Schema));
  return Object.fromEntries(schemas.map((schema) => [schemaDigest(schema), schema]));
}

if (require.main === module) {
  writeValidatorModules(
    join(__dirname, 'generated-validators'),
    documentValidatorOptions,
    { module: '../../../src/api/validator-formats', name: 'validatorFormats' },
    labSchemas,
    'lab/src/topology-schema.ts (lab/src/write-validators.ts)',
  );
  writeFileSync(
    join(__dirname, 'apiserver', 'generated-crd-validators.js'),
    validatorsModule(
      crdValidatorOptions,
      { module: './formats', name: 'kubernetesFormats' },
      crdSchemas(),
      "the chart's CRDs (src/api/write-crds.ts; lab/src/write-validators.ts)",
    ),
  );
}
