/**
 * An upgrade to a build whose maps have another layout (a field added to a value, a bigger table). As
 * Cilium does, the maps the previous build pinned are set aside (renamed `<name>:pending`) before this
 * build's object loads, so load creates and pins new ones; the programs still attached keep using the old
 * maps. Then the state no spec can rebuild (the transit SNAT flows, the counters) is carried over into the
 * new maps and the set-aside pins are removed; the maps a spec fills are filled by the first apply, which
 * swaps the programs only after writing them (NodeDatapath.apply). A set-aside pin an interrupted upgrade
 * left is carried over by the next load, never over an entry the new map already has.
 *
 * What carries over: a map of the same type and key size, each value zero-extended where it grew and cut
 * where it shrank, as the rule for changing a shared struct makes right (fields are only appended, zero
 * meaning absent: docs/datapath.md): an upgrade adds the field as zero, a downgrade drops the field it
 * does not know. A map of another type or key starts empty, and says so.
 */
import { existsSync, renameSync, unlinkSync } from 'node:fs';
import { BpfMap, type BpfObject, MapType, isPerCpu } from '../../native';

const setAsideSuffix = ':pending';

export interface SetAsideMap {
  name: string;
  /** Where the set-aside map is pinned until its state is carried over. */
  setAsidePath: string;
}

/**
 * Before load: moves each pin this object could not reuse to `<pin>:pending`, and lists those an
 * interrupted upgrade left. Where both are there, the older (set aside first) is the one whose state to carry,
 * and the other (that upgrade's own new map) is removed.
 */
export function setAsideIncompatible(obj: BpfObject): SetAsideMap[] {
  const incompatible = new Set(obj.incompatiblePins().map((p) => p.name));
  const setAside: SetAsideMap[] = [];
  for (const { name, pinPath } of obj.maps()) {
    if (pinPath === null) continue;
    const setAsidePath = pinPath + setAsideSuffix;
    if (incompatible.has(name)) {
      if (existsSync(setAsidePath)) unlinkSync(pinPath);
      else renameSync(pinPath, setAsidePath);
    }
    if (existsSync(setAsidePath)) setAside.push({ name, setAsidePath });
  }
  return setAside;
}

export interface CarriedOver {
  map: string;
  /** Entries written into the new map. */
  entries: number;
  /** Why nothing was carried (the new map starts empty). */
  notCarried?: string;
}

const arrayTypes: ReadonlySet<number> = new Set([MapType.Array, MapType.PercpuArray]);

/**
 * `from` (a value of the old map, as a syscall copies it) as a value of the new map: zero-extended or cut,
 * slot by slot for per-CPU maps.
 */
function resize(from: Buffer, oldValueSize: number, newValueSize: number, perCpu: boolean, newBytes: number): Buffer {
  const to = Buffer.alloc(newBytes);
  const kept = Math.min(oldValueSize, newValueSize);
  if (!perCpu) {
    from.copy(to, 0, 0, kept);
    return to;
  }
  const oldStride = Math.ceil(oldValueSize / 8) * 8;
  const newStride = Math.ceil(newValueSize / 8) * 8;
  for (let cpu = 0; cpu * oldStride < from.length; cpu++) from.copy(to, cpu * newStride, cpu * oldStride, cpu * oldStride + kept);
  return to;
}

/** Copies the set-aside map's entries into `into` (never over an entry it has), counting them in `carried`. */
function carryOne(from: BpfMap<Buffer, Buffer>, into: BpfMap<Buffer, Buffer>, carried: CarriedOver): void {
  const perCpu = isPerCpu(into.type);
  const isArray = arrayTypes.has(into.type);
  for (const [key, value] of from.entries()) {
    const resized = resize(value, from.valueSize, into.valueSize, perCpu, into.value.size);
    if (isArray) {
      // An array has every element: carried where the old one holds something and the new one nothing yet.
      if (value.every((b) => b === 0) || into.lookup(key)?.some((b) => b !== 0)) continue;
      into.update(key, resized);
    } else {
      try {
        into.update(key, resized, 'noexist');
      } catch (err) {
        if ((err as { code?: string }).code === 'EEXIST') continue;
        throw err;
      }
    }
    carried.entries++;
  }
}

/**
 * After load: carries each set-aside map named in `stateMaps` over into the object's new map of that name
 * and removes every set-aside pin (the old maps live on while old programs hold them). A map that cannot
 * take the old entries (another type or key, full) is left empty and reported.
 */
export function carryOverState(obj: BpfObject, setAside: readonly SetAsideMap[], stateMaps: ReadonlySet<string>): CarriedOver[] {
  const carried: CarriedOver[] = [];
  for (const { name, setAsidePath } of setAside) {
    if (stateMaps.has(name)) {
      const fd = obj.maps().find((m) => m.name === name)!.fd;
      const from = BpfMap.openPinnedRaw(setAsidePath);
      const into = BpfMap.rawFromFd(fd, false);
      try {
        const notCarried =
          from.type !== into.type
            ? `its type changed (${from.type} to ${into.type})`
            : from.keySize !== into.keySize
              ? `its key changed size (${from.keySize} to ${into.keySize} bytes)`
              : undefined;
        const result: CarriedOver = { map: name, entries: 0 };
        carried.push(result);
        if (notCarried !== undefined) result.notCarried = notCarried;
        else {
          try {
            carryOne(from, into, result);
          } catch (err) {
            result.notCarried = `writing it failed after ${result.entries} entries: ${(err as Error).message}`;
          }
        }
      } finally {
        from.close();
        into.close();
      }
    }
    unlinkSync(setAsidePath);
  }
  return carried;
}
