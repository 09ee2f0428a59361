/**
 * The lab's probe from a pod. Prints one JSON line {ok, mode, to, from?, ms, error?} and exits 0 only when
 * the probe saw what it looks for. Run inside the pod's namespace as
 * `node echo-client.js MODE IP PORT [TIMEOUT_MS]`, MODE one of:
 *   tcp      a nonce over one connection, echoed back;
 *   udp      a nonce in one datagram, echoed back from the address dialled;
 *   frag     a 3000-byte datagram (fragmented by any 1500-byte path both ways), echoed back whole (over
 *            IPv6 sent twice more, as each way's Packet Too Big sets a smaller path MTU);
 *   unreach  a datagram to a closed port: the ICMP port unreachable must come back to the socket, which
 *            the kernel only matches when the quoted header inside it names this socket's own addresses;
 *   pmtu-tcp 4 MiB over one connection in 64 KiB writes, so every segment is as large as the path
 *            lets it be, echoed back byte for byte (what the wire carried: the lab's fragment counters);
 *   whoami   one connection to a service: what the endpoint that answered says it is (its pod's name,
 *            echo-server.ts), as `from`;
 *   dns-a, dns-aaaa  the IPv4 or IPv6 addresses of the name IP stands for, by the pod's resolver (its
 *            /etc/resolv.conf), as `from` (comma-separated; PORT is not used);
 * or `stream IP PORT DURATION_MS` to keep one TCP connection busy instead. `lab test` runs the echo
 * modes through each pod's prober (pod-prober.ts); this command line runs one by hand, and the stream.
 */
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import { Resolver } from 'node:dns/promises';

const echoModes = ['tcp', 'udp', 'frag', 'unreach', 'pmtu-tcp', 'whoami', 'dns-a', 'dns-aaaa'] as const;
export type EchoMode = (typeof echoModes)[number];
export const isEchoMode = (m: string | undefined): m is EchoMode => (echoModes as readonly string[]).includes(m ?? '');

/** The datagram of `frag`: larger than two 1500-byte frames. */
const fragmentedSize = 3000;

/** `pmtu-tcp`: how much, in writes of how much. */
export const bulkSize = 4 << 20;
const bulkWrite = 64 << 10;

export interface EchoResult {
  ok: boolean;
  mode: EchoMode;
  to: string;
  from?: string;
  ms: number;
  error?: string;
}

/**
 * One datagram (no retry: a path that loses it fails the probe, but a `frag` one while `learnsPathMtu`);
 * settles on the first answer or the timeout.
 */
