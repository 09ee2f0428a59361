/**
 * The strait.io CRDs, templates of the chart (helm/strait/templates/crds/): current (what src/api
 * generates), rendered by the real helm 3.17 as src/api defines them, structural (the rules of
 * apiextensions.k8s.io/v1, so an API server accepts them and can prune), and the chart lints.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { chartDirectory, crdTemplateDirectory } from '../../src/api/chart-paths';
import { crdFiles, crdTemplates } from '../../src/api/write-crds';
import { k8sTool } from '../../lab/src/k8s-tools';

type Node = Record<string, unknown>;

/** The structural-schema rules an API server enforces; the problems found, each with its path. */
function structuralProblems(schema: Node, path: string, underJunctor = false): string[] {
  const problems: string[] = [];
  const keys = Object.keys(schema);
  if (underJunctor) {
    for (const k of ['type', 'properties', 'items', 'additionalProperties', 'description', 'default', 'nullable']) {
      if (k in schema) problems.push(`${path}: ${k} under anyOf/allOf/oneOf/not (only value validations may be there)`);
    }
  } else if (typeof schema.type !== 'string' || schema.type === '') {
    problems.push(`${path}: no type`);
  }
  if ('properties' in schema && 'additionalProperties' in schema) problems.push(`${path}: properties and additionalProperties together`);
  for (const k of ['exclusiveMinimum', 'exclusiveMaximum'])
    if (k in schema && typeof schema[k] !== 'boolean') problems.push(`${path}: ${k} must be a boolean in OpenAPI 3.0`);
  for (const k of ['$ref', '$schema', 'const', 'unevaluatedProperties', 'patternProperties', 'definitions'])
    if (k in schema) problems.push(`${path}: ${k} is not allowed`);
  for (const [name, child] of Object.entries((schema.properties ?? {}) as Record<string, Node>))
    problems.push(...structuralProblems(child, `${path}.${name}`, underJunctor));
  if (schema.items) problems.push(...structuralProblems(schema.items as Node, `${path}[]`, underJunctor));
  for (const j of ['anyOf', 'allOf', 'oneOf'])
    for (const [i, b] of ((schema[j] ?? []) as Node[]).entries()) problems.push(...structuralProblems(b, `${path}.${j}[${i}]`, true));
  if (keys.length === 0 && !underJunctor) problems.push(`${path}: empty schema`);
  return problems;
}

/** The CRDs `helm template` renders with `values` (--set pairs). */
function renderedCrds(...values: string[]): (Node & { metadata: Node & { name: string; annotations?: Node } })[] {
  const args = ['template', 'strait', chartDirectory, ...values.flatMap((v) => ['--set', v])];
  return parseAllDocuments(execFileSync(k8sTool('helm'), args, { encoding: 'utf8' }))
    .map((d) => d.toJS() as Node & { metadata: Node & { name: string } })
    .filter((o) => o?.kind === 'CustomResourceDefinition');
}

describe('strait.io CustomResourceDefinitions', () => {
  it('are the templates src/api generates (run `npm run build:crds` after changing a schema)', () => {
    const generated = crdTemplates();
    assert.deepEqual(readdirSync(crdTemplateDirectory).sort(), [...generated.keys()].sort());
    for (const [name, text] of generated) assert.equal(readFileSync(join(crdTemplateDirectory, name), 'utf8'), text, `${name} is stale`);
  });

  it("render as src/api defines them, with the chart's labels; kept on uninstall only when asked, absent when not installed", function () {
    this.timeout(60_000);
    const rendered = renderedCrds();
    const defined = [...crdFiles().values()].map((text) => parse(text) as Node & { metadata: Node });
    assert.equal(rendered.length, defined.length);
    for (const crd of rendered) {
      const own = defined.find((d) => d.metadata.name === crd.metadata.name)!;
      assert.deepEqual({ ...crd, metadata: { name: crd.metadata.name } }, { ...own, metadata: { name: own.metadata.name } });
      assert.equal((crd.metadata.labels as Node)['app.kubernetes.io/managed-by'], 'Helm');
      assert.equal((crd.metadata.labels as Node)['app.kubernetes.io/part-of'], 'strait');
      assert.equal(crd.metadata.annotations, undefined);
    }
    for (const crd of renderedCrds('crds.keep=true')) assert.deepEqual(crd.metadata.annotations, { 'helm.sh/resource-policy': 'keep' });
    assert.deepEqual(renderedCrds('crds.install=false'), []);
  });

  it("are structural, cluster-scoped (an Endpoint lives in its pod's namespace), with the status subresource, printer columns, short names and the category strait", () => {
    const kinds: string[] = [];
    for (const [name, text] of crdFiles()) {
      const crd = parse(text) as Node & {
        spec: Node & { names: Node; versions: (Node & { schema: { openAPIV3Schema: Node } })[] };
      };
      const { spec } = crd;
      kinds.push(spec.names.kind as string);
      assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
      assert.equal((crd.metadata as Node).name, `${spec.names.plural}.strait.io`);
      assert.equal(spec.scope, spec.names.kind === 'Endpoint' ? 'Namespaced' : 'Cluster', name);
      assert.deepEqual(spec.names.categories, ['strait']);
      assert.ok((spec.names.shortNames as string[]).length > 0, name);
      const [v] = spec.versions;
      assert.equal(v!.name, 'v1alpha1');
      assert.ok((v!.additionalPrinterColumns as Node[]).length >= 3, name);
      const root = v!.schema.openAPIV3Schema;
      assert.deepEqual(structuralProblems(root, 'openAPIV3Schema'), [], name);
      assert.deepEqual((root.properties as Node).metadata, { type: 'object' });
      if ('status' in (root.properties as Node)) assert.deepEqual(v!.subresources, { status: {} }, name);
    }
    assert.deepEqual(kinds.sort(), [
      'ClusterNetworks',
      'Endpoint',
      'IPClaim',
      'IPPool',
      'NatMapping',
      'NetworkConfig',
      'NodeDataplane',
      'PeerNetworks',
      'ReservedIP',
      'StraitGateway',
      'Subnet',
      'TunnelEndpoint',
    ]);
  });

  it('give CIDRs and addresses a pattern the API server checks (and the formats it knows)', () => {
    const crd = parse(crdFiles().get('nodedataplanes.strait.io.yaml')!) as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, Node> } } } } }[] };
    };
    const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
    assert.equal(spec.podCIDR!.format, 'cidr');
    assert.match('10.0.0.0/16', new RegExp(spec.podCIDR!.pattern as string));
    assert.doesNotMatch('10.0.0.0', new RegExp(spec.podCIDR!.pattern as string));
    assert.match('192.0.2.1', new RegExp(spec.transitAddress!.pattern as string));
    assert.doesNotMatch('gw.example', new RegExp(spec.transitAddress!.pattern as string));
  });

  it('make a chart that `helm lint --strict` passes, and `helm template` renders', function () {
    this.timeout(60_000);
    const helm = k8sTool('helm');
    const lint = execFileSync(helm, ['lint', '--strict', chartDirectory], { encoding: 'utf8' });
    assert.match(lint, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    const rendered = execFileSync(helm, ['template', 'strait', chartDirectory], { encoding: 'utf8' });
    for (const plural of ['networkconfigs', 'tunnelendpoints', 'natmappings', 'nodedataplanes'])
      assert.ok(rendered.includes(`name: ${plural}.strait.io`), plural);
  });
});
