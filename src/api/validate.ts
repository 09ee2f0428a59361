/**
 * Checking a document against its schema, with ajv compiling the schema at its first use; the first
 * problem becomes an InputError (schema-errors.ts). The agent's own documents are checked by validators
 * compiled at build time instead (compiled-validators.ts).
 */
import type { Static, TSchema } from '@sinclair/typebox';
import Ajv, { type ValidateFunction } from 'ajv';
import { checkWith } from './schema-errors';
import { validatorFormats } from './validator-formats';

/** `verbose`: the messages (schema-errors.ts) read the failing schema and value from each error. */
const ajv = new Ajv({ allErrors: false, verbose: true, strict: true, formats: validatorFormats });

const compiled = new WeakMap<TSchema, ValidateFunction>();

/**
 * `value` checked against `schema`: the same value, now typed by it. Throws an InputError naming the
 * first problem (its field under `root`) and changes nothing.
 */
export function checkDocument<T extends TSchema>(schema: T, value: unknown, root = ''): Static<T> {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return checkWith<Static<T>>(validate, value, root);
}