function udpProbe(
  mode: 'udp' | 'frag' | 'unreach',
  to: string,
  port: number,
  timeoutMs: number,
  learnsPathMtu: boolean,
  done: (r: Omit<EchoResult, 'mode' | 'to' | 'ms'>) => void,
): void {
  const payload = mode === 'frag' ? Buffer.concat([randomBytes(16), Buffer.alloc(fragmentedSize - 16, 0x5a)]) : randomBytes(16);
  const sock = createSocket(isIPv6(to) ? 'udp6' : 'udp4');
  let settled = false;
  const settle = (r: Omit<EchoResult, 'mode' | 'to' | 'ms'>) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    sock.close();
    done(r);
  };
  const timer = setTimeout(() => settle({ ok: false, error: mode === 'unreach' ? 'no ICMP error came back' : 'timeout' }), timeoutMs);
  sock.on('message', (msg, rinfo) => {
    if (mode === 'unreach') return settle({ ok: false, from: rinfo.address, error: 'answered: the port is open' });
    if (!msg.equals(payload)) return;
    const fromDialled = rinfo.address === to;
    settle({
      ok: fromDialled,
      from: rinfo.address,
      ...(fromDialled ? {} : { error: `reply came from ${rinfo.address}, not from the address dialled` }),
    });
  });
  sock.on('error', (err: NodeJS.ErrnoException) => {
    if (mode === 'unreach' && err.code === 'ECONNREFUSED') settle({ ok: true, from: to });
    else settle({ ok: false, error: err.message });
  });
  // Only a connected socket receives the ICMP errors about its datagrams; the echoes go unconnected, so
  // that a reply from another address is seen (and named) rather than filtered out by the kernel.
  if (mode === 'unreach') return sock.connect(port, to, () => sock.send(payload));
  sock.send(payload, port, to);
  // IPv6 routers never fragment: a datagram whose fragments exceed the path MTU is dropped with a Packet
  // Too Big, which lowers its sender's path MTU for the next one (RFC 8201); so do tunnels over an IPv6
  // underlay with an IPv4 one, answering fragmentation needed (`learnsPathMtu`). On a new path the first
  // datagram, and then the first echo, are lost by design: more are sent, as the path MTU is learnt each
  // way, for the first half of the wait (at least three in all). A slow path (ESP in an emulated VM) takes
  // longer than one interval to bring each Packet Too Big back: three sends 0.3 s apart were not enough
  // there, while a path that loses what it should carry still fails once the sends stop.
  if (mode === 'frag' && learnsPathMtu) {
    const again = setInterval(() => settled || sock.send(payload, port, to), pathMtuLearntMs);
    const stop = setTimeout(() => clearInterval(again), Math.max(pathMtuLearntMs * 2.5, timeoutMs / 2));
    sock.on('close', () => {
      clearInterval(again);
      clearTimeout(stop);
    });
  }
}

/** How long a Packet Too Big takes to come back and set the path MTU, on a loaded lab machine. */
const pathMtuLearntMs = 300;

/**
 * One connection: `payload` written in writes of `writeSize`, settles once as many bytes came back. It
 * fails when no byte came back for `timeoutMs`: a path MTU black hole stalls a stream for good, while a
 * slow path (an emulated VM on a loaded machine, ESP in emulated instructions) only makes it long; the
 * caller bounds the whole run.
 */
function tcpProbe(
  payload: Buffer,
  writeSize: number,
  to: string,
  port: number,
  timeoutMs: number,
  done: (r: Omit<EchoResult, 'mode' | 'to' | 'ms'>) => void,
): void {
  const socket = connect({ host: to, port });
  const chunks: Buffer[] = [];
  let received = 0;
  const stalled = () => {
    socket.destroy();
    done({ ok: false, error: `timeout: nothing for ${timeoutMs} ms (${received} of ${payload.length} bytes echoed)` });
  };
  const timer = setTimeout(stalled, timeoutMs);
  socket.on('connect', () => {
    for (let at = 0; at < payload.length; at += writeSize) socket.write(payload.subarray(at, at + writeSize));
  });
  socket.on('data', (d) => {
    chunks.push(d);
    received += d.length;
    timer.refresh();
    if (received < payload.length) return;
    clearTimeout(timer);
    const from = socket.remoteAddress;
    socket.destroy();
    const same = Buffer.concat(chunks).equals(payload);
    done({
      ok: same,
      ...(from ? { from } : {}),
      ...(same ? {} : { error: `${received} bytes came back, not the ${payload.length} sent` }),
    });
  });
  socket.on('error', (err) => {
    clearTimeout(timer);
    done({ ok: false, error: err.message });
  });
}

/** One connection, read to its end: the answer is the name the endpoint gave. */
function whoamiProbe(to: string, port: number, timeoutMs: number, done: (r: Omit<EchoResult, 'mode' | 'to' | 'ms'>) => void): void {
  const socket = connect({ host: to, port });
  let text = '';
  const timer = setTimeout(() => {
    socket.destroy();
    done({ ok: false, error: 'timeout' });
  }, timeoutMs);
  socket.on('data', (d) => (text += d.toString()));
  socket.on('end', () => {
    clearTimeout(timer);
    socket.destroy();
    const name = text.trim();
    done(name ? { ok: true, from: name } : { ok: false, error: 'the connection closed with no name' });
  });
  socket.on('error', (err) => {
    clearTimeout(timer);
    done({ ok: false, error: err.message });
  });
}

