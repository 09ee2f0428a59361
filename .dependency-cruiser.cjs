// `npm run lint` (depcruise): the shape of src/ and lab/. Type-only imports count: a cycle of types is
// still two modules that cannot be understood, or moved, one without the other.
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'modules that import each other, directly or around a circle', from: {}, to: { circular: true } },
    {
      name: 'product-not-lab',
      severity: 'error',
      comment: 'the lab (lab/, the package strait-lab) is a test bed, not the product: nothing under src/ imports it',
      from: { path: '^src/' },
      to: { path: '^lab/' },
    },
    {
      name: 'api-is-a-floor',
      severity: 'error',
      comment: 'src/api (the documents and their readers) sits under the cores and the adapters: it imports only net, the node spec types and MTU arithmetic (nodespec/spec, nodespec/tunnel-mtu, both leaves), json-text and errors',
      from: { path: '^src/api/' },
      to: { path: '^src/', pathNot: ['^src/api/', '^src/net/', '^src/nodespec/(spec|tunnel-mtu)\\.ts$', '^src/errors\\.ts$', '^src/json-text\\.ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
