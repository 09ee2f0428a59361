/**
 * The strait.io CRDs in helm/strait/crds/: current (what src/api generates), structural (the rules of
 * apiextensions.k8s.io/v1, so an API server accepts them and can prune), and the chart lints with the
 * real helm 3.17.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { crdDirectory } from '../../src/api/chart-paths';
import { crdFiles } from '../../src/api/write-crds';
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

describe('strait.io CustomResourceDefinitions', () => {
  it('are what src/api generates (run `npm run build:crds` after changing a schema)', () => {
    const generated = crdFiles();
    assert.deepEqual(readdirSync(crdDirectory).sort(), [...generated.keys()].sort());
    for (const [name, text] of generated) assert.equal(readFileSync(join(crdDirectory, name), 'utf8'), text, `${name} is stale`);
  });

  it("are structural, cluster-scoped (an Endpoint lives in its pod's namespace), with the status subresource, printer columns, short names and the category strait", () => {
    const kinds: string[] = [];
    for (const name of readdirSync(crdDirectory)) {
      const crd = parse(readFileSync(join(crdDirectory, name), 'utf8')) as Node & {
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
      'Subnet',
      'TunnelEndpoint',
    ]);
  });

  it('give CIDRs and addresses a pattern the API server checks (and the formats it knows)', () => {
    const crd = parse(readFileSync(join(crdDirectory, 'nodedataplanes.strait.io.yaml'), 'utf8')) as {
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
    const chart = join(crdDirectory, '..');
    const helm = k8sTool('helm');
    const lint = execFileSync(helm, ['lint', '--strict', chart], { encoding: 'utf8' });
    assert.match(lint, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    const rendered = execFileSync(helm, ['template', 'strait', chart, '--include-crds'], { encoding: 'utf8' });
    for (const plural of ['networkconfigs', 'tunnelendpoints', 'natmappings', 'nodedataplanes'])
      assert.ok(rendered.includes(`name: ${plural}.strait.io`), plural);
  });
});
