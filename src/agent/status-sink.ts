/**
 * Where an agent reports its NodeDataplane status: a port with two adapters, the heartbeat file (the
 * standalone lab, below) and the API server's status subresource (kubernetes-status-sink.ts). The
 * agent writes after every reconcile; a sink may write less often when nothing but the time changed.
 */
import type { NodeDataplaneStatus } from '../api/node-dataplane';
import { writeFileAtomic } from '../store/atomic-file';

export interface StatusSink {
  /** For logs: where the status goes. */
  readonly where: Record<string, string>;
  /** Throws when it cannot be written (the agent logs it once and tries again next tick). */
  write(status: NodeDataplaneStatus): void;
}

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
