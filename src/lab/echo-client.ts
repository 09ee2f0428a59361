/**
 * The lab's probe from a pod: sends a nonce over TCP or UDP and waits for it back. Prints one JSON line
 * {ok, proto, to, from, ms, error?} and exits 0 only when the echo came back (for UDP, from the address
 * dialled). Run as `node echo-client.js tcp|udp IP PORT [TIMEOUT_MS]` inside the pod's namespace;
 * `stream IP PORT DURATION_MS` keeps one TCP connection busy instead.
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
      const timer = setTimeout(() => { clearInterval(resend); sock.close(); resolve(done({ ok: false, error: 'timeout' })); }, timeoutMs);
      sock.on('message', (msg, rinfo) => {
        if (!msg.equals(nonce)) return;
        clearTimeout(timer);
        clearInterval(resend);
        sock.close();
        resolve(done({ ok: rinfo.address === to, from: rinfo.address, ...(rinfo.address === to ? {} : { error: `reply came from ${rinfo.address}, not from the address dialled` }) }));
      });
      sock.on('error', (err) => { clearTimeout(timer); clearInterval(resend); sock.close(); resolve(done({ ok: false, error: err.message })); });
      // UDP has no retransmission of its own: send again every 500 ms until the echo or the timeout.
      const resend = setInterval(() => sock.send(nonce, port, to), 500);
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

export interface StreamResult {
  ok: boolean;
  sent: number;
  echoed: number;
  error?: string;
}

/**
 * One TCP connection kept busy for `durationMs`: a 512-byte chunk every 5 ms, every byte must come back
 * and the connection must never break (what an agent restart must not disturb).
 */
export function stream(to: string, port: number, durationMs: number): Promise<StreamResult> {
  return new Promise((resolve) => {
    const socket = connect({ host: to, port });
    let sent = 0;
    let echoed = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: StreamResult) => { if (timer) clearInterval(timer); socket.destroy(); resolve(r); };
    socket.on('connect', () => {
      const started = Date.now();
      timer = setInterval(() => {
        if (Date.now() - started >= durationMs) {
          clearInterval(timer);
          timer = undefined;
          // Wait for the last echoes, bounded.
          setTimeout(() => finish({ ok: echoed === sent, sent, echoed, ...(echoed === sent ? {} : { error: 'not every byte came back' }) }), 1500);
          return;
        }
        socket.write(Buffer.alloc(512, sent & 255));
        sent += 512;
      }, 5);
    });
    socket.on('data', (d) => { echoed += d.length; });
    socket.on('error', (err) => finish({ ok: false, sent, echoed, error: err.message }));
    socket.on('close', () => { if (timer) finish({ ok: false, sent, echoed, error: 'connection closed' }); });
  });
}

if (require.main === module) {
  const [mode, to, port, arg] = process.argv.slice(2);
  if ((mode !== 'tcp' && mode !== 'udp' && mode !== 'stream') || !to || !Number(port)) {
    process.stderr.write('usage: echo-client tcp|udp IP PORT [TIMEOUT_MS] | echo-client stream IP PORT DURATION_MS\n');
    process.exit(2);
  }
  const result = mode === 'stream' ? stream(to, Number(port), Number(arg ?? 3000)) : echo(mode, to, Number(port), Number(arg ?? 2000));
  result.then((r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(r.ok ? 0 : 1);
  });
}
