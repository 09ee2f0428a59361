/**
 * A real etcd for a test (Debian's etcd-server, as the lab runs it: lab/src/etcd.ts), a child of the test
 * process with its data in a directory the test gives; `close` stops it (SIGTERM, then SIGKILL) and
 * removes that directory, also when the test failed.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { clientUrl, etcdCommand, newMember, waitUntilHealthy } from '../../lab/src/etcd';

export interface TestEtcd {
  /** Its client URL (`http://127.0.0.1:<port>`). */
  url: string;
  close(): Promise<void>;
}

export async function startTestEtcd(dataDir: string): Promise<TestEtcd> {
  const member = await newMember('test', dataDir);
  const [command, ...args] = etcdCommand(member);
  const child = spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  // Only its last words are kept, for the error of an etcd that did not start.
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitUntilHealthy(clientUrl(member), () => child.exitCode === null && child.signalCode === null);
  } catch (err) {
    await close();
    throw new Error(`${(err as Error).message}; its stderr ends: ${stderr}`, { cause: err });
  }
  return { url: clientUrl(member), close };
}
