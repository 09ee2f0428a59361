/**
 * The lab supervisor's restart delays (pure): the kubelet's CrashLoopBackOff, 1 s doubling to 10 s, reset
 * after 10 s of running; the flags that set them, refused naming the flag and the value; the supervisor's
 * own arguments.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InputError } from '../../src/errors';
import { runLabCli } from '../../lab/src/main';
import { type RestartPolicy, defaultRestartPolicy, nextRestart, restartPolicyOf, restartResetMs } from '../../lab/src/restart-backoff';
import { parseSuperviseArgs } from '../../lab/src/supervise';

/** The delays of a child that ran `ranMs[i]` before its i-th exit. */
function delays(policy: RestartPolicy, ranMs: readonly number[]): number[] {
  let crashes = 0;
  return ranMs.map((ran) => {
    const next = nextRestart(policy, crashes, ran);
    crashes = next.crashes;
    return next.delayMs;
  });
}

const policies: fc.Arbitrary<RestartPolicy> = fc
  .tuple(fc.integer({ min: 1, max: 3_600_000 }), fc.integer({ min: 1, max: 3_600_000 }))
  .map(([a, b]) => ({ firstDelayMs: Math.min(a, b), maxDelayMs: Math.max(a, b) }));
/** How long a child ran before it exited: mostly crash loops, sometimes long enough to reset. */
const runs = fc.array(
  fc.oneof(fc.integer({ min: 0, max: restartResetMs - 1 }), fc.integer({ min: restartResetMs, max: 10 * restartResetMs })),
  {
    maxLength: 60,
  },
);

describe('lab supervisor restart delays (backoff)', () => {
  it('doubles from 1 s to the 10 s cap while the child keeps crashing within 10 s', () => {
    assert.deepEqual(
      delays(defaultRestartPolicy, [0, 50, 9_999, 1_000, 1_000, 1_000, 1_000]),
      [1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000],
    );
    assert.deepEqual(delays({ firstDelayMs: 300, maxDelayMs: 1_000 }, [0, 0, 0, 0]), [300, 600, 1_000, 1_000]);
  });

  it('starts again from the first delay once the child ran 10 s without exiting', () => {
    assert.deepEqual(
      delays(defaultRestartPolicy, [0, 0, 0, restartResetMs, 0, restartResetMs - 1]),
      [1_000, 2_000, 4_000, 1_000, 2_000, 4_000],
    );
  });

  it('each delay is the first after a reset (or the first crash), else twice the one before up to the cap (property)', () => {
    fc.assert(
      fc.property(policies, runs, (policy, ranMs) => {
        const got = delays(policy, ranMs);
        got.forEach((delay, i) => {
          assert.ok(delay >= policy.firstDelayMs && delay <= policy.maxDelayMs, `${delay} within [first, cap]`);
          const expected = i === 0 || ranMs[i]! >= restartResetMs ? policy.firstDelayMs : Math.min(policy.maxDelayMs, 2 * got[i - 1]!);
          assert.equal(delay, expected, `delay ${i} after runs ${ranMs.slice(0, i + 1).join(', ')}`);
        });
      }),
    );
  });

  it('reaches the cap and stays there however long the crash loop (property)', () => {
    fc.assert(
      fc.property(policies, fc.integer({ min: 0, max: 100_000 }), (policy, crashesBefore) => {
        const { delayMs, crashes } = nextRestart(policy, crashesBefore, 0);
        assert.equal(crashes, crashesBefore + 1);
        assert.ok(Number.isFinite(delayMs));
        if (crashesBefore >= 32) assert.equal(delayMs, policy.maxDelayMs);
      }),
    );
  });
});

