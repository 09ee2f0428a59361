/**
 * The value operations of structured-merge-diff (typed/tofieldset.go, compare.go, merge.go, remove.go)
 * on JSON objects, by a merge schema (merge-schema.ts): the set of fields a value sets, what changed
 * between two values, an applied configuration merged into a live object, and fields removed from one.
 * Pure: values in, new values out.
 */
import { type FieldSet, fieldSetOf } from './field-set';
import { isRecord } from './kube-object';
import { type ListType, type MergeSchema, keyDefaults } from './merge-schema';

/** A value a merge schema refuses (a list-map item without a key, two items with one key), as structured-merge-diff words it. */
export class StructureError extends Error {
  override readonly name = 'StructureError';
}

/** Sets a key as JSON has it, own, whatever its name (`__proto__` included). */
const setOwn = (object: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });

const field = (name: string) => `f:${name}`;

/** fieldpath.Path.String of the path elements written as FieldsV1 keys (for errors only). */
const where = (path: readonly string[]) => path.map((e) => (e.startsWith('f:') ? `.${e.slice(2)}` : `[${e.slice(2)}]`)).join('');

/** The path element of a list item: `v:<value>` in a set, `k:{...}` (its key fields, sorted) in a list-map. */
function itemElement(item: unknown, list: ListType, index: number, path: readonly string[]): string {
  if (list.type === 'set') return `v:${JSON.stringify(item)}`;
  if (list.type === 'atomic') return `i:${index}`;
  const keys: Record<string, unknown> = {};
  for (const key of [...list.keys].sort()) {
    const value = isRecord(item) && item[key] !== undefined ? item[key] : keyDefaults[key];
    if (value === undefined)
      throw new StructureError(
        `${where(path)}: element ${index}: associative list with keys has an element that omits key field ${JSON.stringify(key)} (and doesn't have default value)`,
      );
    keys[key] = value;
  }
  return `k:${JSON.stringify(keys)}`;
}

const granularMap = (value: unknown, schema: MergeSchema) => isRecord(value) && !schema.atomicMap;
const granularList = (value: unknown, schema: MergeSchema): value is unknown[] => Array.isArray(value) && schema.list.type !== 'atomic';

/** The items of a granular list by path element; with `unique`, two items with one element are refused. */
function indexItems(list: unknown[], schema: MergeSchema, path: readonly string[], unique: boolean): Map<string, unknown> {
  const items = new Map<string, unknown>();
  list.forEach((item, i) => {
    const element = itemElement(item, schema.list, i, path);
    if (items.has(element) && unique) throw new StructureError(`${where(path)}: duplicate entries for key ${where([element])}`);
    if (!items.has(element)) items.set(element, item);
  });
  return items;
}

/** The fields `value` sets (typed.TypedValue.ToFieldSet): its leaves, atomic lists and maps, and its list items. */
export function toFieldSet(value: unknown, schema: MergeSchema): FieldSet {
  const found: string[][] = [];
  const visit = (v: unknown, s: MergeSchema, path: string[]) => {
    if (isRecord(v) && (path.length === 0 || !s.atomicMap)) {
      for (const [key, child] of Object.entries(v)) visit(child, s.field(key), [...path, field(key)]);
    } else if (granularList(v, s)) {
      for (const [element, item] of indexItems(v, s, path, true)) {
        visit(item, s.item(), [...path, element]);
        found.push([...path, element]);
      }
    } else if (path.length > 0) {
      found.push(path);
    }
  };
  visit(value, schema, []);
  return fieldSetOf(found);
}

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

const isEmptyValue = (value: unknown) =>
  value === undefined || (isRecord(value) && Object.keys(value).length === 0) || (Array.isArray(value) && value.length === 0);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * What changed from `before` to `after` (typed.TypedValue.Compare): leaves added, modified or removed,
 * and the maps, lists and items that appeared or went (so an Update's manager owns `f:labels` with `.`
 * when it added the labels). Two empty or absent maps or lists compare as leaves.
 */
