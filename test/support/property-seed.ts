/**
 * Replaying a failed property test: fast-check's failure names its `seed` and `path`; run the suite again
 * with `FC_SEED=<seed> FC_PATH=<path>` and every property starts from them, so the failing one fails at
 * once with the same counterexample. Loaded by every suite (test/suites.js, `require`).
 */
import fc from 'fast-check';

const seed = process.env.FC_SEED;
if (seed !== undefined) {
  if (!/^-?\d+$/.test(seed)) throw new Error(`FC_SEED must be an integer, as fast-check prints it (got ${JSON.stringify(seed)})`);
  const path = process.env.FC_PATH;
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: Number(seed), ...(path ? { path } : {}) });
  process.stderr.write(`property tests replay FC_SEED=${seed}${path ? ` FC_PATH=${path}` : ''}\n`);
}
