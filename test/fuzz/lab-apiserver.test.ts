/**
 * The lab's API server (lab/src/apiserver/) fed malformed requests over HTTPS, as sent (no client
 * encodes or checks them): every method on every kind of path (discovery, collections, objects, status,
 * /watch/ paths, of every served kind, Strait's CRDs among them), paths with malformed escapes, dot
 * segments and empty segments, bad query parameters, bodies that are not JSON or are mutated objects of
 * the path's kind, bad patches of each patch type, huge bodies, wrong content types, and identities
 * without the rights (a reader, a user with none, no token, an unknown token, impersonation).
 *
 * Every answer is accepted (2xx) or a refusal as kube-apiserver writes one: a meta/v1 Status with a reason
 * and the HTTP code (the one exception is Go's own bare 400 for a path with a malformed escape, which
 * kube-apiserver's handlers never see); never a 5xx, never an error or a stack in the server's log, never
 * a hang; and a refusal stores nothing: the store's resourceVersion, which every write of the store takes
 * the next of (store.ts), is the same before and after.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { crdFiles } from '../../src/api/write-crds';
import type { TokenUser } from '../../lab/src/apiserver/authentication';
import { type ResourceType, apiVersionOf, builtInTypes, customResourceType, parseCrds } from '../../lab/src/apiserver/resource-types';
import { type FuzzSurface, accepted, documentTexts, fuzzSurface, mutationsOf, refused, trickyStrings } from '../support/fuzz';
import { type RawAnswer, type TestApiServer, nodeDataplaneObject, rawRequest, startTestApiServer } from '../support/apiserver';
import { type CapturedLog, captureLog } from '../support/log-capture';

const reader: TokenUser = { token: 'reader-token-5d2e91', name: 'reader', uid: 'uid-reader', groups: ['readers'] };
const nobody: TokenUser = { token: 'nobody-token-a07c44', name: 'nobody', uid: 'uid-nobody', groups: [] };
type Identity = 'admin' | 'reader' | 'nobody' | 'anonymous' | 'unknown';

/** The namespace the namespaced seeds live in. */
const ns = 'fuzz';
const types: ResourceType[] = [...builtInTypes, ...parseCrds([...crdFiles().values()]).map(customResourceType)];

