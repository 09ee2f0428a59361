/**
 * Every test runs in exactly one suite: mocha's dry runs (nothing executed) of each suite's own
 * configuration (test/suites.js), against a dry run of every test file. A test no suite selects would
 * pass unseen: an `@esp` test was once left out of both the host run and the VM's list of files.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const root = join(__dirname, '..', '..');
const mocha = join(root, 'node_modules', '.bin', 'mocha');
// test/suites.js is plain CommonJS: the configurations load it before anything is built.
const { configFiles } = require(join(root, 'test', 'suites.js')) as { configFiles: Record<string, string> };

/** The tests a mocha run would run, as `file: full title`, without running any. */
async function dryRun(args: string[]): Promise<string[]> {
  // One seed for every run: the fuzz suites name their random seed in their titles.
  const env = { ...process.env, FUZZ_SEED: '1' };
  const { stdout } = await promisify(execFile)(mocha, ['--dry-run', '--reporter', 'json', ...args], {
    cwd: root,
    env,
    maxBuffer: 64 << 20,
  });
  const report = JSON.parse(stdout) as { tests: { file: string; fullTitle: string }[] };
  return report.tests.map((t) => `${t.file.slice(root.length + 1)}: ${t.fullTitle}`);
}

describe('test suites', () => {
  it('every test runs in exactly one suite (host, vm, multivm), chosen by the tags in its title', async function () {
    this.timeout(120_000);
    const names = Object.keys(configFiles);
    const [all, ...selected] = await Promise.all([
      dryRun(['--no-config', 'dist/test/**/*.test.js']),
      ...names.map((n) => dryRun(['--config', configFiles[n]!])),
    ]);
    const suitesOf = new Map<string, string[]>(all.map((t) => [t, []]));
    names.forEach((name, i) => {
      for (const test of selected[i]!) {
        assert.ok(suitesOf.has(test), `${name} runs a test the dry run of every file does not list: ${test}`);
        suitesOf.get(test)!.push(name);
      }
      assert.ok(selected[i]!.length > 0, `the ${name} suite selects no test`);
    });
    const misplaced = [...suitesOf]
      .filter(([, suites]) => suites.length !== 1)
      .map(([test, suites]) => `${test} (${suites.length === 0 ? 'no suite' : suites.join(', ')})`);
    assert.deepEqual(misplaced, [], 'tests not in exactly one suite');
    assert.ok(
      suitesOf.get(all.find((t) => t.includes('installs a state and reads it back'))!)?.includes('vm'),
      "xfrm's @esp test runs in the VM",
    );
  });
});
