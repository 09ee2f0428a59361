/**
 * Bad requests the lab API server refuses as kube-apiserver refuses them, each with kube-apiserver's
 * answer (code, Status reason, message shape; the source that says so next to each), changing nothing:
 * bodies that are not JSON or not of the type the request says, metadata of the wrong types,
 * impersonation without a user, a continue token that is not one, JSON patches that are no list of
 * operations, JSON nested past what this server reads, and a collection delete that cannot delete all.
 * Driven by the real client where one sends such a request (client-node sends what its types let
 * through; kubectl), else as sent over HTTPS (no client sends a malformed body or header).
 */
import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import { type RawAnswer, type TestApiServer, apiFailure, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';
import { type CapturedLog, captureLog } from '../../support/log-capture';

/** The Status of a refusal, as kube-apiserver writes one. */
const failure = (code: number, reason: string, message: string) => ({
  code,
  status: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code },
});
const answered = (a: RawAnswer) => ({ code: a.code, status: JSON.parse(a.body) as unknown });

describe('lab API server: bad input refused as kube-apiserver refuses it', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let log: CapturedLog;
  let core: CoreV1Api;
  /** Every object's resourceVersion: what a refusal must leave as it was. */
  const stored = async () =>
    (
      await kubectl(
        t.kubeconfigPath,
        t.dir,
        'get',
        'namespaces,configmaps',
        '-A',
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}@{.metadata.resourceVersion} {end}',
      )
    ).stdout;
  const post = (body: string, headers: Record<string, string> = { 'Content-Type': 'application/json' }) =>
    rawRequest(t, 'POST', '/api/v1/namespaces/default/configmaps', { body, headers });

  beforeEach(async () => {
    log = captureLog('debug');
    t = await startTestApiServer({ logger: log.log });
    core = t.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'cm' }, data: { k: 'v' } } });
  });
  afterEach(async () => {
    await t.close();
    assert.deepEqual(
      log.lines.filter((l) => Number(l.level) >= 50),
      [],
      'nothing logged as an error',
    );
  });

  it("answers a body that is not JSON with Go's syntax error, and a Content-Type it does not read with 415", async () => {
    const before = await stored();
    // handlers/create.go: the serializer's meta.Interpret fails first ("couldn't get version/kind; json parse
    // error: " + encoding/json's SyntaxError, scanner.go), and transformDecodeError words it with the kind and
    // the first 30 bytes (summarizeData: text for an object, else hex).
    const unrecognized = (error: string, summary: string) =>
      failure(
        400,
        'BadRequest',
        `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: ${error} (${summary})`,
      );
    assert.deepEqual(answered(await post('{"metadata":{"name":')), unrecognized('unexpected end of JSON input', '{"metadata":{"name":'));
    assert.deepEqual(
      answered(await post('{"data":{"k":tru}}')),
      unrecognized("invalid character '}' in literal true (expecting 'e')", '{"data":{"k":tru}}'),
    );
    assert.deepEqual(
      answered(await post('{"a":1}\u0000')),
      unrecognized("invalid character '\\x00' after top-level value", '{"a":1}\u0000'),
    );
    assert.deepEqual(answered(await post('[1,]')), unrecognized("invalid character ']' looking for beginning of value", '5b312c5d'));
    assert.deepEqual(answered(await post('')), unrecognized('unexpected end of JSON input', '<empty>'));
    // negotiation.go NegotiateInputSerializerForMediaType, errors.go errUnsupportedMediaType: a type not served is 415,
    // before the body is read (here JSON is the one type served; kube-apiserver also reads YAML and protobuf).
    assert.deepEqual(
      answered(await post('{', { 'Content-Type': 'text/plain' })),
      failure(
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: application/json',
      ),
    );
    // patch.go: a PATCH's type is its Content-Type, checked first (1.31 reads no CBOR: its apply-patch+cbor came in 1.32, gated).
    const patched = await rawRequest(t, 'PATCH', '/api/v1/namespaces/default/configmaps/cm', {
      body: '{"data":{"k":"w"}}',
      headers: { 'Content-Type': 'application/apply-patch+cbor' },
    });
    assert.deepEqual(
      answered(patched),
      failure(
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml',
      ),
    );
    // A GET's body is never read (get.go reads none): a list with a body that is no JSON, or past the size limit, is a list.
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/configmaps', { body: '{' })).code, 200);
    assert.equal(
      (await rawRequest(t, 'GET', '/api/v1/namespaces/default/configmaps', { body: 'x'.repeat(3 * 1024 * 1024 + 1) })).code,
      200,
    );
    assert.equal(await stored(), before);
  });

  it("answers metadata of the wrong JSON type with the decoder's 400 naming the field and its Go type, from client-node too", async () => {
    const before = await stored();
    // A ConfigMap's labels typed map<string,string> in client-node, which still sends a number it is given.
    const labels = await apiFailure(
      core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'x', labels: { a: 5 as unknown as string } } } }),
    );
    // create.go transformDecodeError with the kind the data names: "<Kind> in version "v1" cannot be handled as a <Kind>: "
    // and encoding/json's UnmarshalTypeError ("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string").
    assert.deepEqual(
      { code: labels.code, reason: labels.status.reason, message: labels.status.message },
      {
        code: 400,
        reason: 'BadRequest',
        message:
          'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string',
      },
    );
    const message = async (metadata: unknown) =>
      (JSON.parse((await post(JSON.stringify({ metadata }))).body) as { message: string }).message;
    assert.equal(
      await message({ name: ['x'] }),
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal array into Go struct field ObjectMeta.metadata.name of type string',
    );
    assert.equal(
      await message({ name: 'x', finalizers: 'a' }),
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string',
    );
    assert.equal(
      await message({ name: 'x', generation: 1.5 }),
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64',
    );
    assert.equal(
      await message({ name: 'x', ownerReferences: [{ name: true }] }),
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field OwnerReference.metadata.ownerReferences.name of type string',
    );
    assert.equal(
      await message(5),
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.metadata of type v1.ObjectMeta',
    );
    // meta.go Interpret reads apiVersion and kind into strings before anything else.
    const kind = await post(JSON.stringify({ kind: {}, metadata: { name: 'x' } }));
    assert.deepEqual(
      answered(kind),
      failure(
        400,
        'BadRequest',
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal object into Go struct field .kind of type string",
      ),
    );
    // null is any field's zero value.
    assert.equal((await post(JSON.stringify({ metadata: { name: 'nulls', labels: null, finalizers: null } }))).code, 201);
    assert.equal((await stored()).replace(/ nulls@\d+/, ''), before);
  });

  it('answers impersonated groups without a user with a 400 naming them (impersonation.go since Kubernetes 1.35)', async () => {
    // kubectl refuses --as-group without --as itself: the headers as any client could send them.
    const groups = await rawRequest(t, 'GET', '/api/v1/nodes', {
      headers: { 'Impersonate-Group': ['readers', 'writers'], 'Impersonate-Uid': 'u1' },
    });
    // buildImpersonationRequests: apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", []v1.ObjectReference)).
    assert.deepEqual(
      answered(groups),
      failure(
        400,
        'BadRequest',
        'requested [{Group  readers    } {Group  writers    } {UID  u1  authentication.k8s.io/v1  }] without impersonating a user',
      ),
    );
  });

  it('answers a continue token that is not one with 400, and a JSON patch that is no list of operations with 400 or 422', async () => {
    // storage.DecodeContinue (apiserver pkg/storage/continue.go), answered as etcd3 store.go GetList does: `invalid continue token: %v`.
    const token = (json: string) => Buffer.from(json).toString('base64url');
    for (const [continueToken, why] of [
      [token('null'), 'server does not recognize this encoded version '],
      [token('{"rv":"x","after":"/a"}'), 'json: cannot unmarshal string into Go struct field continueToken.rv of type int64'],
      ['a*b', 'illegal base64 data at input byte 1'],
      [token('{"v":"meta.k8s.io/v1","rv":0,"start":"a"}'), 'incorrect encoded start resourceVersion (version meta.k8s.io/v1)'],
      [token('{"v":"meta.k8s.io/v1","rv":5}'), 'encoded start key empty (version meta.k8s.io/v1)'],
      [token('{"v":"meta.k8s.io/v1","rv":5,"start":"../kube-system"}'), '../kube-system'],
    ]) {
      const listed = await kubectl(t.kubeconfigPath, t.dir, 'get', '--raw', `/api/v1/namespaces?limit=1&continue=${continueToken}`);
      assert.deepEqual(listed, {
        code: 1,
        stdout: '',
        stderr: `Error from server (BadRequest): invalid continue token: continue key is not valid: ${why}\n`,
      });
    }
    const before = await stored();
    const patch = (body: string) =>
      rawRequest(t, 'PATCH', '/api/v1/namespaces/default/configmaps/cm', {
        body,
        headers: { 'Content-Type': 'application/json-patch+json' },
      });
    // patch.go: jsonpatch.DecodePatch errors are 400s (an element that is no object fails json.Unmarshal into
    // jsonpatch.Operation); Apply errors are 422s (NewGenericServerResponse(422)).
    assert.deepEqual(
      answered(await patch('[5]')),
      failure(400, 'BadRequest', 'json: cannot unmarshal number into Go value of type jsonpatch.Operation'),
    );
    assert.deepEqual(
      answered(await patch('[{"op":"add","path":5,"value":1}]')),
      failure(422, 'Invalid', 'the server rejected our request due to an error in our request: path of an operation is not a string'),
    );
    // What only Object.prototype has is missing, as in any JSON document.
    assert.deepEqual(
      answered(await patch('[{"op":"copy","from":"/metadata/toString","path":"/data/x"}]')),
      failure(422, 'Invalid', 'the server rejected our request due to an error in our request: doc is missing key: /metadata/toString'),
    );
    assert.equal(await stored(), before);
    // A key named __proto__ is a key: a merge patch of it adds a data key (a valid config key), it does
    // not change a prototype. As a label key it is no qualified name, refused as the real server does.
    const merged = await rawRequest(t, 'PATCH', '/api/v1/namespaces/default/configmaps/cm', {
      body: '{"data":{"__proto__":"x"}}',
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    const data = (JSON.parse(merged.body) as { data: Record<string, string> }).data;
    assert.equal(Object.getOwnPropertyDescriptor(data, '__proto__')?.value, 'x');
    const label = await rawRequest(t, 'PATCH', '/api/v1/namespaces/default/configmaps/cm', {
      body: '{"metadata":{"labels":{"__proto__":"x"}}}',
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    assert.equal(label.code, 422);
    assert.match(
      JSON.parse(label.body).message,
      /metadata\.labels: Invalid value: "__proto__": name part must consist of alphanumeric characters/,
    );
  });

  it('refuses JSON nested deeper than it reads (1,000 levels) as Go refuses it past 10,000, and stays up', async () => {
    const deep = (n: number) => `{"metadata":{"name":"deep"},"data":{"k":"v"},"x":${'['.repeat(n)}${']'.repeat(n)}}`;
    assert.deepEqual(
      answered(await post(deep(5_000))),
      failure(
        400,
        'BadRequest',
        `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '[' exceeded max depth ({"metadata":{"name":"deep"},"d ...)`,
      ),
    );
    assert.equal((await post(deep(500))).code, 201);
  });

  it('deletes a collection all or nothing: a namespace that may not go keeps every other', async () => {
    await core.createNamespace({ body: { metadata: { name: 'a-first' } } });
    const before = await stored();
    // namespace_lifecycle.go: default, kube-system, kube-public and kube-node-lease may not be deleted.
    const deleted = await kubectl(t.kubeconfigPath, t.dir, 'delete', '--raw', '/api/v1/namespaces');
    assert.deepEqual(deleted, {
      code: 1,
      stdout: '',
      stderr: 'Error from server (Forbidden): namespaces "default" is forbidden: this namespace may not be deleted\n',
    });
    assert.equal(await stored(), before, 'a-first (listed before default) is still there');
  });
});
