/**
 * `npm run build:crds`: writes each resource's CRD to helm/strait/crds/<plural>.strait.io.yaml (a test
 * fails when a file there is not what this writes). `crdFiles` is the same content, for that test.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { customResourceDefinition } from './crd';
import { group } from './resource';
import { resources } from './resources';

export const crdDirectory = join(__dirname, '..', '..', '..', 'helm', 'strait', 'crds');

/** File name → content, for every CRD. */
export function crdFiles(): Map<string, string> {
  const header = '# Generated from src/api by `npm run build:crds`: do not edit.\n';
  return new Map(resources.map((r) => [`${r.plural}.${group}.yaml`, header + stringify(customResourceDefinition(r), { lineWidth: 0 })]));
}

if (require.main === module) {
  mkdirSync(crdDirectory, { recursive: true });
  for (const [name, text] of crdFiles()) writeFileSync(join(crdDirectory, name), text);
  process.stdout.write(`wrote ${[...crdFiles().keys()].join(', ')} in ${crdDirectory}\n`);
}
