/**
 * mocha's spec reporter, plus the skipped tests by name, the slowest test files by wall time (hooks
 * included: a lab brought up in a `before` costs there, not in any test), and the plain closing line
 * 'tests: N passed, N failed, N skipped' that CI reads to tell a run that tested something from one
 * that did not.
 */
import Mocha from 'mocha';
import { relative } from 'node:path';

/** How many of the slowest files the run's end lists: where CI's minutes go. */
const slowestShown = 15;

class StraitReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const skipped: string[] = [];
    const fileMs = new Map<string, number>();
    const started = new Map<Mocha.Suite, number>();
    runner.on(Mocha.Runner.constants.EVENT_TEST_PENDING, (test) => skipped.push(test.fullTitle()));
    // A file's top-level suites: those whose parent is the root (mocha gives each its file).
    runner.on(Mocha.Runner.constants.EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent?.root && suite.file) started.set(suite, Date.now());
    });
    runner.on(Mocha.Runner.constants.EVENT_SUITE_END, (suite) => {
      const since = started.get(suite);
      if (since === undefined || !suite.file) return;
      const file = relative(process.cwd(), suite.file);
      fileMs.set(file, (fileMs.get(file) ?? 0) + Date.now() - since);
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const s = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, slowestShown);
      if (slowest.length > 0) {
        process.stdout.write(
          `slowest files (wall time, hooks included):\n${slowest.map(([f, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${f}\n`).join('')}`,
        );
      }
      for (const title of skipped) process.stdout.write(`skipped: ${title}\n`);
      process.stdout.write(`tests: ${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
    });
  }
}

export = StraitReporter;
