/**
 * Kubernetes Events for what a person should see (`kubectl describe`, `kubectl events`): a peer ready,
 * the gateway moved, a Node or spec refused. They are events.k8s.io/v1 Events, the API kube-apiserver
 * validates strictly (eventTime, reportingController, reportingInstance, action), aggregated as
 * client-go's events recorder does (../../k8s/event-series.ts): a repeat counts in the Event's series
 * instead of creating another, so a reconcile may record what it sees every time. Each object's writes
 * are also rate-limited as client-go's spam filter limits them (25 at once, then one per 5 minutes), so a
 * flapping object cannot flood the API server. Recording never blocks a reconcile: a failed write is
 * logged, and the reconcile goes on.
 *
 * An Event about a cluster-scoped object (Nodes and Strait's resources) lives in `default`, as client-go
 * puts it: kube-apiserver refuses one in any namespace but `default` and `kube-system`
 * (pkg/apis/core/validation/events.go).
 */
import { type EventsV1Api, type EventsV1Event, PatchStrategy, V1MicroTime, setHeaderOptions } from '@kubernetes/client-node';
import { randomInt } from 'node:crypto';
import type { Logger } from '../../log';
import { apiVersion as straitApiVersion } from '../../api/resource-names';
import { apiErrorText, apiStatus } from '../../k8s/api-errors';
import { type EventCache, finishedSeries, observeEvent, runningSeries, seriesFinishMs, seriesRefreshMs } from '../../k8s/event-series';
import { type BucketRate, type TokenBucket, fullBucket, refilled, take } from '../../k8s/token-bucket';

export interface EventSubject {
  kind: string;
  name: string;
  /** Default strait.io/v1alpha1; `v1` for a Node. */
  apiVersion?: string;
  /** `kubectl describe` finds an object's Events by it. */
  uid?: string;
}

type EventType = 'Normal' | 'Warning';

export interface Occurrence {
  type: EventType;
  /** Why the action was taken (UpperCamelCase, at most 128 characters). */
  reason: string;
  /** What was done or failed (UpperCamelCase, at most 128 characters). */
  action: string;
  /** Human-readable; cut to the server's 1 kB. */
  note: string;
}

export interface EventRecorderOptions {
  api: EventsV1Api;
  /** A qualified name: `strait.io/controller`. */
  reportingController: string;
  /** The Pod that writes (at most 128 characters). */
  reportingInstance: string;
  log: Logger;
  now?: () => Date;
}

/** client-go's EventSourceObjectSpamFilter defaults (tools/record/events_cache.go). */
export const eventRate: BucketRate = { burst: 25, perSecond: 1 / 300 };

/** NoteLengthLimit of pkg/apis/core/validation/events.go, in bytes. */
const noteLimit = 1024;

/** Where Events about cluster-scoped objects live. */
const eventNamespace = 'default';

/** `note` within the server's limit, marked as cut. */
function fittingNote(note: string): string {
  if (Buffer.byteLength(note) <= noteLimit) return note;
  let cut = note;
  while (Buffer.byteLength(cut) > noteLimit - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}

const subjectKey = (s: EventSubject) => `${s.apiVersion ?? straitApiVersion}/${s.kind}/${s.name}/${s.uid ?? ''}`;

export class EventRecorder {
  private readonly cache: EventCache = new Map();
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly writes = new Set<Promise<void>>();
  private timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: EventRecorderOptions) {}

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /** Starts the refresh and finish of series (StartRecordingToSinkWithContext's timers). */
  start(): void {
    this.timers = [setInterval(() => this.refreshSeries(), seriesRefreshMs), setInterval(() => this.finishSeries(), seriesFinishMs)];
    for (const timer of this.timers) timer.unref();
  }

  /** Stops the timers and waits for the writes under way. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    await this.settled();
  }

  /** Resolves once no write is under way. */
  async settled(): Promise<void> {
    while (this.writes.size > 0) await Promise.all(this.writes);
  }

  record(subject: EventSubject, occurrence: Occurrence): void {
    const now = this.now();
    const { reportingController, reportingInstance } = this.options;
    const event: EventsV1Event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // generateEvent's name: the object's and the time in nanoseconds, in hex.
      metadata: {
        name: `${subject.name}.${(BigInt(now.getTime()) * 1_000_000n + BigInt(randomInt(1_000_000))).toString(16)}`,
        namespace: eventNamespace,
      },
      eventTime: new V1MicroTime(now.getTime()),
      reportingController,
      reportingInstance,
      regarding: {
        apiVersion: subject.apiVersion ?? straitApiVersion,
        kind: subject.kind,
        name: subject.name,
        ...(subject.uid ? { uid: subject.uid } : {}),
      },
      type: occurrence.type,
      reason: occurrence.reason,
      action: occurrence.action,
      note: fittingNote(occurrence.note),
    };
    const write = observeEvent(this.cache, event, now);
    if (!write) return;
    const key = subjectKey(subject);
    const { bucket, allowed } = take(this.buckets.get(key) ?? fullBucket(eventRate, now.getTime()), eventRate, now.getTime());
    this.buckets.set(key, bucket);
    // The occurrence stays counted in the cache: the next write of its series carries it.
    if (allowed) this.writeAll([write]);
    else this.options.log.debug({ subject: key, reason: occurrence.reason }, 'event rate-limited');
  }

  /** refreshExistingEventSeries: writes every running series' count. */
  refreshSeries(): void {
    this.writeAll(runningSeries(this.cache));
  }

  /** finishSeries: writes the series that ended; forgets them, and the buckets that have refilled. */
  finishSeries(): void {
    const now = this.now().getTime();
    this.writeAll(finishedSeries(this.cache, this.now()));
    for (const [key, bucket] of this.buckets) if (refilled(bucket, eventRate, now).tokens >= eventRate.burst) this.buckets.delete(key);
  }

  private writeAll(events: EventsV1Event[]): void {
    for (const event of events) {
      const write = this.write(event).finally(() => this.writes.delete(write));
      this.writes.add(write);
    }
  }

  /** recordEvent: a series is patched (created if it is gone), a new Event created. */
  private async write(event: EventsV1Event): Promise<void> {
    const { api, log } = this.options;
    const namespace = event.metadata?.namespace ?? eventNamespace;
    const name = event.metadata?.name ?? '';
    try {
      if (event.series) {
        try {
          await api.patchNamespacedEvent(
            { name, namespace, body: { series: event.series } },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          );
          return;
        } catch (err) {
          if (apiStatus(err) !== 404) throw err;
        }
      }
      await api.createNamespacedEvent({ namespace, body: event });
    } catch (err) {
      log.warn(
        { reason: event.reason, regarding: `${event.regarding?.kind}/${event.regarding?.name}`, error: apiErrorText(err) },
        'cannot record an event',
      );
    }
  }
}
