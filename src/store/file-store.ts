/**
 * A state in one file, for standalone use. A save never leaves a half-written state: the new content is
 * written to a temporary file, flushed to disk, renamed over the old file (atomic), and the directory is
 * flushed so the rename itself survives a power cut. A crash at any point leaves the old or the new state.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { StateError } from '../errors';
import { FileLock } from './file-lock';
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
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      return this.codec.decode(text);
    } catch (err) {
      if (err instanceof StateError) throw new StateError(`${this.path}: ${err.message}`);
      throw err;
    }
  }

  async save(value: T): Promise<void> {
    const text = this.codec.encode(value);
    // Only the lock holder saves, so one fixed temporary name is enough; a leftover one is overwritten.
    const temporary = `${this.path}.tmp`;
    const fd = openSync(temporary, 'w', 0o600);
    try {
      const bytes = Buffer.from(text, 'utf8');
      for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    const dir = openSync(dirname(this.path), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}
