/**
 * One kept-alive connection per API server instead of one per request. @kubernetes/client-node (1.4)
 * builds a new https.Agent for every request and watch (KubeConfig.createAgent, dist/config.js), so each
 * call is a new TCP connection and a full TLS handshake: an agent renewing its Lease five times a second
 * made five handshakes a second, on its CPU and on kube-apiserver's (measured on the lab's server: 200
 * lists cost 200 connections, 7.7 s and 1.8 s of CPU; kept alive, 1 connection, 1.5 s and 0.5 s). Go's
 * client-go keeps its connections alive the same way.
 *
 * createAgent is private in client-node's types, so it is replaced on the instance; a test
 * (test/k8s/keep-alive.test.ts) counts the TLS connections, and fails if an upgrade of client-node stops
 * calling it.
 */
import { Agent, type AgentOptions } from 'node:https';
import type { Cluster, KubeConfig } from '@kubernetes/client-node';

/** The options that make two agents different: where they connect and how they authenticate TLS. */
const tlsIdentity = (cluster: Cluster, o: AgentOptions) =>
  JSON.stringify([cluster.server, o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized], (_k, v: unknown) =>
    Buffer.isBuffer(v) ? v.toString('base64') : v,
  );

/** Makes `config`'s clients reuse their connections (per server and TLS identity); returns it. */
export function keepConnectionsAlive(config: KubeConfig): KubeConfig {
  const target = config as unknown as { createAgent: (cluster: Cluster | null, options: AgentOptions) => unknown };
  const createAgent = target.createAgent.bind(config);
  const agents = new Map<string, Agent>();
  target.createAgent = (cluster, options) => {
    // A proxy, or plain HTTP: client-node's own agent.
    if (!cluster || cluster.proxyUrl || !cluster.server.startsWith('https:')) return createAgent(cluster, options);
    const key = tlsIdentity(cluster, options);
    let agent = agents.get(key);
    if (!agent) {
      agent = new Agent({ ...options, keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
  return config;
}
