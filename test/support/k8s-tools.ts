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
 * kubectl or helm with a kubeconfig file and its own HOME (so no discovery cache or helm state is shared
 * between tests); asynchronous, as the API server it talks to may answer in this process.
 */
function k8sCommand(tool: 'kubectl' | 'helm', kubeconfig: string, home: string, args: string[], timeout: number): Promise<KubectlRun> {
  return new Promise((resolve) => {
    execFile(
      k8sTool(tool),
      args,
      { env: { HOME: home, KUBECONFIG: kubeconfig, PATH: process.env.PATH }, timeout },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

export const kubectl = (kubeconfig: string, home: string, ...args: string[]): Promise<KubectlRun> =>
  k8sCommand('kubectl', kubeconfig, home, args, 15_000);

/** helm (3.17), which waits for what it installs: a longer limit. */
export const helm = (kubeconfig: string, home: string, ...args: string[]): Promise<KubectlRun> =>
  k8sCommand('helm', kubeconfig, home, args, 60_000);

/** Table output with runs of spaces as one (kubectl pads columns to the widest cell). */
export const tableLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '));
