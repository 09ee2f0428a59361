// The suite on this machine's kernel (`npm test`). Tests that need a kernel with ESP carry `@esp` in
// their title, and tests that need a module this kernel lacks carry `@vm-kernel` (ipvlan): both run in
// the VM instead (`npm run test:vm`, test/vm/run.sh). Tests for a kernel without ESP carry `@no-esp`.
// The multi-VM lab (`@multivm`, test/multivm) boots its own VMs: `npm run test:multivm` only.
// A strict run (CI=true) fails on any skipped test: one that skipped the kernel tests would pass while
// testing nothing.
const strict = ['true', '1'].includes(process.env.CI ?? '');

module.exports = {
  spec: ['dist/test/**/*.test.js'],
  grep: '@esp|@vm-kernel|@multivm',
  invert: true,
  'forbid-pending': strict,
  timeout: 60000,
  recursive: true,
  reporter: 'dist/test/support/reporter.js',
  'enable-source-maps': true,
};
