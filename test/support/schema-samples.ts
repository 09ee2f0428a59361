/**
 * Documents to try validators of one schema on, made from the schema: a full one (every field, each list
 * and map with an item, each string in its format) and variants of it with one thing changed (a field
 * missing, unknown, or another type or string), and a few that are not objects at all. For comparing two
 * validators of a schema (the build's and a run-time compile), not for testing the schema.
 */
type Schema = Record<string, any>;

/** A string in each format of the schemas (Strait's, and date-time). */
const formatSamples: Record<string, string> = {
  cidr: '10.0.0.0/16',
  ip: '10.0.0.1',
  mac: '02:00:00:00:00:01',
  'cluster-id': 'a',
  'node-name': 'n1',
  'lab-name': 'n1',
  'date-time': '2025-01-01T00:00:00Z',
};

/** A string of the schemas' patterns that plain text does not match. */
const patternSamples: Record<string, string> = {
  '^[0-9a-f]{16}$': '0123456789abcdef',
  '^[0-9a-fA-F:.]+(-[0-9a-fA-F:.]+)?$': '10.0.0.1-10.0.0.9',
  '^/[^\\u0000]*$': '/run/strait/ipam.sock',
};

function fullDocument(schema: Schema): unknown {
  if ('const' in schema) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return fullDocument(schema.anyOf[0]);
  switch (schema.type) {
    case 'object': {
      if (schema.properties)
        return Object.fromEntries(
          Object.entries(schema.properties as Record<string, Schema>).map(([key, value]) => [key, fullDocument(value)]),
        );
      const values = Object.values((schema.patternProperties ?? {}) as Record<string, Schema>);
      return values.length > 0 ? { key: fullDocument(values[0]!) } : {};
    }
    case 'array':
      return Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, () => fullDocument(schema.items));
    case 'string':
      return formatSamples[schema.format] ?? patternSamples[schema.pattern] ?? 'text';
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return true;
    case 'null':
      return null;
  }
  throw new Error(`no sample of ${JSON.stringify(schema)}`);
}

type Path = (string | number)[];

/** The path of every value inside `value`. */
function paths(value: unknown, at: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const path = [...at, Array.isArray(value) ? Number(key) : key];
    return [path, ...paths(child, path)];
  });
}

/** A copy of `document` with `change` made to the value at `path` (given its parent and key). */
function changed(document: unknown, path: Path, change: (parent: any, key: string | number) => void): unknown {
  const copy = structuredClone(document);
  let parent: any = copy;
  for (const key of path.slice(0, -1)) parent = parent[key];
  change(parent, path.at(-1)!);
  return copy;
}

/** The full document of `schema`, and variants of it each with one change. */
export function schemaSamples(schema: Schema): unknown[] {
  const full = fullDocument(schema);
  const variants = paths(full).flatMap((path) => [
    changed(full, path, (parent, key) => void (parent[key] = 'not one')),
    changed(full, path, (parent, key) => void (parent[key] = -1)),
    changed(full, path, (parent, key) => (Array.isArray(parent) ? void parent.splice(Number(key), 1) : delete parent[key])),
    changed(
      full,
      path,
      (parent, key) =>
        void (parent[key] = typeof parent[key] === 'object' && parent[key] !== null ? { ...parent[key], unknownField: 1 } : [parent[key]]),
    ),
  ]);
  return [full, ...variants, { ...(full as object), unknownField: 1 }, null, 'text', [], 0];
}

/** What a validator makes of each document: valid, or its errors as plain JSON (without the symbols of TypeBox's schema objects). */
export const outcomes = (validate: (document: unknown) => boolean, documents: unknown[]): unknown[] =>
  documents.map((document) => (validate(document) ? 'valid' : JSON.parse(JSON.stringify((validate as { errors?: unknown }).errors))));
