/**
 * The run directory: the file-based stand-in for the API server (docs/lab.md), where each document lives,
 * relative to the directory. One writer per file; every file is replaced atomically.
 */
export const runDirPaths = {
  /** Our NetworkConfig spec for `recipient`, written by the owner's controller. */
  spec: (owner: string, recipient: string) => `exchange/${owner}/${recipient}.spec.json`,
  /** Its status, written by the recipient's controller. */
  status: (owner: string, recipient: string) => `exchange/${owner}/${recipient}.status.json`,
  /** The cluster's IPAM state (FileStore), written by its controller. */
  ipam: (cluster: string) => `${cluster}/ipam.json`,
  /** A node's NodeDataplane object, written by the controller. */
  nodeSpec: (cluster: string, node: string) => `${cluster}/nodes/${node}.json`,
  /** Its status: the node agent's heartbeat. */
  heartbeat: (cluster: string, node: string) => `${cluster}/status/${node}.json`,
  /**
   * Multi-cluster services (docs/services.md): an exported Service (its ServiceExport, Service and
   * EndpointSlices, written by whoever stands in for the cluster: the lab) and its conditions (by the
   * controller); the owner's offer of it to a peer (`{generation, spec}`, by the owner) and the peer's
   * answer (by the recipient); an imported one (by the controller, for the cluster's service proxy).
   */
  exportedServices: (cluster: string) => `${cluster}/services`,
  exportedService: (cluster: string, namespace: string, name: string) => `${cluster}/services/${namespace}.${name}.json`,
  exportStatus: (cluster: string, namespace: string, name: string) => `${cluster}/services/${namespace}.${name}.status.json`,
  serviceOffers: (owner: string, recipient: string) => `exchange/${owner}/services/${recipient}`,
  serviceOffer: (owner: string, recipient: string, namespace: string, name: string) =>
    `exchange/${owner}/services/${recipient}/${namespace}.${name}.json`,
  serviceOfferStatus: (owner: string, recipient: string, namespace: string, name: string) =>
    `exchange/${owner}/services/${recipient}/${namespace}.${name}.status.json`,
  serviceImports: (cluster: string) => `${cluster}/imports`,
  serviceImport: (cluster: string, namespace: string, name: string) => `${cluster}/imports/${namespace}.${name}.json`,
  /** The endpoints a hub reflects, with the addresses peers dial. */
  reflections: (cluster: string) => `${cluster}/reflections.json`,
  /** The controller's own status, rewritten each round. */
  controllerStatus: (cluster: string) => `${cluster}/controller.json`,
  /** The lab's: the controller configuration it wrote, the topology it runs, IPsec secrets, logs, pid files. */
  controllerConfig: (cluster: string) => `${cluster}/controller-config.json`,
  topology: 'topology.json',
  /** A lab on Kubernetes: the cluster's kubeconfig (written by its API server) and that server's token. */
  kubeconfig: (cluster: string) => `${cluster}/kubeconfig`,
  /** The kubeconfig of one of Strait's identities (agent, controller) in the cluster's API server, and their tokens. */
  identityKubeconfig: (cluster: string, identity: string) => `${cluster}/kubeconfig-${identity}`,
  apiServerUsers: (cluster: string) => `${cluster}/users.csv`,
  apiServerToken: (cluster: string) => `${cluster}/token`,
  /**
   * The serving certificate and key of the cluster's API server, and the key it signs ServiceAccount
   * tokens with: made once, so a restarted API server is the same one to its clients.
   */
  apiServerCertificate: (cluster: string) => `${cluster}/apiserver.crt`,
  apiServerCertificateKey: (cluster: string) => `${cluster}/apiserver.key`,
  serviceAccountKey: (cluster: string) => `${cluster}/service-account.key`,
  /** The data directory of the cluster's etcd, its API server's storage, and the etcd's client URL. */
  etcdData: (cluster: string) => `${cluster}/etcd`,
  etcdUrl: (cluster: string) => `${cluster}/etcd-url`,
  secrets: (cluster: string) => `secrets/${cluster}`,
  logs: 'logs',
  /** A lab across machines: one machine's own pid files, logs and probe report (only it may read its pids). */
  machine: (node: string) => `machines/${node}`,
  /** What `strait-lab test --node` found from that machine's pods, for `strait-lab report`. */
  results: (node: string) => `results/${node}.json`,
  pids: 'pids',
  /** The lab's: how its supervisors restart a crashed agent or controller (lab/src/restart-backoff.ts), beside `pids`. */
  restartPolicy: 'restart-policy.json',
};
