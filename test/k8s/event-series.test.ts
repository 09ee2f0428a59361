/**
 * client-go's aggregation of events.k8s.io/v1 Events (tools/events/event_broadcaster.go recordToSink,
 * finishSeries, refreshExistingEventSeries) and the token bucket that limits each object's Event writes.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type EventsV1Event, V1MicroTime } from '@kubernetes/client-node';
import { type EventCache, eventKey, finishedSeries, observeEvent, runningSeries, seriesFinishMs } from '../../src/k8s/event-series';
import { fullBucket, take } from '../../src/k8s/token-bucket';

const t0 = Date.parse('2026-01-01T00:00:00Z');
const occurrence = (at: number, note = 'n', reason = 'NodeNotUsable'): EventsV1Event => ({
  metadata: { name: `node-a.${at.toString(16)}`, namespace: 'default' },
  eventTime: new V1MicroTime(at),
  reportingController: 'strait.io/controller',
  reportingInstance: 'c-0',
  regarding: { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'u1' },
  type: 'Warning',
  action: 'ReadNode',
  reason,
  note,
});

describe('event series (client-go events recorder)', () => {
  it('writes an occurrence and its first repeat; later repeats only count, as series.count N of the first Event', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.array(fc.string(), { minLength: 60, maxLength: 60 }), (n, notes) => {
        const cache: EventCache = new Map();
        const writes = Array.from({ length: n }, (_, i) =>
          observeEvent(cache, occurrence(t0 + i * 1000, notes[i]), new Date(t0 + i * 1000)),
        );
        assert.equal(writes.filter((w) => w).length, Math.min(n, 2));
        assert.equal(writes[0]!.series, undefined);
        if (n >= 2) assert.deepEqual(writes[1]!.series?.count, 2);
        assert.equal(cache.size, 1, 'the note is not part of the key');
        const [cached] = cache.values();
        assert.equal(cached!.metadata!.name, writes[0]!.metadata!.name, 'a repeat updates the first Event');
        assert.equal(cached!.series?.count ?? 1, n);
        if (n >= 2) assert.equal(new Date(cached!.series!.lastObservedTime).getTime(), t0 + (n - 1) * 1000);
      }),
    );
  });

  it('keys by type, action, reason, reporter and objects', () => {
    const other = { ...occurrence(t0), reason: 'Other' };
    assert.notEqual(eventKey(occurrence(t0)), eventKey(other));
    assert.notEqual(eventKey(occurrence(t0)), eventKey({ ...occurrence(t0), regarding: { ...occurrence(t0).regarding, uid: 'u2' } }));
    assert.equal(eventKey(occurrence(t0, 'a')), eventKey(occurrence(t0 + 5, 'b')));
  });

  it('a write is a copy: writing it cannot change the cache', () => {
    const cache: EventCache = new Map();
    observeEvent(cache, occurrence(t0), new Date(t0));
    const write = observeEvent(cache, occurrence(t0 + 1), new Date(t0 + 1))!;
    write.series!.count = 99;
    assert.equal([...cache.values()][0]!.series!.count, 2);
  });

  it('finishes a series 6 minutes after its last repeat, and forgets a single Event as old', () => {
    const cache: EventCache = new Map();
    observeEvent(cache, occurrence(t0), new Date(t0));
    observeEvent(cache, occurrence(t0 + 1000), new Date(t0 + 1000));
    observeEvent(cache, occurrence(t0, 'n', 'Single'), new Date(t0));
    assert.equal(runningSeries(cache).length, 1);
    assert.deepEqual(finishedSeries(cache, new Date(t0 + seriesFinishMs)), [], 'not yet');
    const finished = finishedSeries(cache, new Date(t0 + 1001 + seriesFinishMs));
    assert.deepEqual(
      finished.map((e) => e.series?.count),
      [2],
    );
    assert.equal(cache.size, 0);
    assert.ok(observeEvent(cache, occurrence(t0 + 2 * seriesFinishMs), new Date(t0 + 2 * seriesFinishMs)), 'the next occurrence is new');
  });

  it('lets at most burst + elapsed × rate writes through a token bucket', () => {
    fc.assert(
      fc.property(
        fc.record({ burst: fc.integer({ min: 1, max: 30 }), perSecond: fc.double({ min: 0.001, max: 5, noNaN: true }) }),
        fc.array(fc.integer({ min: 0, max: 10_000 }), { maxLength: 200 }),
        (rate, gaps) => {
          let bucket = fullBucket(rate, t0);
          let now = t0;
          let allowed = 0;
          for (const gap of gaps) {
            now += gap;
            const next = take(bucket, rate, now);
            bucket = next.bucket;
            if (next.allowed) allowed++;
            assert.ok(allowed <= rate.burst + ((now - t0) / 1000) * rate.perSecond + 1e-9);
            assert.ok(bucket.tokens >= 0 && bucket.tokens <= rate.burst);
          }
        },
      ),
    );
  });
});
