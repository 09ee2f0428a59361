// `npm run lint` (depcruise): the shape of src/ and lab/. Type-only imports count: a cycle of types is
// still two modules that cannot be understood, or moved, one without the other.
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'modules that import each other, directly or around a circle',
      from: {},
      to: { circular: true },
    },
    {
      name: 'product-not-lab',
      severity: 'error',
      comment: 'the lab (lab/, the package strait-lab) is a test bed, not the product: nothing under src/ imports it',
      from: { path: '^src/' },
      to: { path: '^lab/' },
    },
    {
      name: 'agent-sees-the-port',
      severity: 'error',
      comment:
        'the agent drives a dataplane through its port (src/dataplane/port.ts) and opens or cleans one through src/dataplane/open.ts; what is inside each is not its business',
      from: { path: '^src/agent/' },
      to: { path: '^src/dataplane/', pathNot: ['^src/dataplane/(port|open)\\.ts$'] },
    },
    {
      name: 'dataplanes-apart',
      severity: 'error',
      comment: 'the eBPF datapath and the kernel fallback share only the port and the kernel adapters (src/kernel), never each other',
      from: { path: '^src/dataplane/(ebpf|kernel)/' },
      to: { path: '^src/dataplane/(ebpf|kernel)/', pathNot: ['^src/dataplane/$1/'] },
    },
    {
      name: 'control-plane-adapters-apart',
      severity: 'error',
      comment:
        'the agent and the controller each have a files adapter (files/) and a Kubernetes adapter (kubernetes/) of one core; an adapter never imports the other',
      from: { path: '^src/(agent|controller)/(files|kubernetes)/' },
      to: { path: '^src/$1/(files|kubernetes)/', pathNot: ['^src/$1/$2/'] },
    },
    {
      name: 'core-below-its-adapters',
      severity: 'error',
      comment:
        "the agent's loop and the controller's pure core (the files at the top of src/agent, src/controller) know their ports, not the adapters; src/agent/control-plane.ts, which opens one, is the exception",
      from: { path: '^src/(agent|controller)/[^/]+$', pathNot: ['^src/agent/control-plane\\.ts$'] },
      to: { path: '^src/$1/(files|kubernetes)/' },
    },
    {
      name: 'api-is-a-floor',
      severity: 'error',
      comment:
        'src/api (the documents and their readers) sits under the cores and the adapters: it imports only net, the node spec types and MTU arithmetic (nodespec/spec, nodespec/tunnel-mtu, both leaves), json-text and errors',
      from: { path: '^src/api/' },
      to: {
        path: '^src/',
        pathNot: ['^src/api/', '^src/net/', '^src/nodespec/(spec|tunnel-mtu)\\.ts$', '^src/errors\\.ts$', '^src/json-text\\.ts$'],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
