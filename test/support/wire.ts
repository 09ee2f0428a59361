/**
 * Packets on the wire of a namespace, below the sockets Node has: capture the frames arriving on an
 * interface (IPv4's by default, or any ethertype's; fragments before reassembly, ICMP errors with their
 * quotes) with an AF_PACKET socket, and send an IPv4 or IPv6 datagram exactly as built (test/support/packet.ts) with a raw socket. Both run python3
 * in the namespace (.ci/setup installs it; Node has no raw sockets).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { run } from '../../src/kernel/command';

const captureScript = `
import os, select, socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(int(sys.argv[2])))
s.bind((sys.argv[1], 0))
print('ready', flush=True)
while True:
    readable = select.select([s, 0], [], [])[0]
    if s in readable:
        frame, address = s.recvfrom(65535)
        if address[2] != socket.PACKET_OUTGOING:
            print(frame.hex(), flush=True)
    elif os.read(0, 1) == b'':
        break
`;

/** What a Capture takes: IPv4 frames, IPv6 frames, or all of them (ETH_P_ALL). */
export const ethertypes = { ipv4: 0x0800, ipv6: 0x86dd, all: 0x0003 } as const;

/** The frames arriving on one interface (outgoing ones are left out), from start to stop. */
export class Capture {
  private text = '';

  private constructor(private readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => (this.text += chunk.toString()));
  }

  /**
   * Resolves once the socket is bound, so nothing sent after is missed. `ethertype`: the frames to take,
   * IPv4's by default; `allFrames` (ETH_P_ALL) takes every one, IPv6's and ARP's too.
   */
  static async start(netns: string, device: string, ethertype: number = ethertypes.ipv4): Promise<Capture> {
    const child = spawn('ip', ['netns', 'exec', netns, 'python3', '-c', captureScript, device, String(ethertype)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const capture = new Capture(child);
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`capture on ${device} in ${netns} exited (${code}): ${stderr}`));
      const onData = () => {
        if (!capture.text.startsWith('ready\n')) return;
        capture.text = capture.text.slice('ready\n'.length);
        child.stdout!.off('data', onData);
        child.off('exit', onExit);
        resolve();
      };
      child.once('exit', onExit);
      child.stdout!.on('data', onData);
    });
    return capture;
  }

  /** The frames captured so far, Ethernet header first. */
  frames(): Buffer[] {
    return this.text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => Buffer.from(line, 'hex'));
  }

  /** Stops after what the socket already holds; the frames. Safe to call twice. */
  async stop(): Promise<Buffer[]> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.stdin!.end();
      await exited;
    }
    return this.frames();
  }
}

// IPPROTO_RAW includes the header (IP_HDRINCL): the kernel routes by its destination and keeps every
// field but IPv4's header checksum and total length, which it fills in (packet.ts computes the same values).
const sendScript = `
import socket, sys
datagram = bytes.fromhex(sys.stdin.read())
if datagram[0] >> 4 == 6:
    socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW).sendto(datagram, (socket.inet_ntop(socket.AF_INET6, datagram[24:40]), 0))
else:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW).sendto(datagram, (socket.inet_ntoa(datagram[16:20]), 0))
`;

/** Sends one IPv4 or IPv6 datagram (header included) from `netns`, routed by its destination. */
export function sendDatagram(netns: string, datagram: Buffer): void {
  run(['ip', 'netns', 'exec', netns, 'python3', '-c', sendScript], datagram.toString('hex'));
}
