/**
 * HTTP/1.1 over a unix socket byte by byte, as no well-behaved client writes it: for the service
 * socket's tests of requests cut short, malformed or never finished (test/cni, test/fuzz).
 */
import { connect } from 'node:net';

/** What the client does once its bytes are written: wait for the answer, half-close, or hang up. */
export type After = 'wait' | 'end' | 'destroy';

/** An HTTP/1.1 request as the plugin writes it. */
export const frame = (method: string, path: string, body?: string, headers: string[] = []) =>
  [
    `${method} ${path} HTTP/1.1`,
    'host: ipam',
    ...(body === undefined ? [] : ['content-type: application/json', `content-length: ${Buffer.byteLength(body)}`]),
    ...headers,
    '',
    body ?? '',
  ].join('\r\n');

export interface Answer {
  status: number;
  body: string;
}

/** Writes `bytes`, then waits for one whole answer, the connection's end or `ms`. */
export function exchange(socket: string, bytes: string, encoding: BufferEncoding, after: After, ms: number): Promise<Answer | undefined> {
  return new Promise((resolve, reject) => {
    const connection = connect(socket);
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (answer: Answer | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      connection.destroy();
      resolve(answer);
    };
    const parsed = (): Answer | undefined => {
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const head = text.slice(0, end);
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (received.length < end + 4 + length) return undefined;
      return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), body: received.subarray(end + 4, end + 4 + length).toString('utf8') };
    };
    const timer = setTimeout(() => finish(parsed()), ms);
    connection.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = parsed();
      if (answer) finish(answer);
    });
    connection.on('close', () => finish(parsed()));
    connection.on('error', (err: NodeJS.ErrnoException) => {
      // The service closing on a client that hung up or wrote on: the answer, if any, is already in.
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') finish(parsed());
      else reject(err);
    });
    connection.on('connect', () => {
      connection.write(bytes, encoding);
      if (after === 'end') connection.end();
      if (after === 'destroy') connection.destroy();
    });
  });
}
