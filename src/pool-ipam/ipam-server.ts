/**
 * The service end of the plugin/service protocol (protocol.ts): HTTP over a unix socket that only root can
 * open, each request checked by its schema's validator before the handler sees it, each handler failure
 * answered as a CNI error; bytes that are no HTTP request, or one not received whole in time, are answered
 * and logged like any refusal. Requests are served concurrently; the handler serializes what it must.
 */
import { chmod, lstat, mkdir, mkdtemp, rename, rm, unlink } from 'node:fs/promises';
import { type IncomingMessage, STATUS_CODES, type ServerResponse, createServer } from 'node:http';
import { connect } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { checkInterfaceNameBytes } from '../api/cni-names';
import { type ValidatorTypes, checkCompiled } from '../api/compiled-validators';
import { InputError, StateError } from '../errors';
import type { Logger } from '../log';
import { IpamError } from './ipam-error';
import { parseJsonText, quoted } from '../json-text';
import {
  type AddRequest,
  type AddResponse,
  type CheckRequest,
  type DelRequest,
  type ErrorResponse,
  type GcRequest,
  type GcResponse,
  type StatusResponse,
  cniErrorCodes,
  ipamPaths,
  ipamRequestTimeoutMs,
  refusalMessage,
} from './protocol';

export interface IpamHandler {
  add(req: AddRequest): Promise<AddResponse>;
  check(req: CheckRequest): Promise<void>;
  del(req: DelRequest): Promise<void>;
  gc(req: GcRequest): Promise<GcResponse>;
  status(): Promise<StatusResponse>;
}

export interface IpamServer {
  /** The absolute path served. */
  readonly socket: string;
  /** Stops accepting, lets requests in flight finish (at most the plugin's timeout), removes the socket file. */
  close(): Promise<void>;
}

/** GC lists every attachment of a network on the node: a few hundred of ~100 bytes, far below this. */
const maxBodyBytes = 1 << 20;

/**
 * The plugin writes its whole request at once: one still arriving after this is a client that stalled
 * or hung, answered 408 and closed so it holds no connection.
 */
const defaultRequestArrivalMs = 10_000;

type Json = Record<string, unknown>;

/** A request the service will not pass to its handler: code 6 (not JSON) or 7 (a field), answered 400. */
class BadRequest extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/** What each request's schema cannot say: the bytes of its interface names (the schema checks their characters). */
const interfaceNames: {
  [N in 'poolIpamAddRequest' | 'poolIpamCheckRequest' | 'poolIpamDelRequest' | 'poolIpamGcRequest']: (
    req: ValidatorTypes[N],
  ) => [string, string][];
} = {
  poolIpamAddRequest: (req) => [['ifname', req.ifname]],
  poolIpamCheckRequest: (req) => [['ifname', req.ifname]],
  poolIpamDelRequest: (req) => [['ifname', req.ifname]],
  poolIpamGcRequest: (req) => req.validAttachments.map((a, i) => [`validAttachments[${i}].ifname`, a.ifname]),
};

/**
 * `body` checked by the request's validator (its schema: src/api/pool-ipam-protocol-schema.ts), which
 * drops the keys the request does not define; a field it refuses is answered code 7, naming it.
 */
function request<N extends keyof typeof interfaceNames>(name: N, body: Json): ValidatorTypes[N] {
  try {
    const req = checkCompiled(name, body);
    for (const [field, ifname] of interfaceNames[name](req)) checkInterfaceNameBytes(field, ifname);
    return req;
  } catch (err) {
    if (err instanceof InputError) throw new BadRequest(cniErrorCodes.invalidNetworkConfig, refusalMessage(err));
    throw err;
  }
}

interface Route {
  method: 'GET' | 'POST';
  command: string;
  /** Checks the body and calls the handler; the answer's body. */
  call(handler: IpamHandler, body: Json): Promise<object>;
}

const routes: Record<string, Route> = {
  [ipamPaths.add]: { method: 'POST', command: 'ADD', call: (h, body) => h.add(request('poolIpamAddRequest', body)) },
  [ipamPaths.check]: {
    method: 'POST',
    command: 'CHECK',
    call: async (h, body) => (await h.check(request('poolIpamCheckRequest', body)), {}),
  },
  [ipamPaths.del]: { method: 'POST', command: 'DEL', call: async (h, body) => (await h.del(request('poolIpamDelRequest', body)), {}) },
  [ipamPaths.gc]: { method: 'POST', command: 'GC', call: (h, body) => h.gc(request('poolIpamGcRequest', body)) },
  [ipamPaths.status]: { method: 'GET', command: 'STATUS', call: (h) => h.status() },
};

