/**
 * Kubernetes Events for what a person should see (`kubectl describe`, `kubectl get events`): a peer
 * ready, the gateway moved, a Node or spec refused. An Event is recorded once per change, not at every
 * reconcile, and never blocks one: a failed write is logged, and the reconcile goes on.
 */
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import { apiVersion as straitApiVersion } from '../../api/resource-names';

export interface EventSubject {
  kind: string;
  name: string;
  /** Default strait.io/v1alpha1; `v1` for a Node. */
  apiVersion?: string;
}

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  /** The last message per subject and reason, so an unchanged one is not recorded again. */
  private readonly last = new Map<string, string>();

  constructor(
    private readonly api: CoreV1Api,
    private readonly namespace: string,
    private readonly component: string,
    private readonly log: Logger,
  ) {}

  record(subject: EventSubject, type: EventType, reason: string, message: string): void {
    const key = `${subject.kind}/${subject.name}/${reason}`;
    if (this.last.get(key) === message) return;
    this.last.set(key, message);
    const now = new Date();
    const event: CoreV1Event = {
      metadata: {
        name: `${subject.name}.${now.getTime().toString(16)}${Math.floor(Math.random() * 0x10000).toString(16)}`,
        namespace: this.namespace,
      },
      involvedObject: { apiVersion: subject.apiVersion ?? straitApiVersion, kind: subject.kind, name: subject.name },
      type,
      reason,
      message,
      source: { component: this.component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    this.api.createNamespacedEvent({ namespace: this.namespace, body: event }).catch((err: unknown) => {
      this.log.warn({ reason, subject: key, error: err instanceof Error ? err.message : String(err) }, 'cannot record an event');
    });
  }
}
