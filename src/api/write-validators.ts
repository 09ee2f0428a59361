/**
 * The build step after tsc (`npm run build:ts`): compiles the NodeDataplane schemas with ajv into
 * standalone code, dist/src/api/generated-validators.js, which compiled-validators.ts loads. Same options
 * and formats as the run-time compiler (validate.ts), so a document is refused with the same error.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import Ajv, { _ } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import type { CompiledValidatorName } from './compiled-validators';
import { NodeDataplaneObjectSchema, NodeDataplaneSpecSchema, NodeDataplaneStatusSchema } from './node-dataplane-resource';
import { validatorFormats } from './validator-formats';

const schemas: Record<CompiledValidatorName, TSchema> = {
  nodeDataplaneSpec: NodeDataplaneSpecSchema,
  nodeDataplaneObject: NodeDataplaneObjectSchema,
  nodeDataplaneStatus: NodeDataplaneStatusSchema,
};

/** The module's text: one exported validator per schema; the formats' code is required from validator-formats.js. */
export function generatedValidators(): string {
  const ajv = new Ajv({
    allErrors: false,
    verbose: true,
    strict: true,
    formats: validatorFormats,
    code: { source: true, formats: _`require("./validator-formats").validatorFormats` },
  });
  for (const [name, schema] of Object.entries(schemas)) ajv.addSchema(schema, name);
  const header = '// Generated from src/api/node-dataplane-resource.ts by src/api/write-validators.ts (npm run build:ts): do not edit.\n';
  return header + standaloneCode(ajv, Object.fromEntries(Object.keys(schemas).map((name) => [name, name])));
}

if (require.main === module) writeFileSync(join(__dirname, 'generated-validators.js'), generatedValidators());
