/**
 * The lab's target in every pod: echoes TCP and UDP on one port. UDP replies go from the address the
 * datagram was sent to, which is what a client checks to see the reply come "from the address dialled".
 * Run as `node echo-server.js PORT` inside the pod's namespace.
 */
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

export function startEchoServer(port: number): { close: () => void } {
  // A client that gave up before its echo came back (on a loaded machine) resets the connection, and the
  // echo then fails to send: that is the client's loss. Unhandled, the 'error' would end this server and
  // fail every later check to the pod.
  const tcp = createServer((socket) => socket.on('error', () => socket.destroy()).pipe(socket)).listen(port, '0.0.0.0');
  const udp = createSocket('udp4');
  udp.on('message', (msg, rinfo) => udp.send(msg, rinfo.port, rinfo.address, () => {}));
  udp.bind(port, '0.0.0.0');
  return {
    close: () => {
      tcp.close();
      udp.close();
    },
  };
}

if (require.main === module) {
  const port = Number(process.argv[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`usage: echo-server PORT (got ${JSON.stringify(process.argv[2])})\n`);
    process.exit(2);
  }
  startEchoServer(port);
}
