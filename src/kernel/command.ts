/**
 * Running external tools where they are the interface (ip and nft for the kernel; helm and kubectl in the
 * lab): throw-away namespaces, the lab's wiring, the chart install. Failures carry the command and its stderr.
 */
import { execFile, execFileSync } from 'node:child_process';

export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    readonly command: string[],
    readonly stderr: string,
    readonly status: number | null,
    /** What the command printed before it failed (some tools, such as ping, report there). */
    readonly stdout = '',
  ) {
    super(`${command.join(' ')} failed${status === null ? '' : ` (exit ${status})`}: ${stderr.trim() || 'no message'}`);
  }
}

/**
 * Output kept in full: Node's default of 1 MiB would cut, as an error, the listing of a fallback gateway's
 * nftables map beyond some 30,000 NatMappings (about 36 bytes each as JSON).
 */
const maxOutput = 256 * 1024 * 1024;

export function run(command: string[], input?: string): string {
  try {
    return execFileSync(command[0]!, command.slice(1), { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: maxOutput });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; status?: number | null; message: string };
    throw new CommandError(command, e.stderr ?? e.message, e.status ?? null, e.stdout ?? '');
  }
}

/** `run` without blocking the event loop: for a long command among others (the lab's helm installs, side by side). */
export function runAsync(command: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command[0]!, command.slice(1), { encoding: 'utf8', maxBuffer: maxOutput }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const status = typeof (err as { code?: unknown }).code === 'number' ? (err as unknown as { code: number }).code : null;
      reject(new CommandError(command, stderr || err.message, status, stdout));
    });
  });
}

/** `ip` in a namespace (by name under /run/netns), or in the current one. */
export function ip(args: string[], netns?: string): string {
  return run(['ip', ...(netns ? ['-n', netns] : []), ...args]);
}

/** An nft script in a namespace; with `check`, only validated by the kernel (nft --check), not applied. */
export function nft(script: string, netns?: string, options: { check?: boolean } = {}): string {
  return run([...(netns ? ['ip', 'netns', 'exec', netns] : []), 'nft', ...(options.check ? ['--check'] : []), '-f', '-'], script);
}
