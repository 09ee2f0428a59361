/**
 * Checking a custom resource against its CRD's openAPIV3Schema as kube-apiserver does: fields the schema
 * does not know are pruned (or, under `fieldValidation=Strict`, refused), then every violation becomes a
 * cause of a 422 Invalid in kube-openapi's words (`spec.podCIDR in body must be of type cidr: "..."`),
 * with the field path (`spec.peers[0].endpoint.port`) the client can show.
 */
import { createHash } from 'node:crypto';
import type { default as Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { kubernetesFormats } from './formats';
import { type KubeObject, isRecord } from './kube-object';
import type { StatusCause } from './status';

type Schema = Record<string, unknown>;

/** Every violation (each is a cause of the 422), with the failing schema and value (`verbose`), whatever keywords a CRD holds. */
export const crdValidatorOptions: Options = { allErrors: true, strict: false, verbose: true, formats: kubernetesFormats };

/** The fields of ObjectMeta: `metadata` is pruned to these, whatever the CRD says. */
const objectMetaFields = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

/** The OpenAPI 3.0 schema of a CRD as a JSON Schema ajv compiles (nullable, boolean exclusive bounds, known formats). */
export function toJsonSchema(schema: Schema): Schema {
  const out: Schema = {};
  const type = schema['x-kubernetes-int-or-string'] ? ['integer', 'string'] : schema.type;
  if (type !== undefined) out.type = schema.nullable && typeof type === 'string' ? [type, 'null'] : type;
  for (const k of [
    'enum',
    'pattern',
    'minimum',
    'maximum',
    'minLength',
    'maxLength',
    'minItems',
    'maxItems',
    'uniqueItems',
    'multipleOf',
    'required',
    'minProperties',
    'maxProperties',
  ]) {
    if (schema[k] !== undefined) out[k] = schema[k];
  }
  for (const [bound, exclusive] of [
    ['minimum', 'exclusiveMinimum'],
    ['maximum', 'exclusiveMaximum'],
  ] as const) {
    if (schema[exclusive] === true) {
      out[exclusive] = schema[bound];
      delete out[bound];
    }
  }
  if (typeof schema.format === 'string' && Object.hasOwn(kubernetesFormats, schema.format)) out.format = schema.format;
  if (isRecord(schema.properties))
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, toJsonSchema(v as Schema)]));
  if (isRecord(schema.items)) out.items = toJsonSchema(schema.items);
  if (isRecord(schema.additionalProperties)) out.additionalProperties = toJsonSchema(schema.additionalProperties);
  for (const k of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(schema[k])) out[k] = (schema[k] as Schema[]).map(toJsonSchema);
  if (isRecord(schema.not)) out.not = toJsonSchema(schema.not);
  // metadata is ObjectMeta whatever the CRD writes (the real server checks it separately).
  if (isRecord(out.properties) && isRecord(out.properties.metadata)) out.properties.metadata = { type: 'object' };
  return out;
}

const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);

/** Removes what `schema` does not know from `value` (in place); the paths removed, in document order. */
function prune(value: unknown, schema: Schema, path: string, removed: string[]): void {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true && !isRecord(schema.properties)) return;
  if (Array.isArray(value)) {
    if (isRecord(schema.items)) value.forEach((item, i) => prune(item, schema.items as Schema, `${path}[${i}]`, removed));
    return;
  }
  if (!isRecord(value)) return;
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  for (const key of Object.keys(value)) {
    // Own properties only: a key named `constructor` or `__proto__` is as unknown as any other.
    const child =
      (properties && Object.hasOwn(properties, key) ? properties[key] : undefined) ??
      (isRecord(schema.additionalProperties) ? schema.additionalProperties : undefined);
    if (child) prune(value[key], child as Schema, join(path, key), removed);
    else if (schema['x-kubernetes-preserve-unknown-fields'] !== true && schema.additionalProperties !== true) {
      removed.push(join(path, key));
      delete value[key];
    }
  }
}

/** `/spec/peers/0/port` → `spec.peers[0].port`. */
function fieldPath(pointer: string, child?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  return parts.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : join(path, part)), '');
}

/** How Go's field.Error prints a bad value: strings quoted, numbers and booleans bare. */
function goValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  return typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

const jsonType = (value: unknown) =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'array'
      : Number.isInteger(value)
        ? 'integer'
        : typeof value === 'object'
          ? 'object'
          : typeof value;

export const invalidValue = (field: string, value: unknown, detail: string): StatusCause => ({
  reason: 'FieldValueInvalid',
  message: `Invalid value: ${goValue(value)}: ${detail}`,
  field,
});

/** field.Required: `Required value`, with a detail if given. */
export const required = (field: string, detail = ''): StatusCause => ({
  reason: 'FieldValueRequired',
  message: detail ? `Required value: ${detail}` : 'Required value',
  field,
});

