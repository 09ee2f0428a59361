/**
 * The validators of the NodeDataplane documents, compiled from their schemas (node-dataplane-resource.ts)
 * at build time: `npm run build:ts` runs write-validators.ts, which writes them as ajv standalone code to
 * generated-validators.js next to this module. So the agent checks its spec without loading TypeBox or
 * ajv's compiler (about 100 ms of its start).
 */
import type { ValidateFunction } from 'ajv';

export type CompiledValidatorName = 'nodeDataplaneSpec' | 'nodeDataplaneObject' | 'nodeDataplaneStatus';

let validators: Record<CompiledValidatorName, ValidateFunction> | undefined;

/**
 * The validator named. Loaded at the first use, with a plain require: the file is not TypeScript, and
 * the build step that writes it loads the modules that use it.
 */
export function compiledValidator(name: CompiledValidatorName): ValidateFunction {
  validators ??= require('./generated-validators.js') as Record<CompiledValidatorName, ValidateFunction>;
  return validators[name];
}
