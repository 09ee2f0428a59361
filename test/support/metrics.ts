/** Scraping a strait process's metrics and health server over HTTP, and reading samples out of the text. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Sample, parseSamples } from '../../src/metrics/exposition';

export { type Sample, parseSamples };

export interface Answer {
  status: number;
  body: string;
}

/** GET http://127.0.0.1:port/path, without keeping the connection (so it holds nothing open). */
export async function get(port: number, path: string): Promise<Answer> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { connection: 'close' } });
  return { status: res.status, body: await res.text() };
}

/** A port nothing listens on now: bound by the kernel's choice, then released. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The samples of one metric, each as "label=value ... value" (labels in name order), sorted: to compare with a literal list. */
export function series(samples: readonly Sample[], name: string): string[] {
  return samples
    .filter((s) => s.name === name)
    .map((s) =>
      [
        ...Object.entries(s.labels)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => `${k}=${v}`),
        s.value,
      ].join(' '),
    )
    .sort();
}

/** The metric names present, those starting with `prefix`, each once. */
export function metricNames(samples: readonly Sample[], prefix: string): string[] {
  return [...new Set(samples.map((s) => s.name).filter((n) => n.startsWith(prefix)))].sort();
}

/** GET /metrics, parsed. */
export async function scrape(port: number): Promise<Sample[]> {
  const { status, body } = await get(port, '/metrics');
  if (status !== 200) throw new Error(`GET /metrics answered ${status}: ${body}`);
  return parseSamples(body);
}

/**
 * For processes under test that are not about metrics: without it each would listen on the default
 * port, and two at once (controllers of several clusters, suites run side by side) would collide.
 */
export const noMetricsServer = ['--metrics-port', '0'];
