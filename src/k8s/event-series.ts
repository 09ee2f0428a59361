/**
 * client-go's aggregation of events.k8s.io/v1 Events (k8s.io/client-go/tools/events/event_broadcaster.go),
 * without its goroutines: an Event isomorphic to one already recorded (same type, action, reason,
 * reporting controller and instance, regarding and related objects; the note does not count) is not
 * created again. Its first repeat writes `series` {count: 2, lastObservedTime}; later repeats only
 * count here, and the count reaches the server when the series is refreshed (every 30 minutes) or
 * finished (6 minutes after its last repeat). So an object that keeps failing costs a few writes an
 * hour, not one per failure, and `kubectl describe` still says how often it happened.
 */
import { type EventsV1Event, V1MicroTime } from '@kubernetes/client-node';

/** finishTime: a series with no repeat for this long is written a last time and forgotten. */
export const seriesFinishMs = 6 * 60_000;
/** refreshTime: how often every running series is written, so its count and time stay current. */
export const seriesRefreshMs = 30 * 60_000;

/** The Events recorded lately, by getKey's isomorphism. */
export type EventCache = Map<string, EventsV1Event>;

/**
 * A copy whose series the cache can replace without touching it (times stay V1MicroTime: the server
 * parses MicroTime with exactly six fractional digits, which structuredClone's plain Date loses).
 */
const copy = (event: EventsV1Event): EventsV1Event => ({ ...event, ...(event.series ? { series: { ...event.series } } : {}) });

const reference = (ref: EventsV1Event['regarding']) =>
  ref ? [ref.apiVersion, ref.kind, ref.namespace, ref.name, ref.uid, ref.fieldPath, ref.resourceVersion] : [];

/** getKey: what makes two Events the same occurrence. */
export function eventKey(event: EventsV1Event): string {
  return JSON.stringify([
    event.type,
    event.action,
    event.reason,
    event.reportingController,
    event.reportingInstance,
    reference(event.regarding),
    reference(event.related),
  ]);
}

/**
 * recordToSink: what to write for `event` observed at `now`: the Event itself when it is new, the
 * cached one with its series started when it is the first repeat, nothing when the series runs.
 * Returns a copy, so the write cannot change the cache.
 */
export function observeEvent(cache: EventCache, event: EventsV1Event, now: Date): EventsV1Event | undefined {
  const key = eventKey(event);
  const cached = cache.get(key);
  if (!cached) {
    cache.set(key, event);
    return copy(event);
  }
  if (cached.series) {
    cached.series = { count: cached.series.count + 1, lastObservedTime: new V1MicroTime(now.getTime()) };
    return undefined;
  }
  cached.series = { count: 2, lastObservedTime: new V1MicroTime(now.getTime()) };
  return copy(cached);
}

/** refreshExistingEventSeries: every running series, to be written again. */
export const runningSeries = (cache: EventCache): EventsV1Event[] => [...cache.values()].filter((e) => e.series).map(copy);

/**
 * finishSeries: the series without a repeat for `seriesFinishMs`, to be written a last time; they and
 * the single Events as old leave the cache, so their next occurrence is a new Event.
 */
export function finishedSeries(cache: EventCache, now: Date): EventsV1Event[] {
  const horizon = now.getTime() - seriesFinishMs;
  const finished: EventsV1Event[] = [];
  for (const [key, event] of cache) {
    const last = event.series ? event.series.lastObservedTime : event.eventTime;
    if (new Date(last).getTime() >= horizon) continue;
    if (event.series) finished.push(copy(event));
    cache.delete(key);
  }
  return finished;
}
