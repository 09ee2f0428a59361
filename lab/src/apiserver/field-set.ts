/**
 * A set of field paths of an object, as structured-merge-diff's fieldpath.Set: what a manager owns, what
 * an update added, changed or removed. A path is a list of path elements written as FieldsV1 writes them
 * (sigs.k8s.io/structured-merge-diff fieldpath/serialize-pe.go): `f:<name>` a field of a map, `k:<keys>`
 * a list-map item by its key fields (`k:{"name":"app"}`), `v:<value>` a set item, `i:<index>` an item of
 * a list with no keys. The set is a trie: at each level, the elements that are themselves members, and
 * the elements under which more members are. It is stored on objects as FieldsV1, where `.` marks an
 * element that is a member and has members below it.
 */
import { isRecord } from './kube-object';

export interface FieldSet {
  readonly members: ReadonlySet<string>;
  readonly children: ReadonlyMap<string, FieldSet>;
}

const emptyFieldSet: FieldSet = { members: new Set(), children: new Map() };

export const isEmptyFieldSet = (set: FieldSet): boolean => set.members.size === 0 && set.children.size === 0;

/** A set of the given paths. */
export function fieldSetOf(paths: readonly (readonly string[])[]): FieldSet {
  return paths.reduce<FieldSet>((set, path) => union(set, single(path)), emptyFieldSet);
}

function single(path: readonly string[]): FieldSet {
  const [head, ...rest] = path;
  if (head === undefined) return emptyFieldSet;
  if (rest.length === 0) return { members: new Set([head]), children: new Map() };
  return { members: new Set(), children: new Map([[head, single(rest)]]) };
}

/** Without empty children: two sets with the same members have the same shape. */
function normal(members: Set<string>, children: Map<string, FieldSet>): FieldSet {
  for (const [element, child] of children) if (isEmptyFieldSet(child)) children.delete(element);
  return { members, children };
}

export function union(a: FieldSet, b: FieldSet): FieldSet {
  const children = new Map(a.children);
  for (const [element, child] of b.children) children.set(element, union(children.get(element) ?? emptyFieldSet, child));
  return normal(new Set([...a.members, ...b.members]), children);
}

export function difference(a: FieldSet, b: FieldSet): FieldSet {
  const children = new Map<string, FieldSet>();
  for (const [element, child] of a.children) children.set(element, difference(child, b.children.get(element) ?? emptyFieldSet));
  return normal(new Set([...a.members].filter((m) => !b.members.has(m))), children);
}

export function intersection(a: FieldSet, b: FieldSet): FieldSet {
  const children = new Map<string, FieldSet>();
  for (const [element, child] of a.children) {
    const other = b.children.get(element);
    if (other) children.set(element, intersection(child, other));
  }
  return normal(new Set([...a.members].filter((m) => b.members.has(m))), children);
}

/** `a` without every member that is, or is under, a member of `b` (fieldpath.Set.RecursiveDifference). */
export function recursiveDifference(a: FieldSet, b: FieldSet): FieldSet {
  const children = new Map<string, FieldSet>();
  for (const [element, child] of a.children) {
    if (b.members.has(element)) continue;
    children.set(element, recursiveDifference(child, b.children.get(element) ?? emptyFieldSet));
  }
  return normal(new Set([...a.members].filter((m) => !b.members.has(m))), children);
}

/** The members of `set` under `prefix` (with the prefix), e.g. only what is under `f:status`. */
export function within(set: FieldSet, prefix: string): FieldSet {
  const child = set.children.get(prefix);
  return normal(new Set(set.members.has(prefix) ? [prefix] : []), new Map(child ? [[prefix, child]] : []));
}

/** Every member's path, in FieldsV1's order (a member before what is under it, elements sorted). */
export function paths(set: FieldSet, prefix: readonly string[] = []): string[][] {
  const elements = [...new Set([...set.members, ...set.children.keys()])].sort(compareElements);
  return elements.flatMap((element) => [
    ...(set.members.has(element) ? [[...prefix, element]] : []),
    ...paths(set.children.get(element) ?? emptyFieldSet, [...prefix, element]),
  ]);
}

/** fieldpath.PathElement.Less: fields, then keys, then values, then indexes; each by its text. */
const kindOrder = { f: 0, k: 1, v: 2, i: 3 } as Record<string, number>;
function compareElements(a: string, b: string): number {
  const byKind = (kindOrder[a[0]!] ?? 4) - (kindOrder[b[0]!] ?? 4);
  if (byKind !== 0) return byKind;
  if (a.startsWith('i:')) return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

/** FieldsV1 (the JSON trie kube-apiserver stores in metadata.managedFields[].fieldsV1). */
export function toFieldsV1(set: FieldSet): Record<string, unknown> {
  const elements = [...new Set([...set.members, ...set.children.keys()])].sort(compareElements);
  const out: Record<string, unknown> = {};
  for (const element of elements) {
    const child = set.children.get(element);
    const below = child ? toFieldsV1(child) : {};
    out[element] = set.members.has(element) && child ? { '.': {}, ...below } : below;
  }
  return out;
}

/** A FieldsV1 read back, or the error fieldpath.Set.FromJSON gives for what is not one. */
export function fromFieldsV1(fields: unknown): FieldSet | { error: string } {
  if (!isRecord(fields)) return { error: 'expected an object' };
  const members = new Set<string>();
  const children = new Map<string, FieldSet>();
  for (const [element, below] of Object.entries(fields)) {
    if (element === '.') continue;
    if (!/^[fkvi]:/.test(element)) return { error: `parsing error: unknown prefix in ${JSON.stringify(element)}` };
    if (!isRecord(below)) return { error: `expected an object at ${JSON.stringify(element)}` };
    const child = fromFieldsV1(below);
    if ('error' in child) return child;
    if (Object.keys(below).length === 0 || Object.hasOwn(below, '.')) members.add(element);
    if (!isEmptyFieldSet(child)) children.set(element, child);
  }
  return { members, children };
}

/** Go's %v of a JSON value (value.ToString): strings quoted, the rest as JSON. */
const goValue = (value: unknown) => JSON.stringify(value);

/** A path as fieldpath.Path.String() writes it in a conflict: `.spec.containers[name="app"].image`. */
export function describePath(path: readonly string[]): string {
  return path
    .map((element) => {
      const text = element.slice(2);
      switch (element[0]) {
        case 'f':
          return `.${text}`;
        case 'k':
          return `[${Object.entries(JSON.parse(text) as Record<string, unknown>)
            .map(([k, v]) => `${k}=${goValue(v)}`)
            .join(',')}]`;
        case 'v':
          return `[=${text}]`;
        default:
          return `[${text}]`;
      }
    })
    .join('');
}
