import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Detection, detectionTimeMs, judge, observeReply, startDetection } from '../../src/liveness/detection';
import { chooseGateway } from '../../src/liveness/gateway-choice';

const settings = { intervalMs: 50, multiplier: 3 };
const detect = detectionTimeMs(settings);

/**
 * A prober's life as the prober lives it: a round every interval (judge, then send request `seq`), and
 * for each round whether the target's Ready reply came back before the next one. Returns the verdict
 * after each round.
 */
function run(answers: readonly boolean[], start = 0): { verdicts: string[]; at: number[] } {
  let d: Detection = startDetection(start);
  const verdicts: string[] = [];
  const at: number[] = [];
  let seq = 0;
  answers.forEach((answered, i) => {
    const now = start + i * settings.intervalMs;
    d = judge(d, now, settings);
    verdicts.push(d.verdict);
    at.push(now);
    seq++;
    if (answered) d = observeReply(d, now + 1, seq, seq, true, settings);
  });
  return { verdicts, at };
}

describe('liveness detection (BFD-like, pure)', () => {
  it('a target answering every round is up from its first reply, and stays up', () => {
    const { verdicts } = run(Array(20).fill(true));
    assert.equal(verdicts[0], 'unknown');
    assert.ok(verdicts.slice(1).every((v) => v === 'up'));
  });

  it('a target that never answered stays unknown (a node without a responder is never failed away from)', () => {
    const { verdicts } = run(Array(10).fill(false));
    assert.deepEqual(new Set(verdicts), new Set(['unknown']));
  });

  it('goes down the first round more than a detection time after its last reply; comes back only after answering for one', () => {
    const answers = [...Array(5).fill(true), ...Array(6).fill(false), ...Array(8).fill(true)];
    const { verdicts } = run(answers);
    // Last reply in round 4 (t=201 ms): round 7 (t=350) sees 149 ms of silence, round 8 (t=400) 199 ms: down.
    assert.deepEqual(verdicts.slice(0, 11), ['unknown', 'up', 'up', 'up', 'up', 'up', 'up', 'up', 'down', 'down', 'down']);
    // Replies again from round 11 (t=551); up once answering for 150 ms: round 15 (t=750) sees 199 ms.
    assert.deepEqual(verdicts.slice(11), ['down', 'down', 'down', 'down', 'up', 'up', 'up', 'up']);
  });

  it('a stale reply (to a request older than the multiplier) and a reply saying the maps hold no spec are no answer', () => {
    let d = judge(startDetection(0), 0, settings);
    d = observeReply(d, 10, 1, 4, true, settings);
    assert.equal(d.lastReplyAt, undefined, 'seq 1 when 4 was sent last: three requests ago');
    d = observeReply(d, 10, 2, 4, true, settings);
    assert.equal(d.lastReplyAt, 10, 'seq 2 is within the last three');
    assert.equal(observeReply(startDetection(0), 10, 4, 4, false, settings).lastReplyAt, undefined);
    // Sequence numbers wrap.
    assert.equal(observeReply(startDetection(0), 10, 2 ** 32 - 1, 1, true, settings).lastReplyAt, 10);
  });

  it('property: once seen answering, down exactly when no reply came for more than a detection time; unknown until the first reply', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 80 }), (answers) => {
        const { verdicts, at } = run(answers);
        let lastReply: number | undefined;
        let down = false;
        verdicts.forEach((v, i) => {
          const now = at[i]!;
          if (lastReply === undefined) assert.equal(v, 'unknown', `round ${i}: never answered, yet ${v}`);
          else {
            const silentFor = now - lastReply;
            if (silentFor > detect) down = true;
            if (v === 'down') assert.ok(down, `round ${i}: down while answering`);
            if (silentFor > detect) assert.equal(v, 'down', `round ${i}: silent for ${silentFor} ms, yet ${v}`);
          }
          if (v === 'up') down = false;
          if (answers[i]) lastReply = now + 1;
        });
      }),
    );
  });

  it('property: the verdict changes at most once per detection time while replies flap (no back and forth each round)', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 120 }), (answers) => {
        const { verdicts, at } = run(answers);
        let lastDown: number | undefined;
        verdicts.forEach((v, i) => {
          if (v === 'down' && verdicts[i - 1] !== 'down') lastDown = at[i];
          if (v === 'up' && verdicts[i - 1] === 'down') assert.ok(at[i]! - lastDown! >= detect, `round ${i}: back up too soon`);
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
