/**
 * The metrics and health server of one strait process, on node:http: `GET /metrics` (the registry in
 * Prometheus text format; 500 with the collector's error when one fails), `GET /healthz` (200 while the
 * server runs: it opens before the process's loop starts and closes when the loop stops) and
 * `GET /readyz` (200, or 503 with one line saying why not); HEAD of each answers the same without the
 * body. Any other method or path (the path as sent, before any `?`) is 404 naming what is served, a
 * CONNECT too. A request node:http cannot read (a malformed request line, header or body framing, an
 * Upgrade) is its own 400, headers past its limit 431, the connection closed; an Expect other than
 * 100-continue its 417. It starts before the
 * process touches anything, so a port in use fails the start-up with the flag to change, not the
 * process later.
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Registry } from 'prom-client';
import { InputError } from '../errors';
import type { Logger } from '../log';
import type { MetricsListen } from './listen';

/** Why the process is not ready, in one line; undefined when it is. */
export type Readiness = () => string | undefined;

export interface MetricsServer {
  /** The port it listens on (the one the kernel chose when asked for 0, as tests do). */
  readonly port: number;
  /** Stops listening and ends open connections (a scraper's keep-alive); safe to call twice. */
  close(): Promise<void>;
}

const hostPort = (address: string, port: number) => (address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);

function reply(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}

const notFound = 'not found: GET /metrics, /healthz or /readyz\n';

async function handle(req: IncomingMessage, res: ServerResponse, registry: Registry, readiness: Readiness): Promise<void> {
  // The path as sent: a target that is no path (`*`, an absolute URL) is no path served, not an error.
  const path = (req.url ?? '/').split('?')[0];
  const known = path === '/metrics' || path === '/healthz' || path === '/readyz';
  if (!known || (req.method !== 'GET' && req.method !== 'HEAD')) return reply(res, 404, notFound);
  if (path === '/healthz') return reply(res, 200, 'ok\n');
  if (path === '/readyz') {
    const why = readiness();
    return why === undefined ? reply(res, 200, 'ready\n') : reply(res, 503, `not ready: ${why.replace(/\s*\n\s*/g, ' ')}\n`);
  }
  return reply(res, 200, await registry.metrics(), registry.contentType);
}

/** Listens on `listen`; a port in use or an address not on this host is an InputError naming the flag. */
export async function startMetricsServer(
  listen: MetricsListen,
  registry: Registry,
  readiness: Readiness,
  log: Logger,
): Promise<MetricsServer> {
  const { address, port } = listen;
  const endpoint = hostPort(address, port);
  const server = createServer((req, res) => {
    handle(req, res, registry, readiness).catch((err: unknown) => {
      // A collector that failed (a map that cannot be read): the scrape fails, the process goes on.
      const error = err instanceof Error ? err.message : String(err);
      log.error({ error }, 'cannot answer a metrics request');
      if (!res.headersSent) reply(res, 500, `${error}\n`);
      else res.destroy();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, address, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new InputError(
        '--metrics-port',
        String(port),
        `${endpoint} is already in use (EADDRINUSE): another process listens there; give another --metrics-port, or 0 for no metrics server`,
      );
    if (code === 'EADDRNOTAVAIL')
      throw new InputError(
        listen.addressFrom === 'default' ? '--metrics-address' : listen.addressFrom,
        address,
        `is not an address of this host (EADDRNOTAVAIL), cannot listen on ${endpoint}`,
      );
    throw new Error(`cannot listen on ${endpoint} for metrics (--metrics-address, --metrics-port): ${(err as Error).message}`);
  }
  const bound = (server.address() as AddressInfo).port;
  server.on('error', (err) => log.error({ error: err.message }, 'metrics server error'));
  // node:http hands a CONNECT to this event, and closes the connection unanswered when nothing listens.
  // The socket is then no connection of the server's (close() would wait for it): answered, then gone.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    socket.end(
      `HTTP/1.1 404 Not Found\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(notFound)}\r\nconnection: close\r\n\r\n${notFound}`,
      () => socket.destroy(),
    );
  });
  log.info({ endpoint: hostPort(address, bound), paths: ['/metrics', '/healthz', '/readyz'] }, 'serving metrics and health');
  let closed: Promise<void> | undefined;
  return {
    port: bound,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