/** field.NotSupported: `Unsupported value: "x": supported values: "a", "b"`. */
export const unsupported = (field: string, value: unknown, supported: string[]): StatusCause => ({
  reason: 'FieldValueNotSupported',
  message: `Unsupported value: ${JSON.stringify(value ?? '')}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  field,
});

function cause(error: ErrorObject): StatusCause {
  const field = fieldPath(error.instancePath);
  const schema = (error.parentSchema ?? {}) as Schema;
  const inBody = `${field} in body`;
  switch (error.keyword) {
    case 'required':
      return {
        reason: 'FieldValueRequired',
        message: 'Required value',
        field: fieldPath(error.instancePath, (error.params as { missingProperty: string }).missingProperty),
      };
    case 'type': {
      const type = Array.isArray(schema.type) ? schema.type.filter((t) => t !== 'null').join(',') : String(schema.type);
      return {
        reason: 'FieldValueTypeInvalid',
        message: `Invalid value: "${jsonType(error.data)}": ${inBody} must be of type ${type}: "${jsonType(error.data)}"`,
        field,
      };
    }
    case 'enum':
      return {
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: ${goValue(error.data)}: supported values: ${(schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        field,
      };
    case 'format':
      return invalidValue(field, error.data, `${inBody} must be of type ${schema.format}: ${JSON.stringify(error.data)}`);
    case 'pattern':
      return invalidValue(field, error.data, `${inBody} should match '${schema.pattern}'`);
    case 'minimum':
      return invalidValue(field, error.data, `${inBody} should be greater than or equal to ${schema.minimum}`);
    case 'exclusiveMinimum':
      return invalidValue(field, error.data, `${inBody} should be greater than ${schema.exclusiveMinimum}`);
    case 'maximum':
      return invalidValue(field, error.data, `${inBody} should be less than or equal to ${schema.maximum}`);
    case 'exclusiveMaximum':
      return invalidValue(field, error.data, `${inBody} should be less than ${schema.exclusiveMaximum}`);
    case 'minItems':
      return invalidValue(field, (error.data as unknown[]).length, `${inBody} should have at least ${schema.minItems} items`);
    case 'maxItems':
      return {
        reason: 'FieldValueTooMany',
        message: `Too many: ${(error.data as unknown[]).length}: must have at most ${schema.maxItems} items`,
        field,
      };
    case 'minLength':
      return invalidValue(field, error.data, `${inBody} should be at least ${schema.minLength} chars long`);
    case 'maxLength':
      return { reason: 'FieldValueTooLong', message: `Too long: may not be longer than ${schema.maxLength}`, field };
    default:
      return invalidValue(field, error.data, `${inBody} ${error.message ?? `fails ${error.keyword}`}`);
  }
}

export interface SchemaChecker {
  /** Drops the fields the schema does not know from `object` (in place); their paths (`spec.foo`, `metadata.bar`). */
  prune(object: KubeObject): string[];
  /** Every violation of the schema, as 422 causes. */
  validate(object: KubeObject): StatusCause[];
}

/** A JSON Schema's key among the validators the build compiled: sha256 of its JSON text, 16 hex digits. */
export const schemaDigest = (schema: Schema) => createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 16);

let compiledAtBuild: Record<string, ValidateFunction> | undefined;
let compiler: Ajv | undefined;

/**
 * The validator of a JSON Schema (toJsonSchema's): the build compiled those of the chart's CRDs
 * (lab/src/write-validators.ts), so a lab's API server loads no ajv compiler; another CRD's is compiled here.
 */
function validatorOf(schema: Schema): ValidateFunction {
  compiledAtBuild ??= require('./generated-crd-validators.js') as Record<string, ValidateFunction>;
  const built = compiledAtBuild[schemaDigest(schema)];
  if (built) return built;
  compiler ??= new (require('ajv') as typeof import('ajv')).default(crdValidatorOptions);
  return compiler.compile(schema);
}

/** The checker of one CRD version's openAPIV3Schema. */
export function schemaChecker(openAPIV3Schema: Schema): SchemaChecker {
  const validate = validatorOf(toJsonSchema(openAPIV3Schema));
  // apiVersion, kind and metadata are always kept (metadata is pruned to ObjectMeta's fields above).
  const properties = {
    ...(openAPIV3Schema.properties as Schema),
    apiVersion: {},
    kind: {},
    metadata: { 'x-kubernetes-preserve-unknown-fields': true },
  };
  const root: Schema = { ...openAPIV3Schema, properties };
  return {
    prune(object) {
      const removed: string[] = [];
      for (const key of Object.keys(object.metadata)) {
        if (!objectMetaFields.has(key)) {
          removed.push(`metadata.${key}`);
          delete object.metadata[key];
        }
      }
      prune(object, root, '', removed);
      return removed;
    },
    validate(object) {
      if (validate(object)) return [];
      return validate.errors!.map(cause);
    },
  };
}

/** How an object's name is checked (apimachinery pkg/api/validation: NameIsDNSSubdomain, NameIsDNSLabel, NameIsDNS1035Label). */
export type NameFormat = 'subdomain' | 'label' | 'dns1035';

const nameFormats: Record<NameFormat, { pattern: RegExp; max: number; message: string }> = {
  subdomain: {
    pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    max: 253,
    message: `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
  },
  label: {
    pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
    max: 63,
    message: `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
  },
  dns1035: {
    pattern: /^[a-z]([-a-z0-9]*[a-z0-9])?$/,
    max: 63,
    message: `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
  },
};

/** Why `value` is no name of `format`, at `field` (IsDNS1123Subdomain, IsDNS1123Label, IsDNS1035Label). */
export function validateNameFormat(value: string, format: NameFormat, field = 'metadata.name'): StatusCause[] {
  const { pattern, max, message } = nameFormats[format];
  const causes: StatusCause[] = [];
  if (value.length > max) causes.push(invalidValue(field, value, `must be no more than ${max} characters`));
  if (!pattern.test(value)) causes.push(invalidValue(field, value, message));
  return causes;
}
