/**
 * The lab's probe from a pod: sends a nonce over TCP or UDP and waits for it back. Prints one JSON line
 * {ok, proto, to, from, ms, error?} and exits 0 only when the echo came back (for UDP, from the address
 * dialled). Run as `node echo-client.js tcp|udp IP PORT [TIMEOUT_MS]` inside the pod's namespace.
 */
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';

export interface EchoResult {
  ok: boolean;
  proto: 'tcp' | 'udp';
  to: string;
  from?: string;
  ms: number;
  error?: string;
}

export function echo(proto: 'tcp' | 'udp', to: string, port: number, timeoutMs: number): Promise<EchoResult> {
  const nonce = randomBytes(16);
  const started = Date.now();
  const done = (r: Omit<EchoResult, 'proto' | 'to' | 'ms'>): EchoResult => ({ proto, to, ms: Date.now() - started, ...r });
  return new Promise((resolve) => {
    if (proto === 'udp') {
      const sock = createSocket('udp4');
      const timer = setTimeout(() => { sock.close(); resolve(done({ ok: false, error: 'timeout' })); }, timeoutMs);
      sock.on('message', (msg, rinfo) => {
        if (!msg.equals(nonce)) return;
        clearTimeout(timer);
        sock.close();
        resolve(done({ ok: rinfo.address === to, from: rinfo.address, ...(rinfo.address === to ? {} : { error: `reply came from ${rinfo.address}, not from the address dialled` }) }));
      });
      sock.on('error', (err) => { clearTimeout(timer); sock.close(); resolve(done({ ok: false, error: err.message })); });
      sock.send(nonce, port, to);
      return;
    }
    const socket = connect({ host: to, port });
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => { socket.destroy(); resolve(done({ ok: false, error: 'timeout' })); }, timeoutMs);
    socket.on('connect', () => socket.write(nonce));
    socket.on('data', (d) => {
      got = Buffer.concat([got, d]);
      if (got.length < nonce.length) return;
      clearTimeout(timer);
      const from = socket.remoteAddress;
      socket.destroy();
      resolve(done({ ok: got.equals(nonce), ...(from ? { from } : {}) }));
    });
    socket.on('error', (err) => { clearTimeout(timer); resolve(done({ ok: false, error: err.message })); });
  });
}

if (require.main === module) {
  const [proto, to, port, timeout] = process.argv.slice(2);
  if ((proto !== 'tcp' && proto !== 'udp') || !to || !Number(port)) {
    process.stderr.write('usage: echo-client tcp|udp IP PORT [TIMEOUT_MS]\n');
    process.exit(2);
  }
  echo(proto, to, Number(port), Number(timeout ?? 2000)).then((r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(r.ok ? 0 : 1);
  });
}
