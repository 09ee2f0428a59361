/**
 * The shape every kernel-state reconciler shares (routes, rules, FDB, neighbours): read what is in the
 * reconciler's scope, diff it with the desired entries by identity, and apply the difference as one batch
 * of rtnetlink changes. Each entry has an identity (a route's destination and metric, a rule's priority); a desired entry whose
 * identity is missing is added, one whose current entries differ is changed, and current entries whose
 * identity is not desired are deleted.
 */
import { InputError } from '../errors';
import type { NetlinkError } from '../native/error';
import type { NetlinkChange, NetlinkResult } from './rtnetlink';

export interface Diff<T> {
  add: T[];
  /** `from`: every current entry with the identity of `to` (usually one). */
  change: { from: T[]; to: T }[];
  remove: T[];
}

export interface Changes<T> {
  added: T[];
  changed: T[];
  deleted: T[];
  /** The kernel's refusal: errno, code and the operation (e.g. `route add 10.1.0.0/24`). */
  failed: { item: T; error: NetlinkError }[];
}

export interface Identity<T> {
  key: (entry: T) => string;
  /** Whether a current entry already is the desired one (same key assumed). */
  same: (current: T, desired: T) => boolean;
}

/** Pure: the difference that turns `current` into `desired`. Two desired entries with one identity are refused. */
export function diffByIdentity<T>(current: readonly T[], desired: readonly T[], identity: Identity<T>, field = 'desired'): Diff<T> {
  const wanted = new Map<string, T>();
  desired.forEach((entry, index) => {
    const key = identity.key(entry);
    if (wanted.has(key)) throw new InputError(`${field}[${index}]`, entry, `a second entry for ${key}`);
    wanted.set(key, entry);
  });
  const have = new Map<string, T[]>();
  for (const entry of current) {
    const key = identity.key(entry);
    have.set(key, [...(have.get(key) ?? []), entry]);
  }
  const diff: Diff<T> = { add: [], change: [], remove: [] };
  for (const [key, to] of wanted) {
    const from = have.get(key);
    if (!from) diff.add.push(to);
    else if (from.length !== 1 || !identity.same(from[0]!, to)) diff.change.push({ from, to });
  }
  for (const [key, entries] of have) if (!wanted.has(key)) diff.remove.push(...entries);
  return diff;
}

/** How one reconciler writes its entries: the netlink changes for each kind of change. */
export interface Writer<T> {
  add: (entry: T) => NetlinkChange[];
  change: (from: T[], to: T) => NetlinkChange[];
  remove: (entry: T) => NetlinkChange[];
  run: (changes: NetlinkChange[]) => NetlinkResult[];
}

/**
 * Applies a diff in one batch, deletions first (a MAC moving to another VTEP is never sent to both).
 * An entry whose changes all succeeded is reported as done, otherwise as failed with the first error.
 */
export function applyDiff<T>(diff: Diff<T>, writer: Writer<T>): Changes<T> {
  const items: { kind: 'deleted' | 'changed' | 'added'; item: T; steps: NetlinkChange[] }[] = [
    ...diff.remove.map((item) => ({ kind: 'deleted' as const, item, steps: writer.remove(item) })),
    ...diff.change.map(({ from, to }) => ({ kind: 'changed' as const, item: to, steps: writer.change(from, to) })),
    ...diff.add.map((item) => ({ kind: 'added' as const, item, steps: writer.add(item) })),
  ];
  const results = writer.run(items.flatMap((i) => i.steps));
  const changes: Changes<T> = { added: [], changed: [], deleted: [], failed: [] };
  let next = 0;
  for (const { kind, item, steps } of items) {
    const own = results.slice(next, next + steps.length);
    next += steps.length;
    const failure = own.find((r): r is { ok: false; error: NetlinkError } => !r.ok);
    if (failure) changes.failed.push({ item, error: failure.error });
    else changes[kind].push(item);
  }
  return changes;
}
