/**
 * HTTP/1.1 as bytes over TCP, for what node:http's client will not send (any method, target, version,
 * header and body framing, several requests in one write): the request written and the connection
 * half-closed, then everything the server wrote until it closed; and what the answers in it say.
 */
import { connect } from 'node:net';

/** Everything the server wrote after `request`, until it closed the connection. */
export function rawExchange(port: number, request: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A reset after the server answered (it closed while we still wrote) is an ending like another.
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

export interface RawResponse {
  status: number;
  /** Header names lowercased. */
  headers: Record<string, string>;
  body: string;
}

/**
 * The first final answer in `data` (1xx interim answers skipped); its body by Content-Length or chunked
 * framing, else up to the close, and none for an answer to HEAD. Undefined when there is none.
 */
export function firstResponse(data: string, head = false): RawResponse | undefined {
  let rest = data;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(rest);
    if (end < 0 || !status) return undefined;
    const headers = Object.fromEntries(
      rest
        .slice(0, end)
        .split('\r\n')
        .slice(1)
        .map((line) => {
          const colon = line.indexOf(':');
          return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
        }),
    );
    rest = rest.slice(end + 4);
    const code = Number(status[1]);
    if (code < 200) continue;
    if (head) return { status: code, headers, body: '' };
    if (headers['content-length'] !== undefined) return { status: code, headers, body: rest.slice(0, Number(headers['content-length'])) };
    if (headers['transfer-encoding'] === 'chunked') {
      let body = '';
      for (let size = parseInt(rest, 16); size > 0; size = parseInt(rest, 16)) {
        const start = rest.indexOf('\r\n') + 2;
        body += rest.slice(start, start + size);
        rest = rest.slice(start + size + 2);
      }
      return { status: code, headers, body };
    }
    return { status: code, headers, body: rest };
  }
}

/** The status of every answer in `data`: each status line (a line starting `HTTP/1.x nnn`). */
export const statusCodes = (data: string): number[] => [...data.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
