/**
 * `npm run build:crds`: writes each resource's CRD to helm/strait/crds/<plural>.strait.io.yaml and the
 * chart's values.schema.json (a test fails when a file there is not what this writes). `crdFiles` and
 * `valuesSchemaText` are the same content, for that test.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { chartValuesJsonSchema } from './chart-values';
import { crdDirectory, valuesSchemaPath } from './chart-paths';
import { customResourceDefinition } from './crd';
import { group } from './resource-names';
import { resources } from './resources';

export const valuesSchemaText = () => `${JSON.stringify(chartValuesJsonSchema(), null, 2)}\n`;

/** File name → content, for every CRD. */
export function crdFiles(): Map<string, string> {
  const header = '# Generated from src/api by `npm run build:crds`: do not edit.\n';
  return new Map(resources.map((r) => [`${r.plural}.${group}.yaml`, header + stringify(customResourceDefinition(r), { lineWidth: 0 })]));
}

if (require.main === module) {
  mkdirSync(crdDirectory, { recursive: true });
  for (const [name, text] of crdFiles()) writeFileSync(join(crdDirectory, name), text);
  writeFileSync(valuesSchemaPath, valuesSchemaText());
  process.stdout.write(`wrote ${[...crdFiles().keys()].join(', ')} in ${crdDirectory}, and ${valuesSchemaPath}\n`);
}
