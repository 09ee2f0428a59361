/**
 * The agent's heartbeat file (docs/lab.md: `<cluster>/status/<node>.json`), read by polling by the
 * controller, which elects the gateway among Ready nodes. It has one writer, and a reader must never
 * see half of it: temporary file, fsync, rename over the old one, fsync of the directory.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Dataplane } from '../probe/features';

export interface Heartbeat {
  node: string;
  /** The datapath is loaded and the last reconcile succeeded. A stopped agent writes nothing: its heartbeat ages out. */
  ready: boolean;
  /** ISO 8601, when this heartbeat was written. */
  time: string;
  dataplane: Dataplane;
  /** How many distinct specs this agent process has applied (0: none yet): the controller can tell when a new one took. */
  specGeneration: number;
}

export function writeHeartbeat(path: string, heartbeat: Heartbeat): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  // A dot file next to the target: same filesystem (rename is atomic), and no reader globbing *.json sees it.
  const temporary = join(dir, `.${basename(path)}.tmp`);
  const fd = openSync(temporary, 'w', 0o644);
  try {
    const bytes = Buffer.from(`${JSON.stringify(heartbeat)}\n`, 'utf8');
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
