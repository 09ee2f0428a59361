/** Places for a test's unix sockets, and the socket file a killed service leaves behind. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A private directory for one test's sockets; removed by `cleanup`. */
export function socketDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'strait-cni-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Leaves at `path` the socket file of a server killed with SIGKILL: it exists, nothing listens on it. */
export async function staleSocket(path: string): Promise<void> {
  const child = spawn(
    process.execPath,
    ['-e', `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.stdout.write('listening'))`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [first] = (await once(child.stdout, 'data')) as [Buffer];
  if (first.toString() !== 'listening') throw new Error(`the server to kill said ${first.toString()}`);
  child.kill('SIGKILL');
  await once(child, 'exit');
}
