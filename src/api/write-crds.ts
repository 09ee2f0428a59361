/**
 * `npm run build:crds`: writes each resource's CRD as a template of the chart,
 * helm/strait/templates/crds/<plural>.strait.io.yaml, and the chart's values.schema.json (a test fails
 * when a file there is not what this writes). `crdFiles` are the CRDs themselves (what the chart renders
 * by default, and what an API server of the tests starts with).
 *
 * The CRDs are templates, not files of the chart's `crds/` directory (which helm installs once and never
 * upgrades nor deletes): `helm upgrade` carries a changed schema to the cluster, `helm rollback` takes
 * it back, and `helm uninstall` removes them with every strait.io object unless `crds.keep` is set (an
 * annotation helm leaves them for). `crds.install: false` leaves them to whoever manages CRDs.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { chartValuesJsonSchema } from './chart-values';
import { chartDirectory, crdTemplateDirectory, valuesSchemaPath } from './chart-paths';
import { customResourceDefinition } from './crd';
import { group } from './resource-names';
import { resources } from './resources';

export const valuesSchemaText = () => `${JSON.stringify(chartValuesJsonSchema(), null, 2)}\n`;

const fileName = (plural: string) => `${plural}.${group}.yaml`;

/** File name → YAML text, for every CRD. */
export function crdFiles(): Map<string, string> {
  return new Map(resources.map((r) => [fileName(r.plural), stringify(customResourceDefinition(r), { lineWidth: 0 })]));
}

/** The chart's template of a CRD: the chart's labels, and helm's keep annotation when asked. */
export function crdTemplate(crd: object): string {
  const { apiVersion, kind, metadata, spec } = crd as { metadata: { name: string } } & Record<string, unknown>;
  return [
    '{{- /* Generated from src/api by `npm run build:crds`: do not edit. */}}',
    '{{- if .Values.crds.install }}',
    stringify({ apiVersion, kind }).trimEnd(),
    'metadata:',
    `  name: ${metadata.name}`,
    '  labels:',
    '    {{- include "strait.labels" . | nindent 4 }}',
    '  {{- if .Values.crds.keep }}',
    '  annotations:',
    '    helm.sh/resource-policy: keep',
    '  {{- end }}',
    stringify({ spec }, { lineWidth: 0 }).trimEnd(),
    '{{- end }}',
    '',
  ].join('\n');
}

/** File name → the chart's template, for every CRD. */
export const crdTemplates = (): Map<string, string> =>
  new Map(resources.map((r) => [fileName(r.plural), crdTemplate(customResourceDefinition(r))]));

if (require.main === module) {
  rmSync(crdTemplateDirectory, { recursive: true, force: true });
  mkdirSync(crdTemplateDirectory, { recursive: true });
  for (const [name, text] of crdTemplates()) writeFileSync(join(crdTemplateDirectory, name), text);
  // Before 0.2 the CRDs were files of the chart's crds/ directory, which helm never upgrades.
  rmSync(join(chartDirectory, 'crds'), { recursive: true, force: true });
  writeFileSync(valuesSchemaPath, valuesSchemaText());
  process.stdout.write(`wrote ${[...crdTemplates().keys()].join(', ')} in ${crdTemplateDirectory}, and ${valuesSchemaPath}\n`);
}