/** One lookup through the pod's own resolver (c-ares reads /etc/resolv.conf, which `ip netns exec` mounts per pod). */
function resolveProbe(
  mode: 'dns-a' | 'dns-aaaa',
  name: string,
  timeoutMs: number,
  done: (r: Omit<EchoResult, 'mode' | 'to' | 'ms'>) => void,
): void {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  (mode === 'dns-a' ? resolver.resolve4(name) : resolver.resolve6(name)).then(
    (addresses) => done({ ok: addresses.length > 0, from: addresses.join(','), ...(addresses.length ? {} : { error: 'no address' }) }),
    (err: NodeJS.ErrnoException) => done({ ok: false, error: `${err.code ?? err.message}` }),
  );
}

/**
 * One probe; `learnsPathMtu`: a `frag` datagram is sent again as the path MTU is learnt (by default for
 * IPv6, whose routers never fragment; over an IPv6 underlay for IPv4 too, whose tunnels cannot).
 */
export function echo(mode: EchoMode, to: string, port: number, timeoutMs: number, learnsPathMtu = isIPv6(to)): Promise<EchoResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const done = (r: Omit<EchoResult, 'mode' | 'to' | 'ms'>) => resolve({ mode, to, ms: Date.now() - started, ...r });
    if (mode === 'tcp') return tcpProbe(randomBytes(16), 16, to, port, timeoutMs, done);
    if (mode === 'pmtu-tcp') return tcpProbe(randomBytes(bulkSize), bulkWrite, to, port, timeoutMs, done);
    if (mode === 'whoami') return whoamiProbe(to, port, timeoutMs, done);
    if (mode === 'dns-a' || mode === 'dns-aaaa') return resolveProbe(mode, to, timeoutMs, done);
    udpProbe(mode, to, port, timeoutMs, learnsPathMtu, done);
  });
}

interface StreamResult {
  ok: boolean;
  sent: number;
  echoed: number;
  error?: string;
}

/**
 * One TCP connection kept busy for `durationMs`: a 512-byte chunk every 5 ms, every byte must come back
 * and the connection must never break (what an agent restart must not disturb).
 */
function stream(to: string, port: number, durationMs: number): Promise<StreamResult> {
  return new Promise((resolve) => {
    const socket = connect({ host: to, port });
    let sent = 0;
    let echoed = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: StreamResult) => {
      if (timer) clearInterval(timer);
      socket.destroy();
      resolve(r);
    };
    socket.on('connect', () => {
      const started = Date.now();
      timer = setInterval(() => {
        if (Date.now() - started >= durationMs) {
          clearInterval(timer);
          timer = undefined;
          // Wait for the last echoes, bounded.
          setTimeout(
            () => finish({ ok: echoed === sent, sent, echoed, ...(echoed === sent ? {} : { error: 'not every byte came back' }) }),
            1500,
          );
          return;
        }
        socket.write(Buffer.alloc(512, sent & 255));
        sent += 512;
      }, 5);
    });
    socket.on('data', (d) => {
      echoed += d.length;
    });
    socket.on('error', (err) => finish({ ok: false, sent, echoed, error: err.message }));
    socket.on('close', () => {
      if (timer) finish({ ok: false, sent, echoed, error: 'connection closed' });
    });
  });
}

if (require.main === module) {
  const [mode, to, port, arg] = process.argv.slice(2);
  if ((!isEchoMode(mode) && mode !== 'stream') || !to || !Number(port)) {
    process.stderr.write(`usage: echo-client ${echoModes.join('|')} IP PORT [TIMEOUT_MS] | echo-client stream IP PORT DURATION_MS\n`);
    process.exit(2);
  }
  const result = mode === 'stream' ? stream(to, Number(port), Number(arg ?? 3000)) : echo(mode, to, Number(port), Number(arg ?? 2000));
  result.then((r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(r.ok ? 0 : 1);
  });
}
