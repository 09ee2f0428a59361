/**
 * Server-side printing: kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the
 * meta.k8s.io/v1 Table it gets, so the columns of `kubectl get` are the server's: Name, a CRD's
 * additionalPrinterColumns (or a built-in's own), cells converted by column type as the real server does
 * (a `date` becomes an age like `5m`).
 */
import { type KubeObject, isRecord } from './kube-object';

export type ColumnType = 'string' | 'integer' | 'number' | 'boolean' | 'date';

export interface ColumnDefinition {
  name: string;
  type: ColumnType;
  format: string;
  description: string;
  priority: number;
}

export interface Column {
  definition: ColumnDefinition;
  cell(object: KubeObject, now: Date): unknown;
}

/** How much of each object a row carries (the request's includeObject; kubectl reads the metadata). */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** k8s.io/apimachinery's duration.HumanDuration: `45s`, `3m20s`, `2h5m`, `3d4h`, `1y20d`. */
function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  const withRest = (big: number, unit: string, rest: number, restUnit: string) =>
    rest === 0 ? `${big}${unit}` : `${big}${unit}${rest}${restUnit}`;
  if (minutes < 10) return withRest(minutes, 'm', seconds % 60, 's');
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return withRest(hours, 'h', minutes % 60, 'm');
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return withRest(days, 'd', hours % 24, 'h');
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return withRest(years, 'y', days % 365, 'd');
  return `${years}y`;
}

/** A cell of `type` from a JSON value (the real server's cellForJSONValue): what does not fit is empty. */
function cellOf(type: ColumnType, value: unknown, now: Date): unknown {
  if (value === undefined || value === null) return null;
  switch (type) {
    case 'integer':
      return Number.isInteger(value) ? value : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date': {
      const time = typeof value === 'string' ? Date.parse(value) : NaN;
      return Number.isNaN(time) ? null : humanDuration(now.getTime() - time);
    }
    case 'string':
      return typeof value === 'string' ? value : JSON.stringify(value);
  }
}

type Step = { field: string } | { index: number } | { filter: string; equals: string };

/**
 * A printer column's JSONPath, the subset CRDs use: fields, list indexes and equality filters,
 * `.spec.node.role`, `.status.conditions[0].type`, `.status.conditions[?(@.type=="Ready")].status`
 * (the first match, as the real server prints it). Anything else is refused when the CRD is loaded.
 */
function compileJsonPath(path: string): (object: unknown) => unknown {
  const step = /\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[\?\(@\.([A-Za-z_][A-Za-z0-9_-]*)\s*==\s*(?:"([^"]*)"|'([^']*)')\)\]/gy;
  const steps: Step[] = [];
  let m: RegExpExecArray | null;
  while (step.lastIndex < path.length && (m = step.exec(path))) {
    if (m[1] !== undefined) steps.push({ field: m[1] });
    else if (m[2] !== undefined) steps.push({ index: Number(m[2]) });
    else steps.push({ filter: m[3]!, equals: m[4] ?? m[5]! });
  }
  if (steps.length === 0 || step.lastIndex !== path.length)
    throw new Error(`unsupported printer column JSONPath ${path} (fields, [n] and [?(@.field=="value")] only)`);
  return (object) => {
    let at: unknown = object;
    for (const s of steps) {
      if ('field' in s) at = isRecord(at) ? at[s.field] : undefined;
      else if ('index' in s) at = Array.isArray(at) ? at[s.index] : undefined;
      else at = Array.isArray(at) ? at.find((item) => isRecord(item) && item[s.filter] === s.equals) : undefined;
      if (at === undefined) return undefined;
    }
    return at;
  };
}

const definition = (name: string, type: ColumnType, description = '', priority = 0, format = ''): ColumnDefinition => ({
  name,
  type,
  format,
  description,
  priority,
});

export const nameColumn: Column = {
  definition: definition('Name', 'string', 'Name must be unique within a namespace.', 0, 'name'),
  cell: (object) => object.metadata.name,
};

export const ageColumn: Column = {
  definition: definition('Age', 'date', 'CreationTimestamp is a timestamp representing the server time when this object was created.'),
  cell: (object, now) => cellOf('date', object.metadata.creationTimestamp, now),
};

/** A column read at `jsonPath` (a CRD's additionalPrinterColumn, or a built-in's). */
export function pathColumn(spec: {
  name: string;
  type: ColumnType;
  jsonPath: string;
  description?: string;
  priority?: number;
  format?: string;
}): Column {
  const read = compileJsonPath(spec.jsonPath);
  return {
    definition: definition(spec.name, spec.type, spec.description, spec.priority, spec.format),
    cell: (object, now) => cellOf(spec.type, read(object), now),
  };
}

/** A column computed from the object (a Node's STATUS from its Ready condition); `-o wide` only when its priority is above 0. */
export const computedColumn = (name: string, cell: (object: KubeObject) => unknown, type: ColumnType = 'string', priority = 0): Column => ({
  definition: definition(name, type, '', priority),
  cell,
});

function rowObject(object: KubeObject, include: IncludeObject): unknown {
  if (include === 'None') return undefined;
  if (include === 'Object') return object;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata };
}

/** A meta.k8s.io/v1 Table of `objects`, one row each. */
export function toTable(
  columns: Column[],
  objects: KubeObject[],
  listMeta: Record<string, unknown>,
  include: IncludeObject,
  now = new Date(),
): Record<string, unknown> {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: columns.map((c) => c.definition),
    rows: objects.map((object) => ({ cells: columns.map((c) => c.cell(object, now)), object: rowObject(object, include) })),
  };
}
