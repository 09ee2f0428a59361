/**
 * A document checked by an ajv validator (compiled at build time: compiled-validators.ts): the first
 * problem becomes an InputError naming the field path (`peers[0].endpoint.address`) and the value, in
 * the words of Strait's own parsers for the formats (a CIDR with host bits set says which network was
 * meant). Loads no ajv: the processes check documents with the build's validators alone.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { InputError } from '../errors';
import type { ApiFormatName } from './formats';

/**
 * The formats' parsers, loaded at the first refusal of a format: a validator with a format has loaded
 * them already (validator-formats.ts), and one without (the CNI plugin's) must load no package.
 */
const formats = () => require('./formats') as typeof import('./formats');

/**
 * The annotation by which a schema words what its value must be: with `{ mustBe: 'true or false' }`, any
 * failure of the value itself (its type, pattern, format, length) reads `must be true or false` instead of
 * the generic `expected a boolean`: the words of the CNI errors, which the plugin and the pool IPAM's
 * service answer with. Ajv checks nothing by it (write-validators.ts declares it to ajv).
 */
export const mustBeKeyword = 'mustBe';

/** A field the schema does not know, with the fields it does: a reader may answer it apart (CNI's code 2). */
export class UnknownFieldError extends InputError {
  constructor(
    field: string,
    value: unknown,
    readonly known: string[],
  ) {
    super(field, value, `unknown field (known: ${known.join(', ')})`);
  }
}

/** The field of a document whose root is unnamed (`root` ''), when the document itself is wrong (not an object). */
const topLevelField = 'document';

/** A key that reads as itself in a dotted path; any other (`a b`, `x.y/z`, '') is quoted in brackets. */
const plainKey = /^[A-Za-z_$][\w$-]*$/;

/** `/peers/0/endpoint` → `peers[0].endpoint`, under `root`; an unusual key as `spec["a b"]`. */
function fieldPath(root: string, pointer: string, child?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  const step = (path: string, part: string) => {
    if (/^\d+$/.test(part)) return `${path}[${part}]`;
    if (!plainKey.test(part)) return `${path}[${JSON.stringify(part)}]`;
    return path === '' ? part : `${path}.${part}`;
  };
  return parts.reduce(step, root) || topLevelField;
}

type Schema = {
  type?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  properties?: Record<string, unknown>;
  [mustBeKeyword]?: string;
};

/** "a whole number from 1 to 65535", "a number greater than 0 and at most 3600". */
function range(schema: Schema): string {
  const what = schema.type === 'integer' ? 'a whole number' : 'a number';
  if (schema.minimum !== undefined && schema.maximum !== undefined) return `expected ${what} from ${schema.minimum} to ${schema.maximum}`;
  const bounds = [
    schema.exclusiveMinimum !== undefined
      ? `greater than ${schema.exclusiveMinimum}`
      : schema.minimum !== undefined
        ? `at least ${schema.minimum}`
        : undefined,
    schema.exclusiveMaximum !== undefined
      ? `less than ${schema.exclusiveMaximum}`
      : schema.maximum !== undefined
        ? `at most ${schema.maximum}`
        : undefined,
  ].filter((b) => b !== undefined);
  return `expected ${what} ${bounds.join(' and ')}`;
}

/**
 * The error to report: ajv lists a failed `anyOf`'s branches before the anyOf itself; the branch that
 * got furthest into the value (a wrong field of an object, rather than "not a string") says most.
 */
function reported(errors: ErrorObject[]): ErrorObject {
  const branches = errors.filter((e) => e.keyword !== 'anyOf');
  if (branches.length === errors.length) return errors[0]!;
  const depth = (e: ErrorObject) => e.instancePath.split('/').length * 2 + (e.keyword === 'type' ? 0 : 1);
  return branches.reduce((best, e) => (depth(e) > depth(best) ? e : best));
}

function problem(root: string, error: ErrorObject): InputError {
  const schema = (error.parentSchema ?? {}) as Schema;
  const field = fieldPath(root, error.instancePath);
  // `required` and `additionalProperties` are about a child of the value: its own words are not theirs.
  if (schema[mustBeKeyword] !== undefined && error.keyword !== 'required' && error.keyword !== 'additionalProperties') {
    return new InputError(field, error.data, `must be ${schema[mustBeKeyword]}`);
  }
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      return new InputError(fieldPath(root, error.instancePath, missing), undefined, 'is missing');
    }
    case 'additionalProperties': {
      const key = (error.params as { additionalProperty: string }).additionalProperty;
      return new UnknownFieldError(
        fieldPath(root, error.instancePath, key),
        (error.data as Record<string, unknown>)[key],
        Object.keys(schema.properties ?? {}),
      );
    }
    case 'type':
      return new InputError(
        field,
        error.data,
        `expected ${schema.type === 'object' ? 'an object' : schema.type === 'array' ? 'a list' : schema.type === 'integer' ? 'a whole number' : `a ${schema.type}`}`,
      );
    case 'enum':
      return new InputError(field, error.data, `must be one of ${(schema.enum ?? []).join(', ')}`);
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return new InputError(field, error.data, range(schema));
    case 'minItems':
      return new InputError(field, error.data, `expected at least ${schema.minItems} item${schema.minItems === 1 ? '' : 's'}`);
    case 'format':
    case 'pattern':
      if (schema.format !== undefined && schema.format in formats().apiFormats) {
        return new InputError(
          field,
          error.data,
          formats().formatProblem(schema.format as ApiFormatName, error.data) ?? `must be a ${schema.format}`,
        );
      }
  }
  return new InputError(field, error.data, error.message ?? `fails ${error.keyword}`);
}

/**
 * `value` checked by `validate` (compiled with `verbose`, which the messages need): the same value, typed
 * as the caller says. Throws an InputError naming the first problem (its field under `root`) and changes
 * nothing.
 */
export function checkWith<T>(validate: ValidateFunction, value: unknown, root: string): T {
  if (!validate(value)) throw problem(root, reported(validate.errors!));
  return value as T;
}
