/**
 * Kubernetes Events for what a person should see (`kubectl describe`, `kubectl get events`): a peer
 * ready, the gateway moved, a Node or spec refused. An Event is recorded once per change, not at every
 * reconcile, and never blocks one: a failed write is logged, and the reconcile goes on.
 *
 * Every subject is cluster-scoped (Nodes and Strait's resources), so its Events go to `default`, as
 * client-go's recorder puts them: kube-apiserver refuses an Event about an object without a namespace
 * in any other namespace (pkg/apis/core/validation/events.go). `kubectl describe` finds an object's
 * Events by its uid, which the caller gives when it knows it.
 */
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import { apiVersion as straitApiVersion } from '../../api/resource-names';

export interface EventSubject {
  kind: string;
  name: string;
  /** Default strait.io/v1alpha1; `v1` for a Node. */
  apiVersion?: string;
  uid?: string;
}

/** Where Events about cluster-scoped objects live. */
const eventNamespace = 'default';

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  /** The last message per subject and reason, so an unchanged one is not recorded again. */
  private readonly last = new Map<string, string>();

  constructor(
    private readonly api: CoreV1Api,
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
        namespace: eventNamespace,
      },
      involvedObject: {
        apiVersion: subject.apiVersion ?? straitApiVersion,
        kind: subject.kind,
        name: subject.name,
        ...(subject.uid ? { uid: subject.uid } : {}),
      },
      type,
      reason,
      message,
      source: { component: this.component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    this.api.createNamespacedEvent({ namespace: eventNamespace, body: event }).catch((err: unknown) => {
      this.log.warn({ reason, subject: key, error: err instanceof Error ? err.message : String(err) }, 'cannot record an event');
    });
  }
}
