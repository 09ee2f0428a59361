/** Each lab process's metrics and health server (every agent's and controller's, on loopback): its port, and GETs from it. */
import { parseSamples } from '../../src/metrics/exposition';
import type { LabTopology } from './topology';

/**
 * Every agent and controller of the lab runs in this machine's own network namespace: each gets a
 * loopback port of its own for /metrics, /healthz and /readyz, agents from 29720 in node order,
 * controllers from 29780 (`lab test` scrapes them).
 */
export function labMetricsPort(topology: LabTopology, name: string): number {
  const nodes = topology.clusters.flatMap((c) => c.nodes.map((n) => `agent-${n.name}`));
  const controllers = topology.clusters.flatMap((c) => [`controller-${c.id}`, `controller-${c.id}-0`, `controller-${c.id}-1`]);
  if (nodes.includes(name)) return 29720 + nodes.indexOf(name);
  if (controllers.includes(name)) return 29780 + controllers.indexOf(name);
  throw new Error(`no lab process ${name}`);
}

/**
 * One GET on a connection of its own: between scrapes the lab blocks on synchronous map reads, long
 * enough on an emulated VM for the server to close a kept-alive connection the client would then reuse
 * ("fetch failed", UND_ERR_SOCKET). A failure names the URL and the socket's error.
 */
export async function get(port: number, path: string, timeoutMs: number): Promise<{ status: number; text: string }> {
  const url = `http://127.0.0.1:${port}${path}`;
  try {
    const response = await fetch(url, { headers: { connection: 'close' }, signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, text: await response.text() };
  } catch (err) {
    const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`GET ${url}: ${(err as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}`);
  }
}

/**
 * The digest of the whole spec an agent runs (its strait_agent_applied_spec_info), undefined while it
 * runs none or its server does not answer (starting, restarting: the caller reads again).
 */
export async function runningSpec(port: number, timeoutMs: number): Promise<string | undefined> {
  try {
    const { status, text } = await get(port, '/metrics', timeoutMs);
    if (status !== 200) return undefined;
    return parseSamples(text).find((s) => s.name === 'strait_agent_applied_spec_info' && s.value === 1)?.labels.spec;
  } catch {
    return undefined;
  }
}
