/**
 * A state in one file, for standalone use. A save never leaves a half-written state: the new content is
 * written to a temporary file, flushed to disk, renamed over the old file (atomic), and the directory is
 * flushed so the rename itself survives a power cut. A crash at any point leaves the old or the new state.
 * The state path must hold a regular file (or nothing yet): anything else is refused before it is read.
 */
import { writeFileAtomic } from './atomic-file';
import { StateError } from '../errors';
import { FileLock } from './file-lock';
import { readRegularFile, requireRegularOrAbsent } from './regular-file';
import type { Codec, Store, StoreLock } from './store';

export class FileStore<T> implements Store<T> {
  constructor(
    readonly path: string,
    private readonly codec: Codec<T>,
  ) {}

  async lock(): Promise<StoreLock> {
    return FileLock.acquire(`${this.path}.lock`);
  }

  async load(): Promise<T | undefined> {
    const text = readRegularFile(this.path);
    if (text === undefined) return undefined;
    try {
      return this.codec.decode(text);
    } catch (err) {
      if (err instanceof StateError) throw new StateError(`${this.path}: ${err.message}`);
      throw err;
    }
  }

  async save(value: T): Promise<void> {
    // What the state path holds was refused on load; `init --force` saves without loading.
    requireRegularOrAbsent(this.path);
    // Only the lock holder saves; the state may hold what peers are told, so only its owner reads it.
    writeFileAtomic(this.path, this.codec.encode(value), 0o600);
  }
}
