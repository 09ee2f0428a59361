// `npm test`: the host suite. Which suite runs a test is one rule, in test/suites.js.
module.exports = require('./test/suites').mochaConfig('host');
