/**
 * The agent's status on the API server: a server-side apply of nodedataplanes/<node>/status by the
 * manager `strait-agent`, so a field it no longer reports goes and no one else's does. The agent
 * reports after every reconcile (every second), but a write only goes out when something other than
 * the time changed, and otherwise every `refreshMs` (5 minutes by default, as the kubelet reports an
 * unchanged node status): a thousand nodes writing every second is a thousand API writes a second for
 * nothing. A gateway failover needs no fast heartbeat here: the datapaths' answers to probes decide it,
 * and a gateway candidate's status carries what it probed (`gatewayProbes`), written when that changes.
 *
 * Writes are asynchronous and never pile up: one in flight; a newer status waits, replacing any older
 * one waiting. A failed write is logged once (until it succeeds again) and retried with the next report.
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { NodeDataplaneStatus } from '../../api/node-dataplane';
import { apiVersion, group, nodeDataplaneNames, version } from '../../api/resource-names';
import { apiErrorText } from '../../k8s/api-errors';
import { fieldManagers, forcedApply } from '../../k8s/server-side-apply';
import type { Logger } from '../../log';
import type { StatusSink } from '../control-plane-port';

export interface KubernetesStatusSinkOptions {
  api: CustomObjectsApi;
  nodeName: string;
  /** How often an unchanged status is written anyway, ms. */
  refreshMs: number;
  log: Logger;
  /** A monotonic clock, ms. */
  now?: () => number;
}

/** What a write changes: everything but the heartbeat's time. */
const content = ({ time: _time, ...rest }: NodeDataplaneStatus) => JSON.stringify(rest);

export class KubernetesStatusSink implements StatusSink {
  readonly where: Record<string, string>;
  /** The content last handed to the API server (in flight or written) and when; undefined: write the next one. */
  private last?: { content: string; at: number };
  private waiting?: NodeDataplaneStatus;
  /** The write in flight. */
  private inFlight?: Promise<void>;
  private lastError?: string;
  private readonly now: () => number;

  constructor(private readonly options: KubernetesStatusSinkOptions) {
    this.where = { status: `${nodeDataplaneNames.plural}/${options.nodeName}/status` };
    this.now = options.now ?? (() => performance.now());
  }

  write(status: NodeDataplaneStatus): void {
    const { last } = this;
    if (last !== undefined && last.content === content(status) && this.now() - last.at < this.options.refreshMs) return;
    this.last = { content: content(status), at: this.now() };
    this.waiting = status;
    this.send();
  }

  /** Resolves when nothing is in flight or waiting: a stop lets the last write finish. */
  async flushed(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  private send(): void {
    const status = this.waiting;
    if (this.inFlight || status === undefined) return;
    this.waiting = undefined;
    const name = this.options.nodeName;
    const body = { apiVersion, kind: nodeDataplaneNames.kind, metadata: { name }, status };
    this.inFlight = this.options.api
      .patchClusterCustomObjectStatus(
        { group, version, plural: nodeDataplaneNames.plural, name, body, fieldManager: fieldManagers.agent },
        forcedApply,
      )
      .then(
        () => {
          if (this.lastError !== undefined) this.options.log.info({ ...this.where, after: this.lastError }, 'status written again');
          this.lastError = undefined;
        },
        (err: unknown) => {
          const error = apiErrorText(err);
          if (error !== this.lastError)
            this.options.log.error({ ...this.where, error }, 'cannot write the status; retrying with the next report');
          this.lastError = error;
          // Not written: the next report goes out whatever it says.
          if (this.waiting === undefined) this.last = undefined;
        },
      )
      .finally(() => {
        this.inFlight = undefined;
        this.send();
      });
  }
}
