/**
 * The fast heartbeat of a gateway candidate: a coordination.k8s.io/v1 Lease `strait-node-<node>` in the
 * agent's namespace, renewed every interval (0.2 s by default) with holderIdentity = the node and
 * leaseDurationSeconds 1, while the applied spec says node.gatewayCandidate and the datapath is applied
 * and ready. A candidate that is not ready stops renewing, so the controller fails the gateway over
 * within about a second of traffic loss; nodes that are no candidates never write a Lease (a thousand of
 * them renewing every 0.2 s would be five thousand API writes a second).
 *
 * The controller judges a Lease fresh by when it *observed* renewTime change (its own clock, from its
 * informer's events), never by comparing renewTime with its clock: the two nodes' clocks may differ by
 * more than the lease lasts.
 */
import { type CoordinationV1Api, PatchStrategy, V1MicroTime, setHeaderOptions } from '@kubernetes/client-node';
import { apiErrorText, apiStatus } from '../../k8s/api-errors';
import { nodeLeaseName } from '../../k8s/names';
import type { Logger } from '../../log';

/** The label naming the node on its Lease, so the controller can watch them all with one selector. */
const nodeLeaseLabel = 'strait.io/node';
const nodeLeaseDurationSeconds = 1;

export interface NodeLeaseOptions {
  api: CoordinationV1Api;
  namespace: string;
  nodeName: string;
  intervalMs: number;
  log: Logger;
}

export class NodeLease {
  private readonly name: string;
  private timer?: NodeJS.Timeout;
  private inFlight?: Promise<void>;
  private renewing = false;
  private lastError?: string;

  /** `shouldRenew`: asked before every renewal (a ready gateway candidate). */
  constructor(
    private readonly options: NodeLeaseOptions,
    private readonly shouldRenew: () => boolean,
  ) {
    this.name = nodeLeaseName(options.nodeName);
  }

  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.options.intervalMs);
    this.tick();
  }

  /** Stops renewing (the Lease then expires); resolves when no renewal is in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  private tick(): void {
    const renew = this.shouldRenew();
    const where = { lease: this.name, namespace: this.options.namespace };
    if (renew !== this.renewing)
      this.options.log.info(
        { ...where, intervalMs: this.options.intervalMs },
        renew ? 'renewing the gateway candidate Lease' : 'stopped renewing the Lease: not a ready gateway candidate',
      );
    this.renewing = renew;
    // One renewal at a time: a slow API server gets fewer, not more.
    if (!renew || this.inFlight) return;
    this.inFlight = this.renew()
      .then(
        () => {
          if (this.lastError !== undefined) this.options.log.info({ ...where, after: this.lastError }, 'Lease renewed again');
          this.lastError = undefined;
        },
        (err: unknown) => {
          const error = apiErrorText(err);
          if (error !== this.lastError) this.options.log.error({ ...where, error }, 'cannot renew the Lease; retrying every interval');
          this.lastError = error;
        },
      )
      .finally(() => {
        this.inFlight = undefined;
      });
  }

  /** A merge patch of the times (no read first: the node is the Lease's only writer); created when missing. */
  private async renew(): Promise<void> {
    const { api, namespace, nodeName } = this.options;
    const spec = { holderIdentity: nodeName, leaseDurationSeconds: nodeLeaseDurationSeconds, renewTime: new V1MicroTime() };
    try {
      await api.patchNamespacedLease(
        { name: this.name, namespace, body: { spec } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    } catch (err) {
      if (apiStatus(err) !== 404) throw err;
      await api.createNamespacedLease({
        namespace,
        body: { metadata: { name: this.name, labels: { [nodeLeaseLabel]: nodeName } }, spec: { ...spec, acquireTime: spec.renewTime } },
      });
    }
  }
}
