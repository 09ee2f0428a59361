/**
 * Where the Helm chart's files are: write-crds.ts writes the CRDs and the values schema there (`npm run
 * build:crds`), the lab installs the chart and its API servers serve those CRDs.
 */
import { join } from 'node:path';

export const chartDirectory = join(__dirname, '..', '..', '..', 'helm', 'strait');
export const crdDirectory = join(chartDirectory, 'crds');
export const valuesSchemaPath = join(chartDirectory, 'values.schema.json');
