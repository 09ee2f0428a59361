/** bpffs: mounting it where needed, pinning, unpinning. */
import { mkdirSync, rmSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { native } from './binding';

const defaultBpffs = '/sys/fs/bpf';

/** Makes sure a bpf filesystem is mounted at `path` (mounting one if `mount`); returns whether one is. */
export function ensureBpffs(path = defaultBpffs, mount = true): boolean {
  return native().ensureBpffs(path, mount);
}

/** Pins any BPF object fd (map, program, link) at `path`, creating parent directories. */
export function pinFd(fd: number, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  native().objPin(fd, path);
}

/** Removes a pin; returns whether it existed. The object lives on while other references hold it. */
export function unpin(path: string): boolean {
  try {
    unlinkSync(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Removes a directory of pins (a node's whole pin root). */
export function unpinAll(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
