import assert from 'node:assert/strict';
import { isReady } from '../../src/controller/election';
import { heartbeatsAsSeen, observeRenewals } from '../../src/controller/sightings';

const t0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(t0 + ms).toISOString();

describe('heartbeat sightings (pure)', () => {
  it('takes a new version as a renewal seen now, keeps the time of an unchanged one, forgets a node no longer listed', () => {
    const first = observeRenewals(
      new Map(),
      new Map([
        ['gw1', '10'],
        ['gw2', '11'],
      ]),
      t0,
    );
    assert.deepEqual(
      [...first],
      [
        ['gw1', { version: '10', seenAt: t0 }],
        ['gw2', { version: '11', seenAt: t0 }],
      ],
    );
    const second = observeRenewals(
      first,
      new Map([
        ['gw1', '12'],
        ['gw2', '11'],
      ]),
      t0 + 700,
    );
    assert.deepEqual(
      [...second],
      [
        ['gw1', { version: '12', seenAt: t0 + 700 }],
        ['gw2', { version: '11', seenAt: t0 }],
      ],
    );
    assert.deepEqual([...observeRenewals(second, new Map([['gw2', '11']]), t0 + 900)], [['gw2', { version: '11', seenAt: t0 }]]);
  });

  it('a heartbeat stamped an hour ahead is Ready while it changes and ages out a timeout after it stops (issue 24)', () => {
    const ahead = { ready: true, time: at(3_600_000) };
    let sightings = observeRenewals(new Map(), new Map([['n', ahead.time]]), t0);
    const first = heartbeatsAsSeen(new Map([['n', ahead]]), sightings, t0);
    assert.equal(first.heartbeats.get('n')!.time, at(0), 'dated when seen, not by its stamp');
    assert.deepEqual(first.problems, [
      `node n: heartbeat stamped 3600.0 s ahead of this controller's clock (${ahead.time}); judged by when it was seen to change`,
    ]);
    assert.equal(isReady(first.heartbeats.get('n'), t0 + 1000, 1.5), true);
    // The agent stops: the same file, seen again 2 s later, is no longer fresh.
    sightings = observeRenewals(sightings, new Map([['n', ahead.time]]), t0 + 2000);
    const later = heartbeatsAsSeen(new Map([['n', ahead]]), sightings, t0 + 2000);
    assert.equal(isReady(later.heartbeats.get('n'), t0 + 2000, 1.5), false);
    // Without sightings (the stamp alone), it would have been Ready for the hour: what the issue found.
    assert.equal(isReady(ahead, t0 + 2000, 1.5), true);
  });

  it('a heartbeat from the past keeps ageing from its stamp: a file left by a dead agent is not fresh at start-up', () => {
    const old = { ready: true, time: at(-10_000) };
    const sightings = observeRenewals(new Map(), new Map([['n', old.time]]), t0);
    const { heartbeats, problems } = heartbeatsAsSeen(new Map([['n', old]]), sightings, t0);
    assert.equal(heartbeats.get('n'), old);
    assert.deepEqual(problems, []);
    assert.equal(isReady(heartbeats.get('n'), t0, 1.5), false);
  });
});
