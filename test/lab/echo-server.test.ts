/**
 * The lab's echo server answers both families, and outlives its clients' failures: a client that resets its connection (one that
 * gave up waiting, on a loaded machine) must not end the server that every later check to the pod needs.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { type RemoteInfo, createSocket } from 'node:dgram';
import { startEchoServer } from '../../lab/src/echo-server';

/** A loopback TCP port free right now. */
async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  probe.close();
  return port;
}

/** Sends `text` over a new connection and resolves with what came back once `text.length` bytes did. */
async function echo(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  const socket = connect(port, host);
  await once(socket, 'connect');
  socket.write(text);
  let got = '';
  for await (const chunk of socket) {
    got += String(chunk);
    if (got.length >= text.length) break;
  }
  socket.destroy();
  return got;
}

describe('lab echo server', () => {
  it('echoes TCP and UDP in both families, each datagram answered from the family it came in', async () => {
    const port = await freePort();
    const server = startEchoServer(port);
    try {
      await new Promise((r) => setTimeout(r, 50)); // listening
      for (const host of ['127.0.0.1', '::1']) {
        assert.equal(await echo(port, `tcp over ${host}`, host), `tcp over ${host}`);
        const udp = createSocket(host === '::1' ? 'udp6' : 'udp4');
        udp.send(`udp over ${host}`, port, host);
        const [msg, rinfo] = (await once(udp, 'message')) as [Buffer, RemoteInfo];
        udp.close();
        assert.deepEqual([String(msg), rinfo.address], [`udp over ${host}`, host]);
      }
    } finally {
      server.close();
    }
  });

  it('keeps echoing after clients reset their connections with the echo in flight', async () => {
    const port = await freePort();
    const server = startEchoServer(port);
    try {
      await new Promise((r) => setTimeout(r, 50)); // listening
      for (let i = 0; i < 20; i++) {
        const quitter = connect(port, '127.0.0.1');
        await once(quitter, 'connect');
        quitter.write('x'.repeat(1 << 16));
        quitter.resetAndDestroy();
      }
      await new Promise((r) => setTimeout(r, 200)); // the server met the resets
      assert.equal(await echo(port, 'still there'), 'still there');
    } finally {
      server.close();
    }
  });
});