export function compare(before: unknown, after: unknown, schema: MergeSchema): Comparison {
  const added: string[][] = [];
  const modified: string[][] = [];
  const removed: string[][] = [];
  const walk = (l: unknown, r: unknown, s: MergeSchema, path: string[]) => {
    const bothEmpty = isEmptyValue(l) && isEmptyValue(r);
    if (!bothEmpty && (l === undefined || granularMap(l, s)) && (r === undefined || granularMap(r, s))) {
      const lm = (l ?? {}) as Record<string, unknown>;
      const rm = (r ?? {}) as Record<string, unknown>;
      for (const key of new Set([...Object.keys(lm), ...Object.keys(rm)]))
        walk(Object.hasOwn(lm, key) ? lm[key] : undefined, Object.hasOwn(rm, key) ? rm[key] : undefined, s.field(key), [
          ...path,
          field(key),
        ]);
    } else if (!bothEmpty && (l === undefined || granularList(l, s)) && (r === undefined || granularList(r, s))) {
      const li = indexItems((l ?? []) as unknown[], s, path, false);
      const ri = indexItems((r ?? []) as unknown[], s, path, false);
      for (const element of new Set([...ri.keys(), ...li.keys()])) walk(li.get(element), ri.get(element), s.item(), [...path, element]);
    } else {
      if (path.length === 0) return;
      if (l === undefined) added.push(path);
      else if (r === undefined) removed.push(path);
      else if (!same(l, r)) modified.push(path);
      return;
    }
    if (path.length === 0) return;
    if (l === undefined) added.push(path);
    else if (r === undefined) removed.push(path);
  };
  walk(before, after, schema, []);
  return { added: fieldSetOf(added), modified: fieldSetOf(modified), removed: fieldSetOf(removed) };
}

/**
 * The items of two granular lists merged (merge.go visitListItems): the applied list's order for the
 * items both have and its new items, live-only items kept where they stand.
 */
function mergeList(live: unknown[], applied: unknown[], schema: MergeSchema, path: readonly string[]): unknown[] {
  const rhs = [...indexItems(applied, schema, path, true)];
  const lhs = live.map((item, i) => [itemElement(item, schema.list, i, path), item] as const);
  const inLhs = new Map<string, unknown>();
  for (const [element, item] of lhs) if (!inLhs.has(element)) inLhs.set(element, item);
  const inRhs = new Map(rhs);
  const shared = rhs.filter(([element]) => inLhs.has(element)).map(([element]) => element);
  const merged = new Set<string>();
  const out: unknown[] = [];
  const take = (element: string) => {
    merged.add(element);
    out.push(mergeValue(inLhs.get(element), inRhs.get(element), schema.item(), [...path, element]));
    if (shared[0] === element) shared.shift();
  };
  let l = 0;
  let r = 0;
  while (l < lhs.length || r < rhs.length) {
    const [element, item] = lhs[l] ?? [];
    if (element !== undefined && r < rhs.length) {
      if (element === rhs[r]![0]) {
        take(element);
        l++;
        r++;
        continue;
      }
      // A shared item is placed when the applied list reaches it, in the applied list's order.
      if (inRhs.has(element) && shared[0] !== undefined && shared[0] !== element) {
        l++;
        continue;
      }
    }
    if (element !== undefined && (!inRhs.has(element) || merged.has(element))) {
      if (!inRhs.has(element)) out.push(item);
      l++;
      continue;
    }
    if (r < rhs.length) take(rhs[r++]![0]);
    else l++;
  }
  return out;
}

function mergeValue(live: unknown, applied: unknown, schema: MergeSchema, path: readonly string[]): unknown {
  // A null or absent applied value leaves the live one (merge.go: a nil rhs keeps the lhs).
  if (applied === undefined || (applied === null && live !== undefined)) return live;
  if (granularMap(live, schema) && granularMap(applied, schema)) {
    const out = { ...(live as Record<string, unknown>) };
    for (const [key, value] of Object.entries(applied as Record<string, unknown>))
      setOwn(out, key, mergeValue(Object.hasOwn(out, key) ? out[key] : undefined, value, schema.field(key), [...path, field(key)]));
    return out;
  }
  if (granularList(live, schema) && granularList(applied, schema)) return mergeList(live, applied, schema, path);
  if (granularList(applied, schema)) indexItems(applied, schema, path, true);
  return structuredClone(applied);
}

/** `applied` merged into `live` (typed.TypedValue.Merge): maps by key, sets and list-maps by item, the rest replaced. */
export const merge = (live: unknown, applied: unknown, schema: MergeSchema): unknown => mergeValue(live, applied, schema, []);

/**
 * `value` without the members of `set` (typed.TypedValue.RemoveItems): map keys and list items, with all
 * under them. A map left empty by the removal goes too, as Go's omitempty drops an emptied map or
 * struct of a typed object (`labels` once its last label is removed).
 */
export function removeItems(value: unknown, set: FieldSet, schema: MergeSchema, path: readonly string[] = []): unknown {
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const element = field(key);
      if (set.members.has(element)) continue;
      const below = set.children.get(element);
      const kept = below ? removeItems(child, below, schema.field(key), [...path, element]) : child;
      if (below && isRecord(kept) && Object.keys(kept).length === 0) continue;
      setOwn(out, key, kept);
    }
    return out;
  }
  if (granularList(value, schema)) {
    return value.flatMap((item, i) => {
      const element = itemElement(item, schema.list, i, path);
      if (set.members.has(element)) return [];
      const below = set.children.get(element);
      return [below ? removeItems(item, below, schema.item(), [...path, element]) : item];
    });
  }
  return value;
}
