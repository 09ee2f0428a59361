/**
 * How Strait writes a file (a state, a lock, a secret, a kubeconfig, a heartbeat): never through what
 * someone else left at a path. A new file is created exclusively (O_EXCL: a symlink planted at its path
 * is not followed, a leftover is not reused with its mode) and given its mode explicitly, whatever the
 * umask; a file that is replaced gets its new content in such a new file beside it, flushed, renamed
 * over it (atomic: rename() replaces a symlink itself, never what it points to), and the directory
 * flushed so the rename survives a power cut: a reader, or a crash at any moment, sees the old content
 * or the new one, never a mix.
 *
 * Every file Strait writes this way has one writer, so the temporary's name is fixed per target (a
 * leftover from a crash is removed, never piles up) and starts with a dot (no reader listing `*.json`
 * sees it). A file with several writers (a lab's topology.json, which every machine of a lab across
 * machines writes, all the same text) names the writer in its temporary's.
 */
import { closeSync, constants, fchmodSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileError } from './regular-file';

export const temporaryPathFor = (path: string, writer?: string) =>
  join(dirname(path), `.${basename(path)}${writer === undefined ? '' : `.${writer}`}.tmp`);

const exclusiveCreate = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

function removeIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw fileError(path, 'remove it', err);
  }
}

/** A file descriptor of a file made now, by this call, with exactly `mode`. */
function createExclusive(path: string, mode: number): number {
  // Whatever is there is a leftover of this writer (a crash) or was planted: unlink() removes a symlink
  // itself, never its target. Someone who keeps putting something back makes the write fail.
  for (let attempt = 1; ; attempt++) {
    try {
      const fd = openSync(path, exclusiveCreate, mode);
      fchmodSync(fd, mode);
      return fd;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt === 3) throw fileError(path, 'create it', err);
      removeIfThere(path);
    }
  }
}

/** Writes `text` into a new file at `path` (anything there is removed first), flushed to disk. */
export function writeNewFile(path: string, text: string, mode: number): void {
  const fd = createExclusive(path, mode);
  try {
    const bytes = Buffer.from(text, 'utf8');
    for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    removeIfThere(path);
    throw fileError(path, 'write it', err);
  }
  closeSync(fd);
}

/**
 * Puts a file with `text` at `path`, all or nothing. What was at `path` is replaced, never written
 * through: a symlink there is replaced itself, not the file it points to.
 */
export function writeFileAtomic(path: string, text: string, mode = 0o644, writer?: string): void {
  const dir = dirname(path);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw fileError(dir, 'create this directory', err);
  }
  const temporary = temporaryPathFor(path, writer);
  writeNewFile(temporary, text, mode);
  try {
    renameSync(temporary, path);
  } catch (err) {
    removeIfThere(temporary);
    throw fileError(path, 'replace it', err);
  }
  syncDirectory(dir);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
