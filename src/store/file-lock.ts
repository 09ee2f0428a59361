/**
 * Single-writer lock on a file: a lock file holding the writer's pid, created atomically, and taken over
 * when that pid is dead (a writer killed with SIGKILL cannot clean up after itself) or when the file
 * names no process at all (empty, cut short, not a pid: no writer of this code leaves one, so it is a
 * leftover of something else, and waiting for it would wait forever).
 */
import { linkSync, mkdirSync, readdirSync, renameSync, rmdirSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StateError } from '../errors';
import { writeNewFile } from './atomic-file';
import { fileError, readRegularFile } from './regular-file';
import type { StoreLock } from './store';

/** Linux pids run from 1 to PID_MAX_LIMIT (2^22); 0 and negative numbers name process groups for kill(). */
const pidMax = 2 ** 22;

function parsePid(text: string): number | undefined {
  const pid = /^([1-9]\d{0,6})\n?$/.exec(text)?.[1];
  return pid !== undefined && Number(pid) <= pidMax ? Number(pid) : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ignoreMissing(action: () => void): void {
  try {
    action();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** A lock file as found: its text, and the pid it names (none: it names no process). */
interface Holder {
  text: string;
  pid?: number;
}

/** The lock file at `path`, undefined if it is gone; refused if it is not a regular file. */
function holderOf(path: string): Holder | undefined {
  const text = readRegularFile(path);
  if (text === undefined) return undefined;
  const pid = parsePid(text);
  return pid === undefined ? { text } : { text, pid };
}

/** The locks this process holds: a lock naming this process's pid and not among them is a previous process's (a container's pid 1 after a restart). */
const heldHere = new Set<string>();

const isHeld = (path: string, pid: number | undefined) => pid !== undefined && (pid === process.pid ? heldHere.has(path) : isAlive(pid));

/** Makes the lock's directory; returns the first directory it made (undefined: it was there). */
function makeDirectory(dir: string): string | undefined {
  try {
    return mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw fileError(dir, 'create this directory', err);
  }
}

/** Removes the directories `makeDirectory` made, from `dir` up to `made`, while they are empty (nothing was saved). */
function removeMadeDirectories(dir: string, made: string | undefined): void {
  if (made === undefined) return;
  for (let at = dir; at.length >= made.length; at = dirname(at)) {
    try {
      rmdirSync(at);
    } catch {
      return;
    }
  }
}

export class FileLock implements StoreLock {
  private constructor(
    private readonly path: string,
    /** The directories made for the lock: a writer refused after taking it leaves no trace. */
    private readonly madeDirectory: string | undefined,
  ) {}

  /**
   * The pid is written to a private file first, flushed (a power cut cannot leave the lock empty), and
   * then hard-linked to the lock path: link() is atomic and fails if the lock exists, so a lock file is
   * never seen empty or half-written.
   */
  static acquire(path: string): FileLock {
    const made = makeDirectory(dirname(path));
    const mine = `${path}.${process.pid}`;
    let taken = false;
    try {
      writeNewFile(mine, `${process.pid}\n`, 0o600);
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          linkSync(mine, path);
          FileLock.removeStrays(path);
          heldHere.add(path);
          taken = true;
          return new FileLock(path, made);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fileError(path, 'create it', err);
        }
        const holder = holderOf(path);
        if (holder === undefined) continue;
        if (isHeld(path, holder.pid)) {
          throw new StateError(
            `${path} is held by process ${holder.pid}, another writer of this state; wait for it to finish. ` +
              `If no strait process is running (the pid was reused), remove ${path}`,
          );
        }
        FileLock.takeOver(path, holder.text);
      }
      throw new StateError(`could not take ${path}: other writers keep taking it; retry`);
    } finally {
      ignoreMissing(() => unlinkSync(mine));
      if (!taken) removeMadeDirectories(dirname(path), made);
    }
  }

  /**
   * Moves a dead writer's lock aside. rename() lets only one of several contenders move it; if what was
   * moved is not the lock seen dead any more (another contender already took over: its lock names it), it
   * is put back.
   */
  private static takeOver(path: string, seen: string): void {
    const aside = `${path}.stale.${process.pid}`;
    try {
      renameSync(path, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw fileError(path, 'move it aside', err);
    }
    try {
      if (readRegularFile(aside) !== seen) linkSync(aside, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      ignoreMissing(() => unlinkSync(aside));
    }
  }

  /** Private pid files and moved-aside locks left by writers killed mid-acquire. */
  private static removeStrays(path: string): void {
    const prefix = `${basename(path)}.`;
    for (const name of readdirSync(dirname(path))) {
      if (!name.startsWith(prefix)) continue;
      const pid = /^(?:stale\.)?(\d+)$/.exec(name.slice(prefix.length))?.[1];
      if (pid !== undefined && !isHeld(path, parsePid(pid))) ignoreMissing(() => unlinkSync(join(dirname(path), name)));
    }
  }

  async release(): Promise<void> {
    heldHere.delete(this.path);
    if (holderOf(this.path)?.pid === process.pid) ignoreMissing(() => unlinkSync(this.path));
    removeMadeDirectories(dirname(this.path), this.madeDirectory);
  }
}
