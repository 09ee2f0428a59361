/**
 * Why a lab did not converge, told from what the wait saw and what the controllers logged: how many
 * distinct specs each node was given while the lab waited (a spec that keeps changing is a control
 * plane that keeps deciding anew: a gateway moving, a peering going up and down), and the controllers'
 * last decisions. A lab's run directory goes with a failed test; this goes into its error.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The distinct specs each node was given, counted as the wait reads them. */
export class SpecsSeen {
  private readonly digests = new Map<string, Set<string>>();

  saw(node: string, digest: string): void {
    const set = this.digests.get(node) ?? new Set<string>();
    set.add(digest);
    this.digests.set(node, set);
  }

  /** "e-gw 3, h-gw 5" for the nodes given more than one spec; '' when none was. */
  changes(): string {
    return [...this.digests]
      .filter(([, d]) => d.size > 1)
      .map(([node, d]) => `${node} ${d.size}`)
      .join(', ');
  }
}

const decisions = /gateway|^peer |refused|failed/;

/** The last `count` decisions (gateway, peer state, failures) in each controller's log, as "file: msg {fields}". */
export function controllerDecisions(logs: string, count = 4): string[] {
  let names: string[];
  try {
    names = readdirSync(logs)
      .filter((n) => n.startsWith('controller') && n.endsWith('.log'))
      .sort();
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const lines = readFileSync(join(logs, name), 'utf8')
      .split('\n')
      .flatMap((line) => {
        try {
          const { msg, gateway, previous, peer, state, reason } = JSON.parse(line) as Record<string, unknown>;
          return typeof msg === 'string' && decisions.test(msg)
            ? [`${name.slice(0, -4)}: ${msg} ${JSON.stringify({ gateway, previous, peer, state, reason })}`]
            : [];
        } catch {
          return [];
        }
      });
    return lines.slice(-count);
  });
}
