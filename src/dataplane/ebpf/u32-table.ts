/**
 * A map of 32-bit unsigned integers to 32-bit unsigned integers in typed arrays (open addressing, linear
 * probing): the NAT tables of 100,000 addresses, built and diffed at every spec change, cost several
 * times less than in a Map. Holds the subset of Map the table diff and the mirrors use.
 */
const EMPTY = 0;
const FULL = 1;
const DELETED = 2;

export class U32Table {
  private keyArray: Uint32Array;
  private valueArray: Uint32Array;
  private state: Uint8Array;
  private used = 0; // full + deleted slots
  size = 0;

  constructor(expected = 16) {
    const capacity = U32Table.capacityFor(expected);
    this.keyArray = new Uint32Array(capacity);
    this.valueArray = new Uint32Array(capacity);
    this.state = new Uint8Array(capacity);
  }

  /** A power of two at least twice `n`: probes stay short. */
  private static capacityFor(n: number): number {
    let c = 16;
    while (c < n * 2) c *= 2;
    return c;
  }

  /** The slot holding `key`, or -1. */
  private find(key: number): number {
    const mask = this.state.length - 1;
    for (let i = Math.imul(key, 0x9e3779b1) & mask; ; i = (i + 1) & mask) {
      const s = this.state[i];
      if (s === EMPTY) return -1;
      if (s === FULL && this.keyArray[i] === key) return i;
    }
  }

  get(key: number): number | undefined {
    const i = this.find(key);
    return i < 0 ? undefined : this.valueArray[i];
  }

  has(key: number): boolean {
    return this.find(key) >= 0;
  }

  set(key: number, value: number): this {
    const at = this.find(key);
    if (at >= 0) {
      this.valueArray[at] = value;
      return this;
    }
    if ((this.used + 1) * 2 > this.state.length) this.rehash(this.size + 1);
    const mask = this.state.length - 1;
    let i = Math.imul(key, 0x9e3779b1) & mask;
    while (this.state[i] === FULL) i = (i + 1) & mask;
    if (this.state[i] === EMPTY) this.used++;
    this.state[i] = FULL;
    this.keyArray[i] = key;
    this.valueArray[i] = value;
    this.size++;
    return this;
  }

  delete(key: number): boolean {
    const i = this.find(key);
    if (i < 0) return false;
    this.state[i] = DELETED;
    this.size--;
    return true;
  }

  forEach(fn: (value: number, key: number) => void): void {
    const { state, keyArray, valueArray } = this;
    for (let i = 0; i < state.length; i++) if (state[i] === FULL) fn(valueArray[i]!, keyArray[i]!);
  }

  private rehash(n: number): void {
    const { state, keyArray, valueArray } = this;
    const capacity = U32Table.capacityFor(n);
    this.keyArray = new Uint32Array(capacity);
    this.valueArray = new Uint32Array(capacity);
    this.state = new Uint8Array(capacity);
    this.used = 0;
    this.size = 0;
    for (let i = 0; i < state.length; i++) if (state[i] === FULL) this.set(keyArray[i]!, valueArray[i]!);
  }
}