async function readBody(req: IncomingMessage, timedOut: WeakSet<object>): Promise<Json> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBodyBytes) throw new BadRequest(cniErrorCodes.decodeFailure, `body: larger than ${maxBodyBytes} bytes`, 413);
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof BadRequest) throw err;
    // The connection closed mid-body: by the client, or by the server's arrival timeout (clientError below).
    const declared = req.headers['content-length'] === undefined ? '' : ` of the ${req.headers['content-length']} it declared`;
    const why = timedOut.has(req.socket) ? 'not received whole in time' : 'the client closed the connection';
    throw new BadRequest(cniErrorCodes.decodeFailure, `body: ${why} after ${size} bytes${declared}`);
  }
  if (req.method === 'GET') return {};
  const text = Buffer.concat(chunks).toString('utf8');
  const parsed = parseJsonText(text);
  if ('problem' in parsed) throw new BadRequest(cniErrorCodes.decodeFailure, `body: not JSON: ${parsed.problem} (got ${quoted(text)})`);
  const body = parsed.value;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadRequest(cniErrorCodes.decodeFailure, `body: must be a JSON object (got ${quoted(body)})`);
  return body as Json;
}

/**
 * Why Node's HTTP parser gave up on a connection before any handler saw a request (not HTTP, headers
 * too large, closed mid-request, not received whole in time): the status and message to answer.
 */
function clientProblem(err: NodeJS.ErrnoException, requestArrivalMs: number): { status: number; msg: string } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, msg: `request: not received whole within ${requestArrivalMs} ms` };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, msg: 'request: headers larger than the 16 KiB the service reads' };
    case 'HPE_INVALID_EOF_STATE':
      return { status: 400, msg: 'request: the connection ended before the request was whole' };
    case 'ECONNRESET':
      return { status: 400, msg: 'request: the client reset the connection mid-request' };
    default:
      return { status: 400, msg: `request: not an HTTP/1.1 request the service can read (${err.code ?? 'no code'}: ${err.message})` };
  }
}

function reply(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The answer to what a handler threw: its own code for an IpamError, else an I/O failure with the message. */
function errorResponse(err: unknown): { status: number; body: ErrorResponse } {
  if (err instanceof BadRequest) return { status: err.status, body: { code: err.code, msg: err.message } };
  if (err instanceof IpamError)
    return { status: 500, body: { code: err.code, msg: err.message, ...(err.details === undefined ? {} : { details: err.details }) } };
  return { status: 500, body: { code: cniErrorCodes.ioFailure, msg: err instanceof Error ? err.message : String(err) } };
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  handler: IpamHandler,
  log: Logger,
  timedOut: WeakSet<object>,
): Promise<void> {
  const started = performance.now();
  // Not new URL(): a request target it cannot parse ("//[") would throw before any answer.
  const path = (req.url ?? '/').split('?')[0]!;
  const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
  if (!route || route.method !== req.method) {
    req.resume();
    const msg = `the pool IPAM service has no ${req.method} ${path}: the plugin and the service are of different versions`;
    log.warn({ method: req.method, path }, msg);
    return reply(res, route ? 405 : 404, { code: cniErrorCodes.incompatibleVersion, msg });
  }
  let body: Json = {};
  let status = 200;
  let answer: object;
  try {
    body = await readBody(req, timedOut);
    answer = await route.call(handler, body);
  } catch (err) {
    ({ status, body: answer } = errorResponse(err));
  }
  reply(res, status, answer);
  const error = status === 200 ? undefined : (answer as ErrorResponse);
  const line = {
    command: route.command,
    ...(typeof body.containerId === 'string' ? { containerId: body.containerId } : {}),
    ...(typeof body.ifname === 'string' ? { ifname: body.ifname } : {}),
    ...(typeof body.network === 'string' ? { network: body.network } : {}),
    outcome: error ? `error ${error.code}` : 'ok',
    ...(error ? { error: error.msg } : {}),
    durationMs: Math.round((performance.now() - started) * 10) / 10,
  };
  // The runtime asks STATUS every few seconds: its successes would drown the log.
  if (error) log.warn(line, 'pool IPAM request failed');
  else if (route.command === 'STATUS') log.debug(line, 'pool IPAM request');
  else log.info(line, 'pool IPAM request');
}

/** Whether a server accepts connections on `socket` (a socket file left by a dead process refuses them). */
function answers(socket: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = connect({ path: socket });
    // A live server with a full backlog does not accept at once: still live, not stale.
    probe.setTimeout(1000, () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') resolve(false);
      else reject(new StateError(`cannot tell whether another pool IPAM service answers on ${socket}: ${err.message}`));
    });
  });
}

