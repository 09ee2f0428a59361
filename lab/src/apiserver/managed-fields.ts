/**
 * An object's metadata.managedFields as kube-apiserver keeps them (k8s.io/apimachinery
 * pkg/util/managedfields/internal; structured-merge-diff merge/update.go): for each manager (a name, an
 * operation, Apply or Update, the apiVersion of an Update, the subresource), the set of fields it owns,
 * as FieldsV1. An update gives its manager the fields it added or changed and takes them from the
 * others; an apply gives its manager exactly the fields of its configuration, removes the fields it
 * applied last time and no longer applies (unless another manager owns them), and is refused with a
 * conflict when it changes a field another manager owns, unless forced. Pure: entries in, entries out.
 */
import {
  type FieldSet,
  describePath,
  difference,
  fieldSetOf,
  fromFieldsV1,
  intersection,
  isEmptyFieldSet,
  paths,
  toFieldsV1,
  union,
} from './field-set';
import { type KubeObject, isRecord } from './kube-object';
import type { MergeSchema } from './merge-schema';
import { ApiError } from './status';
import { compare, merge, removeItems, toFieldSet } from './structured-merge';

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  /** RFC 3339, when the manager last changed the object. */
  time?: string;
  /** 'status' for a write through the status subresource, '' otherwise. */
  subresource: string;
  fields: FieldSet;
}

/** Who writes, and where: a manager's name, the object's apiVersion, the subresource written ('' for the object). */
export interface Writer {
  manager: string;
  apiVersion: string;
  subresource: string;
}

/**
 * The fields an endpoint's writes may own (the strategy's reset fields): the object's endpoint owns no
 * status when the kind has a status subresource, the status endpoint nothing but status.
 */
export type FieldScope = (set: FieldSet) => FieldSet;

/** BuildManagerIdentifier: an applier is the same manager whatever apiVersion it applies. */
const identity = (e: Pick<ManagedFieldsEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'>) =>
  JSON.stringify([e.manager, e.operation, e.operation === 'Apply' ? '' : e.apiVersion, e.subresource]);

/** The fields no manager owns (internal/stripmeta.go): the type, the object's identity and what the server sets. */
const serverFields = fieldSetOf([
  ['f:apiVersion'],
  ['f:kind'],
  ['f:metadata'],
  ...['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName', 'generation', 'managedFields', 'resourceVersion'].map(
    (name) => ['f:metadata', `f:${name}`],
  ),
]);

/** The entries of metadata.managedFields, or why they are not managed fields (DecodeManagedFields). */
export function decodeManagedFields(value: unknown): ManagedFieldsEntry[] | { error: string } {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return { error: 'managedFields is not a list' };
  const entries: ManagedFieldsEntry[] = [];
  for (const [i, entry] of value.entries()) {
    if (!isRecord(entry)) return { error: `managed fields entry ${i} is not an object` };
    if (entry.operation !== 'Apply' && entry.operation !== 'Update') return { error: 'operation must be `Apply` or `Update`' };
    if (typeof entry.apiVersion !== 'string' || entry.apiVersion === '') return { error: 'apiVersion must not be empty' };
    if (entry.fieldsType !== 'FieldsV1')
      return {
        error: entry.fieldsType
          ? `invalid fieldsType ${JSON.stringify(entry.fieldsType)} in managed fields entry ${i}`
          : `missing fieldsType in managed fields entry ${i}`,
      };
    const fields = fromFieldsV1(entry.fieldsV1 ?? {});
    if ('error' in fields) return { error: `error decoding set: ${fields.error}` };
    entries.push({
      manager: typeof entry.manager === 'string' ? entry.manager : '',
      operation: entry.operation,
      apiVersion: entry.apiVersion,
      ...(typeof entry.time === 'string' ? { time: entry.time } : {}),
      subresource: typeof entry.subresource === 'string' ? entry.subresource : '',
      fields,
    });
  }
  return entries;
}

/** metadata.managedFields of `entries` (encodeManagedFields: Apply before Update, then oldest first, then by manager), undefined for none. */
export function encodeManagedFields(entries: readonly ManagedFieldsEntry[]): Record<string, unknown>[] | undefined {
  const kept = entries.filter((e) => !isEmptyFieldSet(e.fields));
  if (kept.length === 0) return undefined;
  const seconds = (e: ManagedFieldsEntry) => (e.time ? Date.parse(e.time) : 0);
  const order = (p: ManagedFieldsEntry, q: ManagedFieldsEntry) =>
    p.operation.localeCompare(q.operation) ||
    seconds(p) - seconds(q) ||
    (p.manager < q.manager ? -1 : p.manager > q.manager ? 1 : 0) ||
    (p.apiVersion < q.apiVersion ? -1 : p.apiVersion > q.apiVersion ? 1 : 0) ||
    (p.subresource < q.subresource ? -1 : p.subresource > q.subresource ? 1 : 0);
  return [...kept].sort(order).map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    ...(e.time ? { time: e.time } : {}),
    fieldsType: 'FieldsV1',
    fieldsV1: toFieldsV1(e.fields),
    ...(e.subresource ? { subresource: e.subresource } : {}),
  }));
}

