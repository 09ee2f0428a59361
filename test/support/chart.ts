/** The Helm chart (helm/strait) as the real helm renders it: the objects a cluster would be given. */
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';
import { chartDirectory } from '../../src/api/write-crds';
import { k8sTool } from '../../src/lab/k8s-tools';

export type ChartObject = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** `helm template` of the chart in namespace strait-system, with `args` (-f FILE, --set ...). */
export function renderChart(args: string[] = []): ChartObject[] {
  const text = execFileSync(k8sTool('helm'), ['template', 'strait', chartDirectory, '--namespace', 'strait-system', ...args], { encoding: 'utf8' });
  return parseAllDocuments(text).map((d) => d.toJS() as ChartObject).filter((o) => o !== null);
}
