// `npm run test:multivm`: the multi-VM suite. Which suite runs a test is one rule, in test/suites.js.
module.exports = require('../suites').mochaConfig('multivm');
