/** The plugin end of the plugin/service protocol: one HTTP request over the service's unix socket. */
import { type Stats, statSync } from 'node:fs';
import { request } from 'node:http';
import { checkCompiled } from '../api/compiled-validators';
import { InputError } from '../errors';
import { IpamError } from '../pool-ipam/ipam-error';
import { type CniErrorCode, type ErrorResponse, cniErrorCodes, ipamRequestTimeoutMs } from '../pool-ipam/protocol';

export interface ServiceCall {
  socket: string;
  method: 'GET' | 'POST';
  path: string;
  body?: object;
  /** The code when the service cannot be reached or does not answer: 11 (try again later), 50 for STATUS. */
  unavailableCode: CniErrorCode;
  timeoutMs?: number;
}

/** `body` as an ErrorResponse (its schema: src/api/pool-ipam-protocol-schema.ts), or undefined when it is none. */
function errorResponse(body: unknown): ErrorResponse | undefined {
  try {
    return checkCompiled('poolIpamErrorResponse', body);
  } catch (err) {
    if (err instanceof InputError) return undefined;
    throw err;
  }
}

const kindOf = (stats: Stats) =>
  stats.isFile()
    ? 'a regular file'
    : stats.isDirectory()
      ? 'a directory'
      : stats.isCharacterDevice()
        ? 'a character device'
        : stats.isBlockDevice()
          ? 'a block device'
          : stats.isFIFO()
            ? 'a FIFO'
            : 'not a socket';

/**
 * What is at the socket path when it is something other than a socket: connecting to a file answers
 * ECONNREFUSED as a dead service's socket does, but no waiting will make a file serve.
 */
function notASocket(socket: string): string | undefined {
  try {
    const stats = statSync(socket);
    return stats.isSocket() ? undefined : kindOf(stats);
  } catch {
    return undefined;
  }
}

/** Why the socket could not be used, for the operator; and whether waiting can help. */
function connectionFailure(err: NodeJS.ErrnoException, socket: string, unavailableCode: CniErrorCode): IpamError {
  if (err.code === 'ENOTDIR')
    return new IpamError(
      cniErrorCodes.invalidNetworkConfig,
      `ipam.socket: a directory of the path is a file, so no service can listen there (ENOTDIR) (got ${JSON.stringify(socket)})`,
    );
  const kind = err.code === 'ENOENT' ? undefined : notASocket(socket);
  if (kind)
    return new IpamError(
      cniErrorCodes.invalidNetworkConfig,
      `ipam.socket: ${kind}, not the pool IPAM service's unix socket (got ${JSON.stringify(socket)})`,
    );
  switch (err.code) {
    case 'ENOENT':
      return new IpamError(unavailableCode, `the pool IPAM service is not running: there is no socket ${socket} (ENOENT); try again later`);
    case 'ECONNREFUSED':
      return new IpamError(
        unavailableCode,
        `the pool IPAM service is not running: nothing listens on ${socket} (ECONNREFUSED); try again later`,
      );
    case 'EACCES':
      return new IpamError(
        cniErrorCodes.ioFailure,
        `cannot open ${socket}: permission denied (EACCES); the socket is for root only (mode 0600)`,
      );
    default:
      // ECONNRESET, EPIPE, "socket hang up": the service went away mid-request (restarting).
      return new IpamError(
        unavailableCode,
        `the pool IPAM service on ${socket} closed the connection before answering (${err.code ?? err.message}); try again later`,
      );
  }
}

/** The answer's body on 200; any other answer is thrown as the IpamError its ErrorResponse body carries. */
export function callService(call: ServiceCall): Promise<unknown> {
  const { socket, unavailableCode, timeoutMs = ipamRequestTimeoutMs } = call;
  const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: socket,
        method: call.method,
        path: call.path,
        // One request per process: no keep-alive, so the process exits as soon as the answer is in.
        agent: false,
        headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (err) => reject(connectionFailure(err, socket, unavailableCode)));
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            return reject(
              new IpamError(
                cniErrorCodes.ioFailure,
                `the pool IPAM service on ${socket} answered ${call.method} ${call.path} with HTTP ${res.statusCode} and a body that is not JSON: ${JSON.stringify(text.slice(0, 200))}`,
              ),
            );
          }
          if (res.statusCode === 200) return resolve(body);
          const error = errorResponse(body);
          if (error) return reject(new IpamError(error.code as CniErrorCode, error.msg, error.details));
          reject(
            new IpamError(
              cniErrorCodes.ioFailure,
              `the pool IPAM service on ${socket} answered ${call.method} ${call.path} with HTTP ${res.statusCode} and no error: ${JSON.stringify(text.slice(0, 200))}`,
            ),
          );
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(
        new IpamError(unavailableCode, `no answer from the pool IPAM service on ${socket} within ${timeoutMs / 1000} s; try again later`),
      );
    }, timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(connectionFailure(err, socket, unavailableCode));
    });
    req.end(payload);
  });
}
