#!/usr/bin/env node
// The package's bin (npm links it as node_modules/.bin/strait-lab): the lab as the repository's build
// compiled it (`npm run build`, dist/lab/src/main.js).
require('../../dist/lab/src/main.js').main();