/** A list that asks for the managers to be forgotten: empty, or one empty entry (isResetManagedFields). */
const isReset = (value: unknown) =>
  Array.isArray(value) &&
  (value.length === 0 ||
    (value.length === 1 && isRecord(value[0]) && Object.values(value[0]).every((v) => v === undefined || v === null || v === '')));

/**
 * The managers an update starts from (decodeLiveOrNew): those the request sends, so a client may
 * rewrite them (kubectl does, moving client-side apply's fields to its server-side manager), unless it
 * sends none, or ones that do not decode (then the live object's, so a client that knows nothing of
 * managedFields loses none), or asks for a reset (then none); a subresource's write always starts from
 * the live object's.
 */
export function managersBeforeUpdate(live: KubeObject | undefined, sent: unknown, subresource: string): ManagedFieldsEntry[] {
  const liveManagers = decodeManagedFields(live?.metadata.managedFields);
  const fromLive = 'error' in liveManagers ? [] : liveManagers;
  if (subresource !== '') return fromLive;
  if (isReset(sent)) return [];
  const sentManagers = decodeManagedFields(sent);
  return 'error' in sentManagers || sentManagers.length === 0 ? fromLive : sentManagers;
}

/** The object without its managers: what changed between two objects is never their managedFields. */
const withoutManagedFields = (object: KubeObject): KubeObject => {
  const { managedFields: _m, ...metadata } = object.metadata;
  return { ...object, metadata };
};

/**
 * The managers after `writer` updates `before` to `after` (managedfieldsupdater.go with
 * merge.Updater.Update): the writer takes every field it added or changed (from whoever owned it),
 * fields removed leave every manager, and the writer's time is now if it changed anything.
 */
export function recordUpdate(
  before: KubeObject,
  after: KubeObject,
  managers: readonly ManagedFieldsEntry[],
  writer: Writer,
  scope: FieldScope,
  schema: MergeSchema,
  now: string,
): ManagedFieldsEntry[] {
  const change = compare(withoutManagedFields(before), withoutManagedFields(after), schema);
  const changed = scope(union(change.modified, change.added));
  const removed = scope(change.removed);
  const kept = managers.map((e) => ({ ...e, fields: difference(difference(e.fields, changed), removed) }));
  const owned = difference(changed, serverFields);
  if (isEmptyFieldSet(owned)) return kept.filter((e) => !isEmptyFieldSet(e.fields));
  const mine = identity({ ...writer, operation: 'Update' });
  const previous = kept.find((e) => identity(e) === mine);
  const entry: ManagedFieldsEntry = {
    ...writer,
    operation: 'Update',
    time: now,
    fields: union(previous?.fields ?? fieldSetOf([]), owned),
  };
  return [...kept.filter((e) => identity(e) !== mine), entry].filter((e) => !isEmptyFieldSet(e.fields));
}

