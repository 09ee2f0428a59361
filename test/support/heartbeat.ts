/** Bounding "at the next reconcile" of a running agent by its heartbeats instead of by wall clock. */
import { readFileSync } from 'node:fs';
import { waitFor } from './wait';

const heartbeatTime = (statusPath: string) => (JSON.parse(readFileSync(statusPath, 'utf8')) as { time: string }).time;

/**
 * Resolves once the agent has written two heartbeats after this call. It writes one at the end of every
 * reconcile, and reconciles run one after another: the first may end a reconcile that began before the
 * caller's change, the second ends one that began after it. So whatever that reconcile repairs is done.
 * The heartbeat file must exist (wait for a first one before the change).
 */
export async function nextReconcile(statusPath: string, ms = 10_000, detail?: () => string): Promise<void> {
  let seen = heartbeatTime(statusPath);
  for (const which of ['first', 'second']) {
    const before = seen;
    await waitFor(`the ${which} heartbeat after the change`, () => (seen = heartbeatTime(statusPath)) !== before, ms, detail);
  }
}
