/** `strait agent` as a real process for a test: the compiled CLI, its pino lines handed to the test as they come. */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { noProbeCache } from './agent-flags';

export const straitCliPath = join(__dirname, '../../src/cli/main.js');

/** The file mode's arguments: the spec and heartbeat files, the pins, the node's namespace. */
export const fileModeArgs = (files: { spec: string; status: string; pinRoot: string; netns: string }) => [
  '--spec',
  files.spec,
  '--status',
  files.status,
  '--pin-root',
  files.pinRoot,
  '--netns',
  files.netns,
];

/**
 * Starts `strait agent <args>`, without a probe cache (noProbeCache says why) unless `args` give one, and
 * with the test nodes' pod interfaces unless `args` name others;
 * `onStderr` gets its log as it comes. `exited` resolves with the exit code once the whole log is read.
 */
export function spawnAgent(args: string[], onStderr: (text: string) => void): { child: ChildProcess; exited: Promise<number | null> } {
  // The test nodes' pod interfaces are p-<name> (test/agent/agent-node.ts); `args` may say otherwise.
  const child = spawn(process.execPath, [straitCliPath, 'agent', ...noProbeCache, '--pod-interfaces', '^p-', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk) => onStderr(String(chunk)));
  return { child, exited: new Promise((resolve) => child.on('close', (code) => resolve(code))) };
}
