import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type Server, type Socket, createServer } from 'node:net';
import { join } from 'node:path';
import { callService } from '../../src/cni/service-client';
import { IpamError } from '../../src/pool-ipam/ipam-error';
import { socketDir } from './socket-files';

/** A server on the socket that does `onRequest` with each connection once the request is in. */
async function rawServer(socket: string, onRequest: (connection: Socket) => void): Promise<Server> {
  const server = createServer((connection) => connection.once('data', () => onRequest(connection)));
  server.listen(socket);
  await once(server, 'listening');
  return server;
}

describe('strait-ipam service client', () => {
  let dir: { dir: string; cleanup: () => void };
  let socket: string;
  let server: Server | undefined;
  const connections: Socket[] = [];

  beforeEach(() => {
    dir = socketDir();
    socket = join(dir.dir, 'ipam.sock');
  });
  afterEach(async () => {
    connections.splice(0).forEach((c) => c.destroy());
    if (server) await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    dir.cleanup();
  });

  it('gives up on a service that does not answer after the timeout, with the code for "unavailable"', async () => {
    server = await rawServer(socket, (c) => connections.push(c));
    await assert.rejects(
      callService({ socket, method: 'POST', path: '/v1/add', body: {}, unavailableCode: 11, timeoutMs: 300 }),
      new IpamError(11, `no answer from the pool IPAM service on ${socket} within 0.3 s; try again later`),
    );
    await assert.rejects(
      callService({ socket, method: 'GET', path: '/v1/status', unavailableCode: 50, timeoutMs: 300 }),
      new IpamError(50, `no answer from the pool IPAM service on ${socket} within 0.3 s; try again later`),
    );
  });

  it('tells the service closing the connection mid-request apart, as "try again later"', async () => {
    server = await rawServer(socket, (c) => c.destroy());
    await assert.rejects(
      callService({ socket, method: 'POST', path: '/v1/del', body: {}, unavailableCode: 11 }),
      new IpamError(11, `the pool IPAM service on ${socket} closed the connection before answering (ECONNRESET); try again later`),
    );
  });

  it('fails with code 5 on an answer that is not JSON, or an error without a code', async () => {
    server = await rawServer(socket, (c) => c.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 7\r\nconnection: close\r\n\r\nno body'));
    await assert.rejects(
      callService({ socket, method: 'GET', path: '/v1/status', unavailableCode: 50 }),
      new IpamError(5, `the pool IPAM service on ${socket} answered GET /v1/status with HTTP 502 and a body that is not JSON: "no body"`),
    );
    server.close();
    server = await rawServer(socket, (c) =>
      c.end('HTTP/1.1 500 Internal Server Error\r\ncontent-length: 15\r\nconnection: close\r\n\r\n{"msg":"oops"}\n'),
    );
    await assert.rejects(
      callService({ socket, method: 'GET', path: '/v1/status', unavailableCode: 50 }),
      new IpamError(
        5,
        `the pool IPAM service on ${socket} answered GET /v1/status with HTTP 500 and no error: "{\\"msg\\":\\"oops\\"}\\n"`,
      ),
    );
  });
});
