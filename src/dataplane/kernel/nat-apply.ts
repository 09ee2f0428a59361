/**
 * Installs the document of `natRuleset` (nat-ruleset.ts): Strait's nftables tables, replaced together
 * in one nftables transaction (libnftables in this process: src/kernel/nftables.ts), so the kernel never
 * runs a half-written NAT. Reconciling: the live tables are compared with what the kernel listed right
 * after this process installed the same document, and nothing is written when they are equal; a rule or
 * element changed or deleted by hand makes them differ, and the next apply restores it. No other table is
 * read for a decision or written.
 */
import { InputError } from '../../errors';
import type { NftCommand, NftDocument } from '../../kernel/nft-json';
import { listRuleset, runNft } from '../../kernel/nftables';
import { FILTER_TABLE, NAT6_TABLE, NAT_TABLE } from './nat-ruleset';

const natTables = [NAT_TABLE, NAT6_TABLE];
const ownedTables = [...natTables, FILTER_TABLE];
const tableKey = (family: string, name: string) => `${family} ${name}`;
const ownedKeys = new Set(ownedTables.map((t) => tableKey(t.family, t.name)));

/** `add table` creates the table when absent, so the `delete` that follows never fails. */
const dropOwnedTables: NftCommand[] = ownedTables.flatMap((t) => [{ add: { table: { ...t } } }, { delete: { table: { ...t } } }]);

/**
 * Normalised listing of Strait's tables, by table (`family name`): what the kernel holds, one JSON object
 * per line, kernel handles left out.
 */
export type OwnedState = Map<string, string>;

/**
 * The last document installed (serialised) and what the kernel listed just after: the state to keep. Only
 * the kernel knows how it lists a document (elements reordered, expressions normalised), so the listing is
 * taken from the install itself; trying the document in a scratch namespace instead would need
 * CAP_SYS_ADMIN, which the agent's container does not have (docs/helm.md). A new process installs once.
 */
let installed: { ruleset: string; state: OwnedState } | undefined;

export function applyNat(ruleset: NftDocument, netns?: string): { changed: boolean } {
  checkOnlyOwnedTables(ruleset);
  const serialised = JSON.stringify(ruleset);
  if (installed?.ruleset === serialised && sameState(liveState(netns), installed.state)) return { changed: false };
  runNft({ nftables: [...dropOwnedTables, ...ruleset.nftables] }, netns);
  installed = { ruleset: serialised, state: liveState(netns) };
  return { changed: true };
}

/** Whether the node holds the gateway's NAT (a table of it exists: a worker has the filter table only). */
export function hasGatewayNat(netns?: string): boolean {
  const state = liveState(netns);
  return natTables.some((t) => state.has(tableKey(t.family, t.name)));
}

/** Deletes Strait's tables (all, in one transaction) and nothing else. */
export function removeNat(netns?: string): { changed: boolean } {
  if (liveState(netns).size === 0) return { changed: false };
  runNft({ nftables: dropOwnedTables }, netns);
  return { changed: true };
}

/**
 * The atomic replace deletes only the owned tables, but a command naming another table would still write
 * it: every command must be one verb on one object (a table, or a set, map, element, chain or rule in a
 * table) whose family and table are Strait's.
 */
function checkOnlyOwnedTables(ruleset: NftDocument): void {
  ruleset.nftables.forEach((command, index) => {
    const [, object] = onlyEntry(command);
    const [kind, fields] = onlyEntry(object);
    const { family, name, table } = (fields ?? {}) as { family?: unknown; name?: unknown; table?: unknown };
    const tableName = kind === 'table' ? name : table;
    const named = typeof family === 'string' && typeof tableName === 'string' ? tableKey(family, tableName) : undefined;
    if (named === undefined || !ownedKeys.has(named)) {
      throw new InputError(
        `ruleset.nftables[${index}]`,
        `${keys(command)} ${keys(object)} ${named ?? '(no table)'}`,
        `each command must name one object in one of Strait's tables (${[...ownedKeys].join(', ')})`,
      );
    }
  });
}

/** The one [key, value] of an object; [] when it is not an object of exactly one key. */
function onlyEntry(value: unknown): [string, unknown] | [] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  const entries = Object.entries(value);
  return entries.length === 1 ? entries[0]! : [];
}

/** An object's keys, as a command names its verb or object kind ('add', 'rule'). */
const keys = (value: unknown) => (value !== null && typeof value === 'object' ? Object.keys(value).join('+') : '');

interface ListedObject {
  family?: string;
  table?: string;
  name?: string;
}

/** What the kernel holds now of Strait's tables, normalised: two listings are equal when the state is. */
export function liveState(netns?: string): OwnedState {
  const listing = listRuleset(netns) as { nftables: Record<string, ListedObject>[] };
  const state: OwnedState = new Map();
  for (const item of listing.nftables) {
    const [kind, object] = Object.entries(item)[0]!;
    if (kind === 'metainfo') continue;
    const key = tableKey(object.family ?? '', kind === 'table' ? (object.name ?? '') : (object.table ?? ''));
    if (!ownedKeys.has(key)) continue;
    state.set(key, `${state.get(key) ?? ''}${JSON.stringify({ [kind]: normalise(object) })}\n`);
  }
  return state;
}

/**
 * Handles differ between namespaces and after a replace; hash sets and maps list their elements in hash
 * order, which differs too. Rule order is kept: it matters.
 */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== 'object') return value;
  const result: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'handle') continue;
    const normalised = normalise(inner);
    result[key] = (key === 'elem' || key === 'set') && Array.isArray(normalised) ? sortByJson(normalised) : normalised;
  }
  return result;
}

const sortByJson = (items: unknown[]) =>
  items
    .map((item) => [JSON.stringify(item), item] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, item]) => item);

function sameState(a: OwnedState, b: OwnedState): boolean {
  return a.size === b.size && [...a].every(([key, text]) => b.get(key) === text);
}
