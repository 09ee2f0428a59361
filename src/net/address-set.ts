/**
 * Immutable set of offsets in [0, capacity) that finds the lowest free offset in O(log32 capacity):
 * a 32-way trie over the offset bits whose nodes know when they are full. Allocating the lowest free
 * ExternalCIDR address is then independent of how many addresses are already taken (100,000 mappings),
 * and updates share every untouched node with the previous set, as the IPAM core needs.
 */

const fanout = 32;
const bitsPerLevel = 5n;
const fullLeaf = 0xffffffff;

/** A leaf is a 32-bit mask of used offsets; a branch holds up to 32 subtrees (undefined: all free). */
type TrieNode = number | Branch;

interface Branch {
  readonly full: boolean;
  readonly children: readonly (TrieNode | undefined)[];
}

function isFull(node: TrieNode | undefined): boolean {
  if (node === undefined) return false;
  return typeof node === 'number' ? node >>> 0 === fullLeaf : node.full;
}

function withOffset(node: TrieNode | undefined, offset: bigint, level: number, used: boolean): TrieNode | undefined {
  if (level === 0) {
    const bit = 1 << Number(offset & 31n);
    const mask = ((typeof node === 'number' ? node : 0) & ~bit) | (used ? bit : 0);
    return mask === 0 ? undefined : mask >>> 0;
  }
  const slot = Number((offset >> (bitsPerLevel * BigInt(level))) & 31n);
  const children =
    node === undefined || typeof node === 'number' ? new Array<TrieNode | undefined>(fanout).fill(undefined) : [...node.children];
  children[slot] = withOffset(children[slot], offset, level - 1, used);
  if (children.every((c) => c === undefined)) return undefined;
  return { full: children.every(isFull), children };
}

function containsIn(node: TrieNode | undefined, offset: bigint, level: number): boolean {
  if (node === undefined) return false;
  if (typeof node === 'number') return ((node >>> Number(offset & 31n)) & 1) === 1;
  const slot = Number((offset >> (bitsPerLevel * BigInt(level))) & 31n);
  return containsIn(node.children[slot], offset, level - 1);
}

/** Lowest offset not in the subtree (relative to the subtree), or undefined when the subtree is full. */
function lowestFreeIn(node: TrieNode | undefined, level: number): bigint | undefined {
  if (node === undefined) return 0n;
  if (typeof node === 'number') {
    if (node >>> 0 === fullLeaf) return undefined;
    let i = 0;
    while ((node >>> i) & 1) i++;
    return BigInt(i);
  }
  if (node.full) return undefined;
  const span = 1n << (bitsPerLevel * BigInt(level));
  for (let slot = 0; slot < fanout; slot++) {
    const below = lowestFreeIn(node.children[slot], level - 1);
    if (below !== undefined) return BigInt(slot) * span + below;
  }
  return undefined;
}

export class AddressSet {
  private constructor(
    readonly capacity: bigint,
    private readonly levels: number,
    private readonly root: TrieNode | undefined,
    readonly size: number,
  ) {}

  static empty(capacity: bigint): AddressSet {
    let levels = 0;
    while (1n << (bitsPerLevel * BigInt(levels + 1)) < capacity) levels++;
    return new AddressSet(capacity, levels, undefined, 0);
  }

  has(offset: bigint): boolean {
    return containsIn(this.root, offset, this.levels);
  }

  add(offset: bigint): AddressSet {
    if (offset < 0n || offset >= this.capacity) throw new RangeError(`offset ${offset} outside [0, ${this.capacity})`);
    if (this.has(offset)) return this;
    return new AddressSet(this.capacity, this.levels, withOffset(this.root, offset, this.levels, true), this.size + 1);
  }

  delete(offset: bigint): AddressSet {
    if (!this.has(offset)) return this;
    return new AddressSet(this.capacity, this.levels, withOffset(this.root, offset, this.levels, false), this.size - 1);
  }

  /** Lowest offset not in the set, or undefined when every offset below capacity is taken. */
  lowestFree(): bigint | undefined {
    const free = lowestFreeIn(this.root, this.levels);
    return free !== undefined && free < this.capacity ? free : undefined;
  }
}
