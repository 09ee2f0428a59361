/**
 * Where the Helm chart's files are: write-crds.ts writes the CRD templates and the values schema there
 * (`npm run build:crds`), and the lab installs the chart.
 */
import { join } from 'node:path';

export const chartDirectory = join(__dirname, '..', '..', '..', 'helm', 'strait');
export const crdTemplateDirectory = join(chartDirectory, 'templates', 'crds');
export const valuesSchemaPath = join(chartDirectory, 'values.schema.json');
