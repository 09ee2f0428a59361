/**
 * Installs the script of `natRuleset` (nat-ruleset.ts): Strait's two nftables tables, replaced together in
 * one nftables transaction (libnftables in this process: src/kernel/nftables.ts), so the kernel never runs a half-written NAT. Reconciling: the live tables are
 * compared with what the kernel listed right after this process installed the same script, and nothing
 * is written when they are equal; a rule or element changed or deleted by hand makes them differ, and the
 * next apply restores it. No other table is read for a decision or written.
 */
import { InputError } from '../errors';
import { listRuleset, runNft } from '../kernel/nftables';
import { FILTER_TABLE, NAT_TABLE } from './nat-ruleset';

const ownedTables = [NAT_TABLE, FILTER_TABLE];
const tableKey = (family: string, name: string) => `${family} ${name}`;
const ownedKeys = new Set(ownedTables.map((t) => tableKey(t.family, t.name)));

/** `table X {}` creates the table when absent, so the `delete` that follows never fails. */
const dropOwnedTables = ownedTables.map((t) => `table ${t.family} ${t.name} {}\ndelete table ${t.family} ${t.name}\n`).join('');

/**
 * Normalised listing of Strait's tables, by table (`family name`): what the kernel holds, one JSON object
 * per line, kernel handles left out.
 */
export type OwnedState = Map<string, string>;

/**
 * The last script installed and what the kernel listed just after: the state to keep. Only the kernel
 * knows how it lists a script (elements reordered, expressions normalised), so the listing is taken
 * from the install itself; trying the script in a scratch namespace instead would need CAP_SYS_ADMIN,
 * which the agent's container does not have (docs/helm.md). A new process installs once.
 */
let installed: { script: string; state: OwnedState } | undefined;

export function applyNat(script: string, netns?: string): { changed: boolean } {
  checkOnlyOwnedTables(script);
  if (installed?.script === script && sameState(liveState(netns), installed.state)) return { changed: false };
  runNft(dropOwnedTables + script, netns);
  installed = { script, state: liveState(netns) };
  return { changed: true };
}

/** Deletes Strait's tables (both, in one transaction) and nothing else. */
export function removeNat(netns?: string): { changed: boolean } {
  if (liveState(netns).size === 0) return { changed: false };
  runNft(dropOwnedTables, netns);
  return { changed: true };
}

/**
 * The atomic replace deletes only the owned tables, but a script defining another table would still
 * write it; natRuleset's scripts have only `table <owned> {`, `}` and indented lines at the top level.
 */
function checkOnlyOwnedTables(script: string): void {
  for (const line of script.split('\n')) {
    if (line === '' || line === '}' || /^\s/.test(line)) continue;
    const match = /^table (\S+) (\S+) \{$/.exec(line);
    if (!match || !ownedKeys.has(tableKey(match[1]!, match[2]!))) {
      throw new InputError('script', line, `top-level lines must open one of Strait's tables (${[...ownedKeys].join(', ')})`);
    }
  }
}

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
