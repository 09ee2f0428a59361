/**
 * The files Strait keeps (states, locks) are regular files it wrote itself. Whatever else sits at such a
 * path (a symlink, a fifo, a directory, a device) was put there by someone else: it is refused, naming
 * the path and what is there, before it is read or replaced. Read at once: a fifo is never opened for a
 * blocking read (the reader would wait for a writer forever), a symlink is never followed.
 */
import { type Stats, closeSync, constants, fstatSync, lstatSync, openSync, readFileSync } from 'node:fs';
import { StateError } from '../errors';

/** What sits at a path, in an operator's words. */
function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  if (stats.isFIFO()) return 'a fifo';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function notRegular(path: string, kind: string): StateError {
  return new StateError(
    `${path}: is ${kind}, not a regular file; Strait reads and replaces only the regular files it writes: move it away or give another path`,
  );
}

/**
 * A file operation that failed for a reason of the file system, as `<path>: cannot <what>: <reason>
 * (<code>)`; still the errno error it was (its code kept: the controller retries those, where a
 * StateError stops it).
 */
export function fileError(path: string, what: string, err: unknown): unknown {
  const { code, message } = err as NodeJS.ErrnoException;
  if (code === undefined) return err;
  // Node's message is "<CODE>: <reason>, <syscall> '<path>'": the reason in words.
  const reason = /^[A-Z]+: ([^,]+)/.exec(message)?.[1] ?? message;
  return Object.assign(err as Error, { message: `${path}: cannot ${what}: ${reason} (${code})` });
}

/** The text of a regular file; undefined when nothing is at `path`. */
export function readRegularFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw notRegular(path, 'a symbolic link');
    // A socket cannot be opened at all.
    if (code === 'ENXIO') throw notRegular(path, 'a socket');
    throw fileError(path, 'read it', err);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notRegular(path, kindOf(stats));
    return readFileSync(fd, 'utf8');
  } catch (err) {
    throw err instanceof StateError ? err : fileError(path, 'read it', err);
  } finally {
    closeSync(fd);
  }
}

/** Refuses a path where something other than a regular file sits (nothing there is fine): a state is replaced only if it is one. */
export function requireRegularOrAbsent(path: string): void {
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw fileError(path, 'replace it', err);
  }
  if (!stats.isFile()) throw notRegular(path, kindOf(stats));
}

/** A file descriptor to append to the regular file at `path` (made with `mode` if absent; a symlink is not followed). */
export function openRegularFileForAppend(path: string, mode: number): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw notRegular(path, 'a symbolic link');
    throw fileError(path, 'open it', err);
  }
  const stats = fstatSync(fd);
  if (stats.isFile()) return fd;
  closeSync(fd);
  throw notRegular(path, kindOf(stats));
}
