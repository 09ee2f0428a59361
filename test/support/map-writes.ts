/**
 * Records every BPF map write and delete this process makes, in the order the kernel sees them, by
 * wrapping the native binding's calls: for claims about the order of writes, which no state read
 * afterwards can show.
 */
import { native } from '../../src/native/binding';

export interface MapWrite {
  /** The map's kernel name (15 characters at most). */
  map: string;
  op: 'update' | 'delete';
  /** The encoded key; a batch is recorded as one write per key, in batch order. */
  key: Buffer;
}

/** Runs `action` with the recording in place (removed after, also on a throw); what it wrote. */
export function recordMapWrites(action: () => void): MapWrite[] {
  const writes: MapWrite[] = [];
  const binding = native();
  const original = {
    mapUpdate: binding.mapUpdate,
    mapDelete: binding.mapDelete,
    mapUpdateBatch: binding.mapUpdateBatch,
    mapDeleteBatch: binding.mapDeleteBatch,
  };
  const record = (fd: number, op: MapWrite['op'], keys: Buffer, count: number) => {
    const { name, keySize } = binding.mapInfo(fd);
    for (let i = 0; i < count; i++) writes.push({ map: name, op, key: Buffer.from(keys.subarray(i * keySize, (i + 1) * keySize)) });
  };
  Object.assign(binding, {
    mapUpdate: (fd: number, key: Buffer, value: Buffer, flags: number) => (
      record(fd, 'update', key, 1),
      original.mapUpdate(fd, key, value, flags)
    ),
    mapDelete: (fd: number, key: Buffer) => (record(fd, 'delete', key, 1), original.mapDelete(fd, key)),
    mapUpdateBatch: (fd: number, keys: Buffer, values: Buffer, count: number, flags: number) => (
      record(fd, 'update', keys, count),
      original.mapUpdateBatch(fd, keys, values, count, flags)
    ),
    mapDeleteBatch: (fd: number, keys: Buffer, count: number) => (
      record(fd, 'delete', keys, count),
      original.mapDeleteBatch(fd, keys, count)
    ),
  });
  try {
    action();
  } finally {
    Object.assign(binding, original);
  }
  return writes;
}
