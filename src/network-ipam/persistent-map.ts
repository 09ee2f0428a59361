/**
 * Immutable string-keyed map (a hash array mapped trie): `set` and `delete` return a new map sharing all
 * untouched nodes with the old one. The IPAM core returns a new state for every operation; with plain Maps
 * that would copy 100,000 endpoint mappings per mapping, with this it copies about log32(n) small nodes.
 */

const bitsPerLevel = 5;
const levelMask = (1 << bitsPerLevel) - 1;

interface Leaf<V> {
  readonly hash: number;
  /** More than one entry only when full 32-bit hashes collide. */
  readonly entries: readonly (readonly [string, V])[];
}

interface Branch<V> {
  /** Bit i set when child slot i is present; children are stored densely in slot order. */
  readonly bitmap: number;
  readonly children: readonly TrieNode<V>[];
}

type TrieNode<V> = Leaf<V> | Branch<V>;

function isLeaf<V>(node: TrieNode<V>): node is Leaf<V> {
  return 'entries' in node;
}

/** FNV-1a: fast, and good enough spread for IP address strings and cluster ids. */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function popcount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

function slotOf(hash: number, shift: number): number {
  return (hash >>> shift) & levelMask;
}

function withChild<V>(branch: Branch<V>, slot: number, child: TrieNode<V> | undefined): Branch<V> | undefined {
  const bit = 1 << slot;
  const index = popcount(branch.bitmap & (bit - 1));
  const present = (branch.bitmap & bit) !== 0;
  const children = [...branch.children];
  if (child === undefined) {
    if (!present) return branch;
    children.splice(index, 1);
    return children.length === 0 ? undefined : { bitmap: branch.bitmap & ~bit, children };
  }
  if (present) children[index] = child;
  else children.splice(index, 0, child);
  return { bitmap: branch.bitmap | bit, children };
}

function childAt<V>(branch: Branch<V>, slot: number): TrieNode<V> | undefined {
  const bit = 1 << slot;
  return branch.bitmap & bit ? branch.children[popcount(branch.bitmap & (bit - 1))] : undefined;
}

/** Two leaves of different hashes under one slot: push them down until their hashes part. */
function merge<V>(a: Leaf<V>, b: Leaf<V>, shift: number): Branch<V> {
  const sa = slotOf(a.hash, shift);
  const sb = slotOf(b.hash, shift);
  if (sa === sb) return { bitmap: 1 << sa, children: [merge(a, b, shift + bitsPerLevel)] };
  return { bitmap: (1 << sa) | (1 << sb), children: sa < sb ? [a, b] : [b, a] };
}

function setIn<V>(
  node: TrieNode<V> | undefined,
  hash: number,
  key: string,
  value: V,
  shift: number,
): { node: TrieNode<V>; added: boolean } {
  if (node === undefined) return { node: { hash, entries: [[key, value]] }, added: true };
  if (isLeaf(node)) {
    if (node.hash !== hash) return { node: merge(node, { hash, entries: [[key, value]] }, shift), added: true };
    const entries = node.entries.filter(([k]) => k !== key);
    const added = entries.length === node.entries.length;
    return { node: { hash, entries: [...entries, [key, value]] }, added };
  }
  const slot = slotOf(hash, shift);
  const inner = setIn(childAt(node, slot), hash, key, value, shift + bitsPerLevel);
  return { node: withChild(node, slot, inner.node)!, added: inner.added };
}

function deleteIn<V>(node: TrieNode<V>, hash: number, key: string, shift: number): TrieNode<V> | undefined {
  if (isLeaf(node)) {
    const entries = node.entries.filter(([k]) => k !== key);
    if (entries.length === node.entries.length) return node;
    return entries.length === 0 ? undefined : { hash, entries };
  }
  const slot = slotOf(hash, shift);
  const child = childAt(node, slot);
  if (child === undefined) return node;
  const inner = deleteIn(child, hash, key, shift + bitsPerLevel);
  if (inner === child) return node;
  const branch = withChild(node, slot, inner);
  // Collapse a branch left with a single leaf so lookups stay short after deletions.
  if (branch && branch.children.length === 1 && isLeaf(branch.children[0]!)) return branch.children[0];
  return branch;
}

function* entriesOf<V>(node: TrieNode<V> | undefined): Generator<readonly [string, V]> {
  if (node === undefined) return;
  if (isLeaf(node)) yield* node.entries;
  else for (const child of node.children) yield* entriesOf(child);
}

export class PersistentMap<V> {
  private static readonly emptyMap = new PersistentMap<never>(undefined, 0);

  private constructor(
    private readonly root: TrieNode<V> | undefined,
    readonly size: number,
  ) {}

  static empty<V>(): PersistentMap<V> {
    return PersistentMap.emptyMap as PersistentMap<V>;
  }

  static from<V>(entries: Iterable<readonly [string, V]>): PersistentMap<V> {
    let map = PersistentMap.empty<V>();
    for (const [k, v] of entries) map = map.set(k, v);
    return map;
  }

  get(key: string): V | undefined {
    const hash = hashOf(key);
    let node = this.root;
    for (let shift = 0; node !== undefined; shift += bitsPerLevel) {
      if (isLeaf(node)) return node.hash === hash ? node.entries.find(([k]) => k === key)?.[1] : undefined;
      node = childAt(node, slotOf(hash, shift));
    }
    return undefined;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, value: V): PersistentMap<V> {
    const { node, added } = setIn(this.root, hashOf(key), key, value, 0);
    return new PersistentMap(node, this.size + (added ? 1 : 0));
  }

  delete(key: string): PersistentMap<V> {
    if (this.root === undefined || !this.has(key)) return this;
    return new PersistentMap(deleteIn(this.root, hashOf(key), key, 0), this.size - 1);
  }

  entries(): IterableIterator<readonly [string, V]> {
    return entriesOf(this.root);
  }

  values(): IterableIterator<V> {
    return (function* (it) {
      for (const [, v] of it) yield v;
    })(this.entries());
  }
}
