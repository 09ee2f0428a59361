/**
 * The lab's TCP probes fail on a stalled stream, not on a slow one: a path MTU black hole stops a stream
 * for good, while an emulated VM on a loaded machine (ESP in emulated instructions) only makes it long.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import { echo } from '../../lab/src/echo-client';

/** A loopback echo server that sends back what it got in slices of `slice` bytes every `everyMs`, stopping after `stopAfter` bytes. */
async function slowEcho(slice: number, everyMs: number, stopAfter = Infinity): Promise<{ server: Server; port: number }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let pending = Buffer.alloc(0);
    let sent = 0;
    socket.on('data', (d) => {
      pending = Buffer.concat([pending, d]);
    });
    const timer = setInterval(() => {
      if (pending.length === 0 || sent >= stopAfter) return;
      const out = pending.subarray(0, Math.min(slice, stopAfter - sent));
      pending = pending.subarray(out.length);
      sent += out.length;
      socket.write(out);
    }, everyMs);
    socket.on('close', () => {
      clearInterval(timer);
      sockets.delete(socket);
    });
    // The client resets a stalled connection: the server side's ECONNRESET is expected, the verdict is the client's.
    socket.on('error', () => undefined);
  });
  server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

describe('lab echo client', () => {
  it('passes a tcp echo slower in all than its wait, since bytes keep coming back', async () => {
    // 16 bytes back one at a time every 40 ms: 640 ms in all, against a wait of 300 ms for the next byte.
    const { server, port } = await slowEcho(1, 40);
    try {
      const r = await echo('tcp', '127.0.0.1', port, 300);
      assert.equal(r.ok, true, r.error);
      assert.ok(r.ms > 300, `took ${r.ms} ms`);
    } finally {
      server.close();
    }
  });

  it('fails a tcp echo whose stream stalls, naming how much came back', async () => {
    const { server, port } = await slowEcho(1, 10, 5);
    try {
      const r = await echo('tcp', '127.0.0.1', port, 300);
      assert.equal(r.ok, false);
      assert.equal(r.error, 'timeout: nothing for 300 ms (5 of 16 bytes echoed)');
    } finally {
      server.close();
    }
  });
});
