/**
 * The status sink of the files control plane (the standalone lab): the heartbeat file the controller
 * polls. The port it implements, StatusSink, is the agent's (../control-plane-port.ts).
 */
import type { NodeDataplaneStatus } from '../../api/node-dataplane';
import { writeFileAtomic } from '../../store/atomic-file';
import type { StatusSink } from '../control-plane-port';

/**
 * The heartbeat file (docs/lab.md: `<cluster>/status/<node>.json`), polled by the controller. One
 * writer, and a reader must never see half of it: temporary file, fsync, rename, fsync of the directory.
 */
export class FileStatusSink implements StatusSink {
  readonly where: Record<string, string>;

  constructor(private readonly path: string) {
    this.where = { statusFile: path };
  }

  write(status: NodeDataplaneStatus): void {
    writeFileAtomic(this.path, `${JSON.stringify(status)}\n`);
  }
}
