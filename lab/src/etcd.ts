/**
 * An etcd for a lab cluster's API server, what kube-apiserver keeps its objects in: Debian's
 * etcd-server (3.4), one member on 127.0.0.1 with client and peer ports chosen free, its data in a
 * directory of its own (under the lab's run directory), so a restarted API server finds its objects.
 * Its fsyncs stay on: 3.4 has no switch for them (`--unsafe-no-fsync` came in 3.5), and a lab cluster
 * writes a few objects a second.
 */
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { StateError } from '../../src/errors';

export interface EtcdMember {
  /** The member's name (the lab cluster's). */
  name: string;
  dataDir: string;
  clientPort: number;
  peerPort: number;
}

/** A TCP port on 127.0.0.1 that is free now (the kernel's choice for port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Two free ports for a new member's client and peer URLs. */
export async function newMember(name: string, dataDir: string): Promise<EtcdMember> {
  return { name, dataDir, clientPort: await freePort(), peerPort: await freePort() };
}

export const clientUrl = (member: EtcdMember) => `http://127.0.0.1:${member.clientPort}`;

/** The command line of `member`, a cluster of one (the same for its first start and a restart on its data). */
export function etcdCommand(member: EtcdMember): string[] {
  const peer = `http://127.0.0.1:${member.peerPort}`;
  return [
    'etcd',
    '--name',
    member.name,
    '--data-dir',
    member.dataDir,
    '--listen-client-urls',
    clientUrl(member),
    '--advertise-client-urls',
    clientUrl(member),
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--initial-cluster',
    `${member.name}=${peer}`,
  ];
}

/**
 * Resolves once the etcd at `url` answers its health check (`/health`: a leader, and a write through
 * raft); rejects after `timeoutMs`, or as soon as `running()` says it has exited.
 */
export async function waitUntilHealthy(url: string, running: () => boolean, timeoutMs = 20_000): Promise<void> {
  let last = 'no answer';
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(100)) {
    if (!running()) throw new StateError(`the etcd at ${url} exited before it answered (${last})`);
    try {
      const answer = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      const body = (await answer.json()) as { health?: string };
      if (body.health === 'true') return;
      last = JSON.stringify(body);
    } catch (err) {
      last = (err as Error).message;
    }
  }
  throw new StateError(`the etcd at ${url} did not answer in ${timeoutMs / 1000} s (${last})`);
}
