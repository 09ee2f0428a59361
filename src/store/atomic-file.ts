/**
 * Writing a file so that a reader, or a crash at any moment, sees the old content or the new one, never
 * a mix: a temporary file beside it, flushed, renamed over it, and the directory flushed so the rename
 * survives a power cut. Every file Strait writes this way has one writer, so the temporary's name is
 * fixed per target (a leftover from a crash is overwritten, never piles up) and starts with a dot (no
 * reader listing `*.json` sees it). A file with several writers (a lab's topology.json, which every
 * machine of a lab across machines writes, all the same text) names the writer in its temporary's.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export const temporaryPathFor = (path: string, writer?: string) => join(dirname(path), `.${basename(path)}${writer === undefined ? '' : `.${writer}`}.tmp`);

export function writeFileAtomic(path: string, text: string, mode = 0o644, writer?: string): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const temporary = temporaryPathFor(path, writer);
  const fd = openSync(temporary, 'w', mode);
  try {
    const bytes = Buffer.from(text, 'utf8');
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}
