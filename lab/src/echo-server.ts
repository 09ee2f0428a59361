/**
 * The lab's target in every pod: echoes TCP and UDP on one port. UDP replies go from the address the
 * datagram was sent to, which is what a client checks to see the reply come "from the address dialled".
 * With the pod's name, it also tells it to every TCP connection on `whoamiPort`: which endpoint of a
 * service a connection reached. Run as `node echo-server.js PORT [POD]` inside the pod's namespace.
 */
import { createSocket } from 'node:dgram';
import { type Server, createServer } from 'node:net';
import { whoamiPort } from './names';

export function startEchoServer(port: number, pod?: string): { close: () => void } {
  // One socket of each kind per family (IPv6 only on the IPv6 ones), so each family's clients are
  // answered by a socket of their own family, whether or not the pod has IPv6 at all.
  const sockets = (['IPv4', 'IPv6'] as const).flatMap((family) => {
    const any = family === 'IPv4' ? '0.0.0.0' : '::';
    // A client that gave up before its echo came back (on a loaded machine) resets the connection, and the
    // echo then fails to send: that is the client's loss. Unhandled, the 'error' would end this server and
    // fail every later check to the pod.
    const tcp = createServer((socket) => socket.on('error', () => socket.destroy()).pipe(socket));
    tcp.on('error', () => tcp.close()); // no address of this family in the pod
    tcp.listen({ port, host: any, ipv6Only: family === 'IPv6' });
    const udp = createSocket({ type: family === 'IPv4' ? 'udp4' : 'udp6', ipv6Only: family === 'IPv6' });
    udp.on('message', (msg, rinfo) => udp.send(msg, rinfo.port, rinfo.address, () => {}));
    udp.on('error', () => udp.close());
    udp.bind(port, any);
    const whoami: Server[] = [];
    if (pod !== undefined) {
      const named = createServer((socket) => socket.on('error', () => socket.destroy()).end(`${pod}\n`));
      named.on('error', () => named.close());
      named.listen({ port: whoamiPort, host: any, ipv6Only: family === 'IPv6' });
      whoami.push(named);
    }
    return [tcp, udp, ...whoami];
  });
  const close = (socket: { close: () => unknown }) => {
    try {
      socket.close();
    } catch {
      // closed already, on an error
    }
  };
  return { close: () => sockets.forEach(close) };
}

if (require.main === module) {
  const port = Number(process.argv[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`usage: echo-server PORT (got ${JSON.stringify(process.argv[2])})\n`);
    process.exit(2);
  }
  startEchoServer(port, process.argv[3]);
}
