/**
 * The agent's heartbeat file (docs/lab.md: `<cluster>/status/<node>.json`): its NodeDataplane status
 * (src/api/node-dataplane.ts), read by polling by the controller, which elects the gateway among Ready
 * nodes. It has one writer, and a reader must never see half of it: temporary file, fsync, rename over
 * the old one, fsync of the directory.
 */
import type { NodeDataplaneStatus } from '../api/node-dataplane';
import { writeFileAtomic } from '../store/atomic-file';

export function writeHeartbeat(path: string, status: NodeDataplaneStatus): void {
  writeFileAtomic(path, `${JSON.stringify(status)}\n`);
}
