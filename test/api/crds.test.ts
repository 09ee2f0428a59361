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

  it("are structural, cluster-scoped (a StraitEndpoint lives in its pod's namespace), with the status subresource, printer columns, short names and the category strait", () => {
    const kinds: string[] = [];
    for (const [name, text] of crdFiles()) {
      const crd = parse(text) as Node & {
        spec: Node & { names: Node; versions: (Node & { schema: { openAPIV3Schema: Node } })[] };
      };
      const { spec } = crd;
      kinds.push(spec.names.kind as string);
      assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
      assert.equal((crd.metadata as Node).name, `${spec.names.plural}.strait.io`);
      assert.equal(spec.scope, spec.names.kind === 'StraitEndpoint' ? 'Namespaced' : 'Cluster', name);
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
      'IPClaim',
      'NatMapping',
      'NetworkConfig',
      'NodeDataplane',
      'PeerNetworks',
      'ReservedIP',
      'ServiceOffer',
      'StraitEndpoint',
      'StraitGateway',
      'StraitIPPool',
      'StraitSubnet',
      'TunnelEndpoint',
    ]);
  });

  it("name no resource of a cluster they run beside: no plural, singular or short name is another resource's plural or short name", () => {
    // kubectl resolves `kubectl get <name>` by plural, singular and short name across every API group, a
    // built-in first: a Strait CRD named like another resource is shadowed by it, or shadows it. Each entry:
    // where the names come from, then the plural and short names (`kubectl api-resources`).
    const wellKnown: [source: string, names: string[]][] = [
      // Kubernetes core/v1 (pkg/registry/core/*/storage: ShortNames), `kubectl api-resources --api-group=''`.
      [
        'core/v1',
        [
          'bindings',
          'componentstatuses',
          'cs',
          'configmaps',
          'cm',
          'endpoints',
          'ep',
          'events',
          'ev',
          'limitranges',
          'limits',
          'namespaces',
          'ns',
          'nodes',
          'no',
          'persistentvolumeclaims',
          'pvc',
          'persistentvolumes',
          'pv',
          'pods',
          'po',
          'podtemplates',
          'replicationcontrollers',
          'rc',
          'resourcequotas',
          'quota',
          'secrets',
          'serviceaccounts',
          'sa',
          'services',
          'svc',
        ],
      ],
      // Kubernetes apps/v1 (pkg/registry/apps/*/storage).
      ['apps/v1', ['controllerrevisions', 'daemonsets', 'ds', 'deployments', 'deploy', 'replicasets', 'rs', 'statefulsets', 'sts']],
      // Kubernetes networking built-ins: discovery.k8s.io/v1, networking.k8s.io/v1 (IPAddress `ip`, 1.27+), apiextensions.k8s.io/v1.
      ['discovery.k8s.io/v1', ['endpointslices']],
      ['networking.k8s.io/v1', ['ingresses', 'ing', 'ingressclasses', 'networkpolicies', 'netpol', 'ipaddresses', 'ip', 'servicecidrs']],
      ['apiextensions.k8s.io/v1', ['customresourcedefinitions', 'crd', 'crds']],
      // Calico, crd.projectcalico.org/v1 and projectcalico.org/v3 (its API server): IPPool and its IPAM kinds, no short names.
      ['Calico', ['ippools', 'ipamblocks', 'ipamhandles', 'ipreservations', 'blockaffinities', 'hostendpoints']],
      // Antrea, crd.antrea.io (build/charts/antrea/crds/ippool.yaml).
      ['Antrea', ['ippools', 'ipp']],
      // Whereabouts, whereabouts.cni.cncf.io: IPPool, OverlappingRangeIPReservation (no short names).
      ['Whereabouts', ['ippools', 'overlappingrangeipreservations']],
      // Kube-OVN, kubeovn.io (the CRDs of dist/images/install.sh): Subnet, IP, IPPool, each with its singular as short name.
      ['Kube-OVN', ['subnets', 'subnet', 'ips', 'ip', 'ippools', 'ippool']],
      // Cilium, cilium.io/v2 (pkg/k8s/apis/cilium.io/client/crds/v2/): CiliumEndpoint, CiliumNode.
      ['Cilium', ['ciliumendpoints', 'cep', 'ciliumep', 'ciliumnodes', 'cn', 'ciliumn']],
      // Spiderpool, spiderpool.spidernet.io (charts/spiderpool/crds/): the pool IPAM Strait's follows.
      ['Spiderpool', ['spiderippools', 'sp', 'spidersubnets', 'ss', 'spiderendpoints', 'se']],
      // Multus, k8s.cni.cncf.io: NetworkAttachmentDefinition.
      ['Multus', ['network-attachment-definitions', 'net-attach-def']],
    ];
    const owners = new Map<string, string[]>();
    for (const [source, names] of wellKnown) for (const n of names) owners.set(n, [...(owners.get(n) ?? []), source]);
    const clashes: string[] = [];
    const own = new Map<string, string>();
    for (const text of crdFiles().values()) {
      const { names } = (parse(text) as { spec: { names: { kind: string; plural: string; singular: string; shortNames: string[] } } }).spec;
      for (const n of [names.plural, names.singular, ...names.shortNames]) {
        if (owners.has(n)) clashes.push(`${names.kind} ${n}: also ${owners.get(n)!.join(', ')}`);
        if (own.has(n) && own.get(n) !== names.kind) clashes.push(`${names.kind} ${n}: also ${own.get(n)}`);
        own.set(n, names.kind);
      }
    }
    assert.deepEqual(clashes, []);
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
