// Which suite runs a test: the tags in its full title (its describe blocks' titles included), nothing
// else; every suite loads every test file. test/suites.test.ts checks with mocha dry runs that each test
// is in exactly one suite.
//   host     `npm test`: this machine's kernel; everything not tagged for another suite. `@no-esp`: needs
//            a kernel without ESP, as this one is.
//   vm       `npm run test:vm` (test/vm/run.sh, once per kernel): Debian's 6.1 and 6.12 under qemu. `@esp`
//            needs ESP in the kernel, `@vm-kernel` a module this kernel lacks (ipvlan) or Debian's
//            kernels themselves (the eBPF lab on 6.1's clsact and 6.12's tcx). `@vm-6.1-only`: left out
//            of the 6.12 run by test/vm/kernels.sh, for CI's time.
//   multivm  `npm run test:multivm`: three local qemu VMs, booted by the test itself.
// A strict run (CI=true, and always in the VMs) fails on a skipped test, one that would pass while
// testing nothing, and on an `it.only`, which would run one test and call the suite green.
'use strict';

const files = ['dist/test/**/*.test.js'];
const tags = { vm: '@esp|@vm-kernel', multivm: '@multivm' };
const strict = ['true', '1'].includes(process.env.CI ?? '');

// property-seed: FC_SEED / FC_PATH replay a failed fast-check property (the fuzz suites: FUZZ_SEED).
const common = {
  spec: files,
  recursive: true,
  require: ['dist/test/support/property-seed.js'],
  reporter: 'dist/test/support/reporter.js',
  'enable-source-maps': true,
};

/** The mocha configuration of one suite. */
function mochaConfig(suite) {
  switch (suite) {
    case 'host':
      return {
        ...common,
        grep: `${tags.vm}|${tags.multivm}`,
        invert: true,
        timeout: 60000,
        'forbid-pending': strict,
        'forbid-only': strict,
      };
    case 'vm':
      return { ...common, grep: tags.vm, timeout: 60000, 'forbid-pending': true, 'forbid-only': true };
    case 'multivm':
      return { ...common, grep: tags.multivm, timeout: 1800000, 'forbid-pending': true, 'forbid-only': true };
    default:
      throw new Error(`no test suite ${suite} (host, vm, multivm)`);
  }
}

/** Where each suite's configuration is, for `mocha --config`. */
const configFiles = { host: '.mocharc.js', vm: 'test/vm/mocharc.js', multivm: 'test/multivm/mocharc.js' };

module.exports = { mochaConfig, configFiles };
