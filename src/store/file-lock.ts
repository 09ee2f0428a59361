/**
 * Single-writer lock on a file: a lock file holding the writer's pid, created atomically, and taken over
 * when that pid is dead (a writer killed with SIGKILL cannot clean up after itself).
 */
import { linkSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StateError } from '../errors';
import type { StoreLock } from './store';

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

/** The pid in a lock file, undefined if the file is gone. */
function holderOf(path: string): number | undefined {
  try {
    return Number.parseInt(readFileSync(path, 'utf8'), 10);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export class FileLock implements StoreLock {
  private constructor(private readonly path: string) {}

  /**
   * The pid is written to a private file first and then hard-linked to the lock path: link() is atomic and
   * fails if the lock exists, so a lock file is never seen empty or half-written.
   */
  static acquire(path: string): FileLock {
    const mine = `${path}.${process.pid}`;
    writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          linkSync(mine, path);
          FileLock.removeStrays(path);
          return new FileLock(path);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        }
        const holder = holderOf(path);
        if (holder === undefined) continue;
        if (Number.isInteger(holder) && isAlive(holder)) {
          throw new StateError(
            `${path} is held by process ${holder}, another writer of this state; wait for it to finish. ` +
              `If no strait process is running (the pid was reused), remove ${path}`,
          );
        }
        FileLock.takeOver(path, holder);
      }
      throw new StateError(`could not take ${path}: other writers keep taking it; retry`);
    } finally {
      ignoreMissing(() => unlinkSync(mine));
    }
  }

  /**
   * Moves a dead writer's lock aside. rename() lets only one of several contenders move it; if what was
   * moved is not the dead writer's lock any more (another contender already took over), it is put back.
   */
  private static takeOver(path: string, deadHolder: number): void {
    const aside = `${path}.stale.${process.pid}`;
    try {
      renameSync(path, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      if (holderOf(aside) !== deadHolder) linkSync(aside, path);
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
      const pid = /^(?:stale\.)?(\d+)$/.exec(name.slice(prefix.length));
      if (pid && !isAlive(Number(pid[1]))) ignoreMissing(() => unlinkSync(join(dirname(path), name)));
    }
  }

  async release(): Promise<void> {
    if (holderOf(this.path) === process.pid) ignoreMissing(() => unlinkSync(this.path));
  }
}