/** printManager: `"kubectl"` for an applier, `"x" with subresource "status" using v1` for an updater. */
function describeManager(e: ManagedFieldsEntry): string {
  const named = e.subresource
    ? `${JSON.stringify(e.manager)} with subresource ${JSON.stringify(e.subresource)}`
    : JSON.stringify(e.manager);
  return e.operation === 'Update' ? `${named} using ${e.apiVersion}` : named;
}

/** internal/conflict.go NewConflictError: 409 Conflict, a FieldManagerConflict cause per field, the message grouped by manager. */
function conflictError(conflicts: readonly { manager: ManagedFieldsEntry; path: string[] }[]): ApiError {
  const sorted = [...conflicts].sort((a, b) => {
    const [p, q] = [describeManager(a.manager), describeManager(b.manager)];
    return p < q ? -1 : p > q ? 1 : 0;
  });
  const causes = sorted.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${describeManager(c.manager)}`,
    field: describePath(c.path),
  }));
  const [only] = sorted;
  if (sorted.length === 1 && only)
    return new ApiError(
      409,
      'Conflict',
      `Apply failed with 1 conflict: conflict with ${describeManager(only.manager)}: ${describePath(only.path)}`,
      {
        causes,
      },
    );
  const groups = new Map<string, string[]>();
  for (const c of sorted) groups.set(describeManager(c.manager), [...(groups.get(describeManager(c.manager)) ?? []), describePath(c.path)]);
  const lines = [...groups].flatMap(([manager, fields]) => [`conflicts with ${manager}:`, ...fields.map((f) => `- ${f}`)]);
  return new ApiError(409, 'Conflict', `Apply failed with ${sorted.length} conflicts: ${lines.join('\n')}`, { causes });
}

export interface Applied {
  object: KubeObject;
  managers: ManagedFieldsEntry[];
}

/**
 * `config` applied by `writer` to `live` (merge.Updater.Apply): merged in by the schema; what the
 * writer applied last time and applies no more removed, unless another manager owns it; the writer
 * owns exactly the configuration's fields. A changed field another manager owns is a conflict (409)
 * unless `force`, which takes it from that manager; the same value as another's is shared ownership.
 */
export function recordApply(
  live: KubeObject,
  config: KubeObject,
  managers: readonly ManagedFieldsEntry[],
  writer: Writer,
  force: boolean,
  scope: FieldScope,
  schema: MergeSchema,
  now: string,
): Applied {
  const mine = identity({ ...writer, operation: 'Apply' });
  const previous = managers.find((e) => identity(e) === mine);
  const applied = scope(difference(toFieldSet(config, schema), serverFields));
  const base = withoutManagedFields(live);
  let object = merge(base, config, schema) as KubeObject;
  const others = managers.filter((e) => identity(e) !== mine);
  if (previous && !isEmptyFieldSet(previous.fields)) {
    // updater.go prune, addBackOwnedItems, addBackDanglingItems: remove only what was last applied and nobody owns now.
    const owned = others.reduce((set, e) => union(set, e.fields), applied);
    const all = toFieldSet(object, schema);
    const pruned = removeItems(object, previous.fields, schema);
    const ownedBack = removeItems(object, difference(all, union(toFieldSet(pruned, schema), owned)), schema);
    object = removeItems(object, intersection(difference(all, toFieldSet(ownedBack, schema)), previous.fields), schema) as KubeObject;
  }
  const change = compare(base, object, schema);
  const changed = scope(union(change.modified, change.added));
  const removed = scope(change.removed);
  const conflicts = others.flatMap((e) => paths(intersection(e.fields, changed)).map((path) => ({ manager: e, path })));
  if (conflicts.length > 0 && !force) throw conflictError(conflicts);
  const changedObject = JSON.stringify(base) !== JSON.stringify(object);
  const entry: ManagedFieldsEntry = {
    ...writer,
    operation: 'Apply',
    ...(changedObject || !previous?.time ? { time: now } : { time: previous.time }),
    fields: applied,
  };
  const kept = others.map((e) => ({ ...e, fields: difference(difference(e.fields, changed), removed) }));
  return { object, managers: [...kept, entry].filter((e) => !isEmptyFieldSet(e.fields)) };
}
