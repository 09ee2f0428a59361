/**
 * mocha's spec reporter, plus the skipped tests by name and the plain closing line
 * 'tests: N passed, N failed, N skipped' that CI reads to tell a run that tested something from one
 * that did not.
 */
import Mocha from 'mocha';

class StraitReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    const skipped: string[] = [];
    runner.on(Mocha.Runner.constants.EVENT_TEST_PENDING, (test) => skipped.push(test.fullTitle()));
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const s = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      for (const title of skipped) process.stdout.write(`skipped: ${title}\n`);
      process.stdout.write(`tests: ${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
    });
  }
}

export = StraitReporter;