/** Refuses a path something else owns: a file that is not a socket, or a socket a live server answers on. */
async function checkTakeOver(socket: string): Promise<void> {
  const existing = await lstat(socket).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!existing) return;
  if (!existing.isSocket())
    throw new StateError(
      `${socket} exists and is not a socket: refusing to replace it; remove it or serve pool IPAM on another socket path`,
    );
  if (await answers(socket))
    throw new StateError(
      `another pool IPAM service answers on ${socket}: refusing to take it over; stop that one first, or serve on another socket path`,
    );
}

/**
 * Serves `handler` on the unix socket `socket`. The socket is bound in a fresh directory only root can
 * enter, set to mode 0600 there and then renamed into place, so it is never reachable with a wider mode
 * (and a stale socket file of a dead service is replaced atomically).
 */
export async function serveIpam(options: {
  socket: string;
  handler: IpamHandler;
  log: Logger;
  requestArrivalMs?: number;
}): Promise<IpamServer> {
  const { handler, log, requestArrivalMs = defaultRequestArrivalMs } = options;
  const socket = resolve(options.socket);
  const dir = dirname(socket);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await checkTakeOver(socket);

  // Node checks these timeouts every connectionsCheckingInterval (30 s by default).
  const timeouts = {
    requestTimeout: requestArrivalMs,
    headersTimeout: requestArrivalMs,
    connectionsCheckingInterval: Math.min(1000, requestArrivalMs / 2),
  };
  /** Sockets the arrival timeout closed, so a body cut short by it is not blamed on the client. */
  const timedOut = new WeakSet<object>();
  /** Sockets with a request being served: its own answer and log line say how it ended. */
  const serving = new WeakSet<object>();
  const server = createServer(timeouts, (req, res) => {
    serving.add(req.socket);
    res.once('close', () => serving.delete(req.socket));
    serve(req, res, handler, log, timedOut).catch((err: unknown) => {
      log.error({ error: err instanceof Error ? err.message : String(err) }, 'cannot answer a pool IPAM request');
      res.destroy();
    });
  });
  // Instead of Node's default (a bare 400 and close): the same ErrorResponse as every refusal, and a log line.
  server.on('clientError', (err: NodeJS.ErrnoException, connection) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') timedOut.add(connection);
    // Bytes after a request, or its body cut: written now, an answer would interleave with the request's own.
    if (serving.has(connection)) return connection.destroy();
    const { status, msg } = clientProblem(err, requestArrivalMs);
    log.warn({ outcome: `error ${cniErrorCodes.decodeFailure}`, error: msg }, 'pool IPAM request refused');
    if (!connection.writable || err.code === 'ECONNRESET') return connection.destroy();
    const text = JSON.stringify({ code: cniErrorCodes.decodeFailure, msg } satisfies ErrorResponse);
    connection.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  });
  const privateDir = await mkdtemp(join(dir, `.${basename(socket)}-`));
  try {
    const bound = join(privateDir, 's');
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(bound, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await chmod(bound, 0o600);
    await rename(bound, socket);
  } catch (err) {
    server.close();
    throw new StateError(`cannot serve pool IPAM on ${socket}: ${(err as Error).message}`);
  } finally {
    await rm(privateDir, { recursive: true, force: true });
  }
  const { ino } = await lstat(socket);
  server.on('error', (err) => log.error({ error: err.message, socket }, 'pool IPAM server error'));
  log.info({ socket }, 'serving pool IPAM');

  let closed: Promise<void> | undefined;
  return {
    socket,
    close: () =>
      (closed ??= (async () => {
        await new Promise<void>((resolve) => {
          const grace = setTimeout(() => server.closeAllConnections(), ipamRequestTimeoutMs);
          server.close(() => {
            clearTimeout(grace);
            resolve();
          });
          server.closeIdleConnections();
        });
        // Only our own socket file: a successor may already serve on the path.
        const current = await lstat(socket).catch(() => undefined);
        if (current?.ino === ino) await unlink(socket).catch(() => undefined);
      })()),
  };
}
