/** kubectl against a test API server (the binaries come from lab/src/k8s-tools.ts, as the lab's). */
import { execFile } from 'node:child_process';
import { k8sTool } from '../../lab/src/k8s-tools';

export { k8sTool };

export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * kubectl with a kubeconfig file and its own HOME (so no discovery cache is shared between tests);
 * asynchronous, as the API server it talks to may answer in this process.
 */
export function kubectl(kubeconfig: string, home: string, ...args: string[]): Promise<KubectlRun> {
  return new Promise((resolve) => {
    execFile(
      k8sTool('kubectl'),
      args,
      { env: { HOME: home, KUBECONFIG: kubeconfig, PATH: process.env.PATH }, timeout: 15_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** Table output with runs of spaces as one (kubectl pads columns to the widest cell). */
export const tableLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '));
