import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Detection, judge, observeReply, startDetection } from '../../src/liveness/detection';
import { chooseGateway } from '../../src/liveness/gateway-choice';

const settings = { intervalMs: 50, multiplier: 3 };

/**
 * A prober's life as the prober lives it: round i judges (request i-1 was the last sent), then sends
 * request i; `answers[i]` says whether the target's Ready reply to it came back before the next round.
 * Returns the verdict after each round.
 */
function run(answers: readonly boolean[]): string[] {
  let d: Detection = startDetection();
  return answers.map((answered, i) => {
    d = judge(d, i - 1, settings);
    if (answered) d = observeReply(d, i, i, true, settings);
    return d.verdict;
  });
}

describe('liveness detection (BFD-like, counted in probes, pure)', () => {
  it('a target answering every round is up from its first reply, and stays up', () => {
    const verdicts = run(Array(20).fill(true));
    assert.equal(verdicts[0], 'unknown');
    assert.ok(verdicts.slice(1).every((v) => v === 'up'));
  });

  it('a target that never answered stays unknown (a node without a responder is never failed away from)', () => {
    assert.deepEqual(new Set(run(Array(10).fill(false))), new Set(['unknown']));
  });

  it('goes down once the last multiplier requests went unanswered; comes back only after answering multiplier in a row', () => {
    const answers = [...Array(5).fill(true), ...Array(6).fill(false), true, false, ...Array(8).fill(true)];
    // Requests 5, 6, 7 unanswered: round 8 judges them and says down.
    assert.deepEqual(run(answers).slice(0, 11), ['unknown', 'up', 'up', 'up', 'up', 'up', 'up', 'up', 'down', 'down', 'down']);
    // 11 answered, 12 not (the run breaks), 13, 14, 15 answered: up at round 16.
    assert.deepEqual(run(answers).slice(11), ['down', 'down', 'down', 'down', 'down', 'up', 'up', 'up', 'up', 'up']);
  });

  it('a stale reply, a repeated or older one, and a reply saying the maps hold no spec are no answer', () => {
    let d = startDetection();
    assert.equal(observeReply(d, 1, 4, true, settings).lastAnswered, undefined, 'request 1 when 4 was sent last: three requests ago');
    d = observeReply(d, 3, 4, true, settings);
    assert.equal(d.lastAnswered, 3);
    assert.equal(observeReply(d, 2, 4, true, settings), d, 'older than an answer counted');
    assert.equal(observeReply(d, 3, 4, true, settings), d, 'the same again');
    assert.equal(observeReply(startDetection(), 4, 4, false, settings).lastAnswered, undefined);
    // Sequence numbers wrap.
    assert.equal(observeReply(startDetection(), 2 ** 32 - 1, 1, true, settings).lastAnswered, 2 ** 32 - 1);
    assert.equal(judge(observeReply(startDetection(), 2 ** 32 - 1, 2 ** 32 - 1, true, settings), 1, settings).verdict, 'up');
  });

  it('property: once seen answering, down exactly when the last multiplier requests went unanswered; unknown until the first reply', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 80 }), (answers) => {
        let lastAnswered: number | undefined;
        run(answers).forEach((v, i) => {
          if (lastAnswered === undefined) assert.equal(v, 'unknown', `round ${i}: never answered, yet ${v}`);
          else if (i - 1 - lastAnswered >= settings.multiplier)
            assert.equal(v, 'down', `round ${i}: ${i - 1 - lastAnswered} unanswered, yet ${v}`);
          if (answers[i]) lastAnswered = i;
        });
      }),
    );
  });

  it('property: down only after multiplier unanswered requests, and back up only after multiplier answered in a row', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 120 }), (answers) => {
        const verdicts = run(answers);
        verdicts.forEach((v, i) => {
          const judged = answers.slice(0, i); // the requests judged in round i
          if (v === 'down' && verdicts[i - 1] !== 'down')
            assert.ok(
              judged.slice(-settings.multiplier).every((a) => !a) && judged.length >= settings.multiplier,
              `round ${i}: down too soon`,
            );
          if (v === 'up' && verdicts[i - 1] === 'down')
            assert.ok(
              judged.slice(-settings.multiplier).every((a) => a) && judged.length >= settings.multiplier,
              `round ${i}: back up too soon`,
            );
        });
      }),
    );
  });
});

describe('gateway choice (pure)', () => {
  const order = ['gw1', 'gw2', 'gw3'];
  it('takes the first candidate in the published order that is not down; unknown counts as alive', () => {
    assert.equal(chooseGateway(order, 'w1', new Map()), 'gw1');
    assert.equal(chooseGateway(order, 'w1', new Map([['gw1', 'down']])), 'gw2');
    assert.equal(
      chooseGateway(
        order,
        'w1',
        new Map([
          ['gw1', 'down'],
          ['gw2', 'down'],
          ['gw3', 'unknown'],
        ]),
      ),
      'gw3',
    );
  });
  it('a candidate never judges itself down; with every candidate down the published first stays', () => {
    assert.equal(
      chooseGateway(
        order,
        'gw2',
        new Map([
          ['gw1', 'down'],
          ['gw2', 'down'],
        ]),
      ),
      'gw2',
    );
    assert.equal(chooseGateway(order, 'w1', new Map(order.map((n) => [n, 'down']))), 'gw1');
    assert.equal(chooseGateway([], 'w1', new Map()), undefined);
  });
});
