// `npm run test:vm` (test/vm/run.sh): the VM suite. Which suite runs a test is one rule, in test/suites.js.
module.exports = require('../suites').mochaConfig('vm');
