/**
 * Runs the built `strait-ipam` the way a CNI runtime does: the file itself executed (its shebang and
 * mode), the CNI variables in the environment, the network configuration on stdin. Asynchronous, so a
 * service in the test's own process can answer it.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';

export const pluginPath = join(__dirname, '../../src/cni/main.js');

export interface PluginRun {
  /** Exit status. */
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runStraitIpam(env: Record<string, string>, stdin: string | object): Promise<PluginRun> {
  const input = typeof stdin === 'string' ? stdin : JSON.stringify(stdin);
  return new Promise((resolve) => {
    // PATH only to find `node` for the shebang: nothing of the test's environment leaks in.
    const child = execFile(pluginPath, [], { env: { PATH: dirname(process.execPath), ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ status: err ? (typeof code === 'number' ? code : null) : 0, stdout, stderr });
    });
    child.stdin!.end(input);
  });
}

/** The stdout of a run that must fail, parsed, with its exit status checked. */
export function cniError(run: PluginRun): unknown {
  if (run.status !== 1) throw new Error(`strait-ipam exited ${run.status}, not 1: stdout ${run.stdout} stderr ${run.stderr}`);
  return JSON.parse(run.stdout);
}