/** A valid object of each kind a client may write (names and namespace filled in by `object`). */
const validSpecs: Record<string, Record<string, unknown>> = {
  Namespace: {},
  Node: { metadata: { labels: { 'strait.io/gateway-candidate': 'true' } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
  Pod: { spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] } },
  Secret: { type: 'Opaque', data: { k: 'dg==' } },
  ConfigMap: { data: { k: 'v' } },
  // About a Pod of its namespace: an Event about a cluster-scoped object belongs in `default` (built-in-validation.ts).
  Event: { involvedObject: { kind: 'Pod', name: 'p', namespace: ns }, reason: 'R', message: 'm', type: 'Normal' },
  // events.k8s.io/v1's Event (its own rules: event-validation.ts).
  'events.k8s.io/Event': {
    regarding: { kind: 'Pod', name: 'p', namespace: ns },
    eventTime: '2026-01-01T00:00:00.000000Z',
    reportingController: 'fuzz.example/c',
    reportingInstance: 'fuzz-0',
    action: 'Fuzz',
    reason: 'R',
    note: 'n',
    type: 'Normal',
  },
  Lease: { spec: { holderIdentity: 'x', leaseDurationSeconds: 4 } },
  ServiceAccount: {},
  Service: { spec: { ports: [{ port: 80 }] } },
  Deployment: {
    spec: {
      replicas: 1,
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    },
  },
  StatefulSet: {
    spec: {
      replicas: 1,
      serviceName: 's',
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    },
  },
  DaemonSet: {
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    },
  },
  ClusterRole: { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] },
  ClusterRoleBinding: {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'fz' },
    subjects: [{ kind: 'User', name: 'fz-user' }],
  },
  Role: { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] },
  RoleBinding: {
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'fz' },
    subjects: [{ kind: 'User', name: 'fz-user' }],
  },
  ValidatingAdmissionPolicy: {
    spec: {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] },
      validations: [{ expression: 'true' }],
    },
  },
  ValidatingAdmissionPolicyBinding: { spec: { policyName: 'fz', validationActions: ['Deny'] } },
  SelfSubjectAccessReview: { spec: { resourceAttributes: { verb: 'get', resource: 'nodes' } } },
  PriorityClass: { value: 1000 },
  ClusterNetworks: { spec: { clusterId: 'fz', podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24', reserved: [], pools: [] } },
  IPClaim: {
    spec: { address: '10.6.0.10', pool: 'p1', podNamespace: ns, podName: 'p', podUID: 'u', node: 'n1', network: 'net', ifname: 'eth0' },
  },
  NatMapping: { spec: { externalAddress: '10.200.0.5', endpointAddress: '10.0.1.5', reflectedTo: ['b'] } },
  NetworkConfig: {
    spec: {
      clusterId: 'a',
      remoteClusterId: 'b',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      endpoint: { address: '203.0.113.1', port: 4789 },
    },
  },
  NodeDataplane: { spec: nodeDataplaneObject('fz').spec },
  PeerNetworks: {
    spec: {
      clusterId: 'b',
      podCIDR: '10.0.0.0/16',
      externalCIDR: '10.200.0.0/24',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.2.0.0/24',
    },
  },
  ReservedIP: { spec: { ips: ['10.6.0.30'] } },
  StraitEndpoint: {
    spec: {
      podUID: 'u',
      node: 'n1',
      attachments: [{ network: 'net', ifname: 'eth0', ips: [{ address: '10.6.0.10', prefixLength: 24, pool: 'p1' }] }],
    },
  },
  StraitGateway: {
    spec: {
      activeGateway: { name: 'n1', underlayAddress: '192.168.1.1' },
      peers: [{ clusterId: 'b', endpoint: { address: '203.0.113.2', port: 4789 } }],
    },
  },
  StraitIPPool: { spec: { subnet: '10.6.0.0/24', ips: ['10.6.0.10-10.6.0.20'] } },
  StraitSubnet: { spec: { subnet: '10.6.0.0/24', ips: ['10.6.0.10-10.6.0.20'] } },
  TunnelEndpoint: {
    spec: {
      clusterId: 'b',
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.2.0.0/24',
      localNATPodCIDR: '10.3.0.0/16',
      localNATExternalCIDR: '10.4.0.0/24',
      endpoint: { address: '203.0.113.2', port: 4789 },
    },
  },
  ServiceOffer: {
    spec: {
      clusterId: 'b',
      remoteClusterId: 'a',
      namespace: 'shop',
      name: 'cart',
      exportCreated: '2026-01-01T00:00:00Z',
      type: 'ClusterSetIP',
      ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
      sessionAffinity: 'None',
      endpointGroups: [
        {
          ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
          endpoints: [{ address: '10.0.1.10', ready: true, serving: true, terminating: false }],
        },
      ],
    },
  },
};

/** The valid object of a kind (one another group also has by that name: `<group>/<kind>`). */
const validSpec = (type: ResourceType) => validSpecs[`${type.group}/${type.kind}`] ?? validSpecs[type.kind];

/** A valid object of `type` named `name`. */
function object(type: ResourceType, name: string): Record<string, unknown> {
  const { metadata, ...rest } = (validSpec(type) ?? {}) as { metadata?: Record<string, unknown> };
  return {
    apiVersion: apiVersionOf(type),
    kind: type.kind,
    metadata: { name, ...(type.namespaced ? { namespace: ns } : {}), ...metadata },
    ...rest,
  };
}

/**
 * The kinds whose objects the fuzz writes: not the reviews (never stored), not the CRDs (the definitions
 * of the custom resources it writes; their own rules are tested in test/lab/apiserver/crds.test.ts).
 */
const writable = types.filter((t) => !t.createOnly && t.kind !== 'CustomResourceDefinition');
/** What the fuzz starts from, and puts back after an accepted write: one object of each kind, `seed`. */
const seeds = writable.filter((t) => t.kind !== 'Namespace').map((t) => object(t, 'seed'));

const collectionPath = (type: ResourceType, namespace: string | undefined, watch = false) =>
  `${type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`}${watch ? '/watch' : ''}${namespace !== undefined && type.namespaced ? `/namespaces/${namespace}` : ''}/${type.plural}`;

// ---- Generated requests ------------------------------------------------------------------------------

/**
 * A request target's text with what an HTTP/1.1 parser takes: printable ASCII as it is, anything else
 * escaped. (Node's client refuses to send a space or a control character; a byte past 0x7E the server's
 * parser (llhttp) refuses with its own 400, before any handler, where Go would hand it on.)
 */
const sendable = (text: string) => text.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c));

interface ApiRequest {
  identity: Identity;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: string;
}

/** A name as a path segment: an object there or not, escaped tricky strings, raw odd characters. */
const names = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('seed', 'fz', 'nope', 'default', 'kube-system', ns) },
  { weight: 2, arbitrary: fc.constantFrom(...trickyStrings).map((s) => encodeURIComponent(s.slice(0, 300))) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '.',
      '..',
      '%2e%2e',
      '%2F',
      'a%2Fb',
      '%00',
      '%',
      '%zz',
      '%E0%A4%A',
      '%FF',
      '~',
      ':',
      '*',
      '$',
      '"',
      "'",
      '<x>',
      'é',
      '{}',
      '|',
    ),
  },
);

/** A path of one kind, for `type`; most of the time the one `method` is for (object `name`, or the collection). */
const paths = (type: ResourceType, method: string, name: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(method === 'POST' ? collectionPath(type, ns) : `${collectionPath(type, ns)}/${name}`) },
    fc
      .tuple(fc.constantFrom(ns, 'nope', 'default', '%zz'), fc.boolean())
      .map(([namespace, all]) => collectionPath(type, all ? undefined : namespace)),
    fc.tuple(names, fc.constantFrom(ns, 'default')).map(([name, namespace]) => `${collectionPath(type, namespace)}/${name}`),
    fc
      .tuple(names, fc.constantFrom('status', 'finalize', 'scale', 'x', ''))
      .map(([name, sub]) => `${collectionPath(type, ns)}/${name}/${sub}`),
    fc
      .tuple(fc.option(names, { nil: undefined }), fc.boolean())
      .map(([name, all]) => `${collectionPath(type, all ? undefined : ns, true)}${name ? `/${name}` : ''}`),
    fc.constantFrom(
      '/',
      '/version',
      '/healthz',
      '/livez',
      '/readyz',
      '/metrics',
      '/api',
      '/apis',
      '/api/v1',
      '/api/v2',
      '/apis/strait.io',
      '/apis/strait.io/v1alpha1',
      '/apis/nope/v1',
      '/openapi/v3',
      '/openapi/v3/apis/strait.io/v1alpha1',
      '/openapi/v3/nope',
      '/api/v1/watch',
      '/apis/strait.io/v1alpha1/watch',
      '//api//v1//nodes',
      '/api/v1/nodes/',
      '/api/v1/namespaces/fuzz/../kube-system/secrets',
      '/api/v1/namespaces/fuzz/status',
      '/api/v1/namespaces/fuzz/finalize',
      '/api/v1/namespaces%2Ffuzz%2Fconfigmaps',
      '/%',
      '/api/v1/%zz',
      '/api/v1/nodes/%E0%A4%A',
      '/api/%',
      `/api/v1/${'x/'.repeat(200)}`,
    ),
  );

const queryValues = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '1',
    '5',
    '-1',
    '1e3',
    '99999999999999999999',
    'true',
    'false',
    'All',
    'Strict',
    'Warn',
    'Ignore',
    'Table',
    'Object',
    'None',
    'Background',
    'Orphan',
  ),
  fc.constantFrom(
    'a=b',
    'a in (x,y)',
    '!a',
    'a!=b',
    'metadata.name=seed',
    'metadata.name==seed',
    'metadata.namespace=fuzz',
    'spec.nodeName=n1',
    'status.phase=Running',
    'x=y',
    'metadata.name',
  ),
  fc.constantFrom(...trickyStrings).map((s) => encodeURIComponent(s.slice(0, 200))),
  fc.constantFrom('%', '%zz', 'a;b', '+', '%2B', '%00', 'eyJydiI6IjEiLCJhZnRlciI6Ii96In0', 'bm90IGpzb24', '!!!'),
);
const queryNames = fc.constantFrom(
  'resourceVersion',
  'resourceVersionMatch',
  'limit',
  'continue',
  'labelSelector',
  'fieldSelector',
  'watch',
  'timeoutSeconds',
  'allowWatchBookmarks',
  'sendInitialEvents',
  'dryRun',
  'fieldValidation',
  'gracePeriodSeconds',
  'propagationPolicy',
  'includeObject',
  'pretty',
  'fieldManager',
  'force',
  '%zz',
  '',
);
const queries = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      '',
      'limit=1',
      'labelSelector=a%3Db',
      'fieldSelector=metadata.name%3Dseed',
      'watch=true&timeoutSeconds=1',
      'dryRun=All',
      'fieldValidation=Strict',
      'resourceVersion=0',
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.tuple(queryNames, queryValues), { minLength: 1, maxLength: 3 })
      .map((pairs) => pairs.map(([k, v]) => `${k}=${sendable(v)}`).join('&')),
  },
);

const patchContentTypes = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
/** A Content-Type that fits the method most of the time, any other now and then. */
const contentTypes = (method: string) =>
  fc.oneof(
    {
      weight: 3,
      arbitrary:
        method === 'PATCH'
          ? fc.constantFrom(...patchContentTypes.slice(0, 3))
          : fc.constantFrom('application/json', 'application/json; charset=utf-8', ''),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        ...patchContentTypes,
        'text/plain',
        'application/yaml',
        'application/vnd.kubernetes.protobuf',
        'multipart/form-data; boundary=x',
        ';;',
        'application/JSON',
      ),
    },
  );

/** A JSON patch of operations on likely and unlikely paths. */
const jsonPatches = fc
  .array(
    fc.record(
      {
        op: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test', 'nope'),
        path: fc.constantFrom(
          '/metadata/labels',
          '/metadata/labels/a',
          '/metadata/name',
          '/metadata',
          '/spec',
          '/spec/0',
          '/status',
          '/status/x',
          '',
          '/',
          'x',
          '/-',
        ),
        from: fc.constantFrom('/spec', '/metadata/labels', '/nope', 'x'),
        value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ a: 'b' })),
      },
      { requiredKeys: ['op', 'path'] },
    ),
    { maxLength: 3 },
  )
  .map((ops) => JSON.stringify(ops));

/** A body for `method` on `type`: its object (as is, mutated, cut short, not JSON), a patch of each type, huge, or none. */
const bodies = (type: ResourceType, method: string, name: string): fc.Arbitrary<string | undefined> => {
  const valid = object(type, name);
  const fitting =
    method === 'PATCH'
      ? fc.oneof(
          jsonPatches,
          mutationsOf({ metadata: { labels: { a: 'b' } }, spec: valid.spec ?? {} }).map((p) => JSON.stringify(p) ?? 'null'),
          fc.constant('{"metadata":{"$patch":"delete"}}'),
        )
      : fc.oneof(
          { weight: 1, arbitrary: fc.constant(JSON.stringify(valid)) },
          { weight: 3, arbitrary: documentTexts(valid, mutationsOf(valid)) },
        );
  return fc.oneof(
    { weight: 8, arbitrary: fitting },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        ' ',
        '\u0000',
        'a: b\n',
        '[]',
        'x'.repeat(3 * 1024 * 1024 + 1),
        `{"metadata":{"name":"fz","annotations":{"a":"${'x'.repeat(1024 * 1024)}"}}}`,
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
};

const requests: fc.Arbitrary<ApiRequest> = fc
  .record({
    type: fc.constantFrom(...types),
    method: fc.oneof(
      { weight: 10, arbitrary: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'PUT', 'PATCH', 'PATCH', 'DELETE') },
      { weight: 1, arbitrary: fc.constantFrom('HEAD', 'OPTIONS', 'TRACE', 'PROPFIND') },
    ),
    name: fc.constantFrom('fz', 'seed'),
  })
  .chain(({ type, method, name }) =>
    fc.record({
      identity: fc.constantFrom<Identity>(
        'admin',
        'admin',
        'admin',
        'admin',
        'admin',
        'reader',
        'reader',
        'nobody',
        'anonymous',
        'unknown',
      ),
      method: fc.constant(method),
      path: paths(type, method, name).map(sendable),
      query: queries,
      headers: fc
        .tuple(
          contentTypes(method),
          fc.constantFrom(
            'application/json',
            'application/json',
            'application/json;as=Table;v=v1;g=meta.k8s.io',
            'application/vnd.kubernetes.protobuf',
            '*/*',
            'text/html',
            '',
          ),
          fc.oneof(
            { weight: 8, arbitrary: fc.constant({}) },
            {
              weight: 1,
              arbitrary: fc.record(
                {
                  'Impersonate-User': fc.constantFrom('admin', 'reader', 'system:serviceaccount:fuzz:x', ''),
                  'Impersonate-Group': fc.constantFrom('system:masters', 'readers'),
                },
                { requiredKeys: [] },
              ),
            },
          ),
        )
        .map(([contentType, accept, impersonation]): Record<string, string> => ({
          'Content-Type': contentType,
          Accept: accept,
          ...impersonation,
        })),
      body: bodies(type, method, name),
    }),
  );

/** The requests found by hand, run first every time. */
const cases: ApiRequest[] = [
  // The agent's ServiceAccount through /watch/ paths (issue 24): a reader may watch, not write.
  ...['PATCH', 'DELETE', 'PUT', 'POST'].flatMap((method) =>
    ['/api/v1/watch/nodes', '/api/v1/watch/nodes/seed', '/apis/strait.io/v1alpha1/watch/nodedataplanes/seed'].map((path): ApiRequest => ({
      identity: 'reader',
      method,
      path,
      query: '',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: '{"spec":{"clusterId":"west"}}',
    })),
  ),
  // Malformed escapes: Go's bare 400, not a 500 with a stack in the log.
  ...['/api/v1/namespaces/%E0%A4%A/configmaps', '/api/v1/nodes/%', '/%zz'].map((path): ApiRequest => ({
    identity: 'admin',
    method: 'GET',
    path,
    query: '',
    headers: {},
  })),
  { identity: 'admin', method: 'GET', path: '/api/v1/namespaces', query: 'labelSelector=%zz&limit=%', headers: {} },
  {
    identity: 'admin',
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    query: '',
    headers: { 'Content-Type': 'application/json' },
    body: '{"metadata":{"name":',
  },
  {
    identity: 'admin',
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    query: '',
    headers: { 'Content-Type': 'application/json' },
    body: '{"metadata":{"name":"fz","labels":5}}',
  },
  { identity: 'admin', method: 'DELETE', path: '/api/v1/namespaces', query: '', headers: {} },
  // JSON nested past what JavaScript's recursion takes (Go's decoder takes 10,000 levels).
  {
    identity: 'admin',
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    query: '',
    headers: {},
    body: `{"metadata":{"name":"deep"},"x":${'['.repeat(5000)}${']'.repeat(5000)}}`,
  },
  // A continue token that is JSON but no token; selectors naming prototype members.
  {
    identity: 'admin',
    method: 'GET',
    path: '/api/v1/nodes',
    query: `limit=1&continue=${Buffer.from('null').toString('base64url')}`,
    headers: {},
  },
  { identity: 'admin', method: 'GET', path: '/api/v1/nodes', query: 'labelSelector=constructor&fieldSelector=toString%3Dx', headers: {} },
  // JSON patches whose operations are not objects, whose path is not a string, that copy what only the prototype has.
  ...[
    '[5]',
    '[null]',
    '[{"op":"add","path":5,"value":1}]',
    '[{"op":"copy","from":"/metadata/toString","path":"/metadata/labels/x"}]',
    '[{"op":"add","path":"/metadata/labels/__proto__","value":{"a":"b"}}]',
  ].map((body): ApiRequest => ({
    identity: 'admin',
    method: 'PATCH',
    path: `/api/v1/namespaces/${ns}/configmaps/seed`,
    query: '',
    headers: { 'Content-Type': 'application/json-patch+json' },
    body,
  })),
  {
    identity: 'admin',
    method: 'PATCH',
    path: `/api/v1/namespaces/${ns}/configmaps/seed`,
    query: '',
    headers: { 'Content-Type': 'application/merge-patch+json' },
    body: '{"__proto__":{"polluted":true},"metadata":{"labels":{"__proto__":"x"}}}',
  },
  { identity: 'admin', method: 'GET', path: '/api/v1/nodes', query: '', headers: { 'Impersonate-Group': 'readers' } },
];

// ---- The surface ------------------------------------------------------------------------------------

const stackFrame = /\n\s+at .+[(:]\d+/;
const goBadRequest = '400 Bad Request';
const malformedEscape = /%(?![0-9A-Fa-f]{2})/;

describe('fuzz: the lab API server', function () {
  this.timeout(600_000);
  let t: TestApiServer;
  let log: CapturedLog;

  const tokens = (): Record<Identity, string | null> => ({
    admin: t.token,
    reader: reader.token,
    nobody: nobody.token,
    anonymous: null,
    unknown: 'not-a-known-token',
  });
  const admin = (method: string, path: string, body?: unknown) =>
    rawRequest(t, method, path, {
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }),
    });

  /** Puts back what an accepted write took away: the namespace, the reader's rights, one object of each kind. */
  async function seed(): Promise<void> {
    const namespace = types.find((x) => x.kind === 'Namespace')!;
    const rbac = [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'fuzz-reader' },
        rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'fuzz-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'fuzz-reader' },
        subjects: [{ kind: 'Group', name: 'readers' }],
      },
    ];
    for (const o of [object(namespace, ns), ...rbac, ...seeds]) {
      const type = types.find((x) => x.kind === o.kind && apiVersionOf(x) === o.apiVersion)!;
      const created = await admin('POST', collectionPath(type, ns), o);
      assert.ok(created.code === 201 || created.code === 409, `seed ${type.kind}: ${created.code} ${created.body}`);
    }
  }

  before(async () => {
    log = captureLog('debug');
    t = await startTestApiServer({ users: [reader, nobody], logger: log.log, watchCacheSize: 50 });
    for (const type of writable) assert.ok(validSpec(type), `a valid ${type.kind} to mutate (a kind served now)`);
    await seed();
  });
  after(async () => t?.close());

  fuzzSurface((): FuzzSurface<ApiRequest> => ({
    name: 'lab API server',
    inputs: requests,
    cases,
    timeoutMs: 10_000,
    async state() {
      const listed = await admin('GET', '/api/v1/namespaces?limit=1');
      return (JSON.parse(listed.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    },
    async feed(input) {
      const logged = log.lines.length;
      const answer: RawAnswer = await rawRequest(t, input.method, input.query ? `${input.path}?${input.query}` : input.path, {
        token: tokens()[input.identity],
        headers: Object.fromEntries(Object.entries(input.headers).filter(([, v]) => v !== '')),
        ...(input.body === undefined ? {} : { body: input.body }),
        streamMs: 300,
      });
      const lines = log.lines.slice(logged);
      const what = `${input.method} ${input.path}${input.query ? `?${input.query}` : ''} as ${input.identity}: ${answer.code}`;
      // kube-apiserver's own 5xx: an apply its schema cannot type is a plain error, a 500 without a reason
      // (structuredmerge.go; kubernetes/kubernetes#122480), refused before anything is stored.
      const untyped = answer.code === 500 && answer.body.includes('"message":"failed to create typed patch object (');
      assert.ok(answer.code < 500 || untyped, `a ${answer.code} for ${what}: ${answer.body.slice(0, 500)}`);
      for (const line of lines) {
        assert.ok(Number(line.level) < 50, `an error logged for ${what}: ${JSON.stringify(line).slice(0, 800)}`);
        assert.doesNotMatch(JSON.stringify(line), stackFrame, `a stack logged for ${what}`);
      }
      if (answer.code < 400) {
        if (input.method !== 'GET' && input.method !== 'HEAD') await seed();
        return accepted;
      }
      if (malformedEscape.test(input.path)) {
        assert.deepEqual(
          { code: answer.code, type: answer.headers['content-type'], connection: answer.headers.connection, body: answer.body },
          { code: 400, type: 'text/plain; charset=utf-8', connection: 'close', body: input.method === 'HEAD' ? '' : goBadRequest },
          what,
        );
        return refused(goBadRequest);
      }
      if (input.method === 'HEAD') return refused(`HEAD: ${answer.code} (an answer to HEAD has no body)`);
      let status: Record<string, unknown>;
      try {
        status = JSON.parse(answer.body) as Record<string, unknown>;
      } catch {
        throw new Error(`a refusal that is not a Status for ${what}: ${answer.body.slice(0, 300)}`);
      }
      assert.deepEqual(
        { kind: status.kind, apiVersion: status.apiVersion, status: status.status, code: status.code },
        { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: answer.code },
        `the Status of ${what}`,
      );
      if (untyped) return refused(`Unknown: ${String(status.message)}`);
      assert.ok(
        typeof status.reason === 'string' && /^[A-Z][A-Za-z]+$/.test(status.reason),
        `a Status without a reason for ${what}: ${answer.body}`,
      );
      assert.ok(typeof status.message === 'string' && status.message !== '', `a Status without a message for ${what}`);
      return refused(`${status.reason}: ${status.message}`);
    },
    clear(message, input) {
      if (malformedEscape.test(input.path)) assert.equal(message, goBadRequest);
      else assert.match(message, /^(HEAD|[A-Z][A-Za-z]+): \S/, `a refusal without a Status reason: ${message}`);
    },
  }));
});
