/**
 * The agent's heartbeat file (docs/lab.md: `<cluster>/status/<node>.json`), read by polling by the
 * controller, which elects the gateway among Ready nodes. It has one writer, and a reader must never
 * see half of it: temporary file, fsync, rename over the old one, fsync of the directory.
 */
import { createHash } from 'node:crypto';
import { writeFileAtomic } from '../store/atomic-file';
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
  /**
   * Why the newest spec file was not applied (invalid, or asks what this dataplane cannot do), while
   * the last good one stays in force; or why applying failed. Absent when all is well.
   */
  error?: string;
  /** `specDigest` of the spec file's text last applied in full: a reader can tell whether the file it sees is in force. */
  appliedSpec?: string;
}

/** A short digest of a spec file's text (not a secret: it names a version). */
export const specDigest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

export function writeHeartbeat(path: string, heartbeat: Heartbeat): void {
  writeFileAtomic(path, `${JSON.stringify(heartbeat)}\n`);
}
