/**
 * A pod's prober: one long-lived process in a pod's network namespace that runs the echo probes it is
 * asked for, so that a lab test starts Node.js once per pod rather than once per check (a start cost
 * 0.3–0.5 s of CPU on a host and seconds in an emulated VM, more than the probe itself). Run as
 * `node pod-prober.js` inside the pod's namespace; each stdin line is a request {id, mode, to, port,
 * waitMs, learnsPathMtu?}, each stdout line the answer {id, ...EchoResult} as it settles (requests run concurrently).
 * Exits when its stdin closes: the lab test that started it ended, or died.
 */
import { createInterface } from 'node:readline';
import { type EchoMode, type EchoResult, echo, isEchoMode } from './echo-client';

export interface ProbeRequest {
  id: number;
  mode: EchoMode;
  to: string;
  port: number;
  waitMs: number;
  /** `frag`: send again as the path MTU is learnt, whatever the family (echo-client.ts). */
  learnsPathMtu?: boolean;
}

export type ProbeAnswer = { id: number } & EchoResult;

/** A request line, or why it is not one (naming the field and its value). */
export function parseProbeRequest(line: string): ProbeRequest | { error: string; id?: number } {
  let r: Partial<Record<keyof ProbeRequest, unknown>>;
  try {
    r = JSON.parse(line) as typeof r;
  } catch {
    return { error: `not a JSON request: ${JSON.stringify(line.slice(0, 80))}` };
  }
  if (typeof r !== 'object' || r === null) return { error: `not a JSON object: ${JSON.stringify(line.slice(0, 80))}` };
  const { id, mode, to, port, waitMs, learnsPathMtu } = r;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return { error: `id: ${JSON.stringify(id)} is not an integer` };
  if (typeof mode !== 'string' || !isEchoMode(mode)) return { id, error: `mode: ${JSON.stringify(mode)} is not an echo mode` };
  if (typeof to !== 'string' || to === '') return { id, error: `to: ${JSON.stringify(to)} is not an address` };
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
    return { id, error: `port: ${JSON.stringify(port)} is not a port` };
  if (typeof waitMs !== 'number' || !(waitMs > 0)) return { id, error: `waitMs: ${JSON.stringify(waitMs)} is not a positive wait` };
  if (learnsPathMtu !== undefined && typeof learnsPathMtu !== 'boolean')
    return { id, error: `learnsPathMtu: ${JSON.stringify(learnsPathMtu)} is not a boolean` };
  return { id, mode, to, port, waitMs, ...(learnsPathMtu === undefined ? {} : { learnsPathMtu }) };
}

if (require.main === module) {
  const answer = (a: ProbeAnswer | { id?: number; error: string }) => process.stdout.write(`${JSON.stringify(a)}\n`);
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const request = parseProbeRequest(line);
    if ('error' in request) return answer(request);
    void echo(request.mode, request.to, request.port, request.waitMs, request.learnsPathMtu).then((r) => answer({ id: request.id, ...r }));
  });
  lines.on('close', () => process.exit(0));
}