describe('lab supervisor restart flags', () => {
  it('are 1 s and 10 s by default; a first delay above 10 s without a cap is its own cap', () => {
    assert.deepEqual(restartPolicyOf(), defaultRestartPolicy);
    assert.deepEqual(restartPolicyOf('1', undefined), defaultRestartPolicy);
    assert.deepEqual(restartPolicyOf('0.25', '2.5'), { firstDelayMs: 250, maxDelayMs: 2_500 });
    assert.deepEqual(restartPolicyOf('30'), { firstDelayMs: 30_000, maxDelayMs: 30_000 });
    assert.deepEqual(restartPolicyOf(2, 2), { firstDelayMs: 2_000, maxDelayMs: 2_000 });
  });

  it('are refused naming the flag and the value as given', () => {
    const refused: [delay: string | undefined, max: string | undefined, field: string, value: string, reason: RegExp][] = [
      ['0', undefined, '--restart-delay', '0', /from 0\.001 to 3600/],
      ['-1', undefined, '--restart-delay', '-1', /seconds/],
      ['soon', undefined, '--restart-delay', 'soon', /seconds/],
      ['', undefined, '--restart-delay', '', /seconds/],
      ['0.0001', undefined, '--restart-delay', '0.0001', /seconds/],
      ['Infinity', undefined, '--restart-delay', 'Infinity', /seconds/],
      ['3601', undefined, '--restart-delay', '3601', /seconds/],
      ['1', 'NaN', '--restart-delay-max', 'NaN', /seconds/],
      ['2', '1', '--restart-delay-max', '1', /must be at least --restart-delay \(2 s\)/],
      [undefined, '0.5', '--restart-delay-max', '0.5', /must be at least --restart-delay \(1 s\)/],
    ];
    for (const [delay, max, field, value, reason] of refused) {
      assert.throws(
        () => restartPolicyOf(delay, max),
        (err: unknown) => {
          assert.ok(err instanceof InputError, String(err));
          assert.deepEqual([err.field, err.value], [field, value]);
          assert.match(err.message, reason);
          return true;
        },
        `${delay} ${max}`,
      );
    }
  });

  it('`strait-lab up` refuses a bad delay before it builds anything: one JSON error naming the flag and the value', async () => {
    for (const [args, field, value] of [
      [['--restart-delay', '0'], '--restart-delay', '0'],
      [['--restart-delay', '5', '--restart-delay-max', '2'], '--restart-delay-max', '2'],
    ] as const) {
      let out = '';
      let err = '';
      const code = await runLabCli(['node', 'strait-lab', '--run-dir', '/nonexistent/lab', 'up', ...args], {
        out: (text) => void (out += text),
        err: (text) => void (err += text),
      });
      assert.deepEqual([code, out], [1, ''], err);
      const error = JSON.parse(err) as { error: string; field: string; value: unknown };
      assert.deepEqual([error.field, error.value], [field, value]);
    }
  });
});

describe('lab supervisor arguments', () => {
  it('are its flags, then -- and the command', () => {
    const flags = [
      '--name',
      'agent-a-gw',
      '--child-pid-file',
      '/run/x.child.pid',
      '--restart-delay-ms',
      '1000',
      '--restart-delay-max-ms',
      '10000',
    ];
    assert.deepEqual(parseSuperviseArgs([...flags, '--', 'node', 'cli.js', '--', 'x']), {
      name: 'agent-a-gw',
      childPidFile: '/run/x.child.pid',
      policy: defaultRestartPolicy,
      command: ['node', 'cli.js', '--', 'x'],
    });
    for (const [argv, error] of [
      [flags, /no command/],
      [[...flags, '--'], /no command/],
      [[...flags.slice(0, -1), '--', 'x'], /one value/],
      [[...flags.slice(2), '--', 'x'], /missing --name/],
      [[...flags, '--bogus', '1', '--', 'x'], /no flag --bogus/],
      [[...flags.slice(0, -1), '999', '--', 'x'], /not above the cap/],
      [[...flags.slice(0, 5), '0', ...flags.slice(6), '--', 'x'], /at least 1/],
    ] as const)
      assert.match((parseSuperviseArgs(argv) as { error: string }).error, error, argv.join(' '));
  });
});
