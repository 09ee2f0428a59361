/**
 * Bound service account tokens on the lab API server, as kube-apiserver issues and checks them, driven
 * by the real kubectl 1.31 (`kubectl create token`): TokenRequest's validation
 * (pkg/apis/authentication/validation/validation.go: at least 10 minutes), the ServiceAccount it names
 * (pkg/registry/core/serviceaccount/storage/token.go: 404 without it), and authentication
 * (pkg/serviceaccount/jwt.go, claims.go: until it expires, while that ServiceAccount, by uid, exists,
 * and the object it is bound to, if any). The node name a Node-bound token carries is what the
 * admission policies read (admission-policy.test.ts).
 */
import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import { type TestApiServer, rawRequest, startTestApiServer } from '../../support/apiserver';
import { kubectl } from '../../support/k8s-tools';

describe('lab API server: bound service account tokens (TokenRequest)', function () {
  this.timeout(30_000);
  let t: TestApiServer;
  let now = Date.now();
  beforeEach(async () => {
    now = Date.now();
    t = await startTestApiServer({ clock: () => now });
    await t.kubeConfig
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'peer' } } });
  });
  afterEach(async () => t.close());

  const createToken = (...args: string[]) => kubectl(t.kubeconfigPath, t.dir, 'create', 'token', ...args);
  /** What the token's user may do: `kubectl auth can-i list pods` answers yes or no once authenticated, and fails without. */
  const asToken = (token: string, ...args: string[]) => kubectl(t.kubeconfigFor(token).path, t.dir, ...args);

  it('refuses a duration under 10 minutes and a ServiceAccount that does not exist, naming them', async () => {
    const short = await createToken('peer', '--duration', '9m59s');
    assert.equal(short.code, 1);
    assert.match(
      short.stderr,
      /TokenRequest\.authentication\.k8s\.io "peer" is invalid: spec\.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes/,
    );
    const missing = await createToken('nobody', '--duration', '10m');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /serviceaccounts "nobody" not found/);
  });

  it('authenticates the ServiceAccount until the token expires, then 401', async () => {
    const issued = await createToken('peer', '--duration', '10m');
    assert.equal(issued.code, 0, issued.stderr);
    const token = issued.stdout.trim();
    const allowed = await asToken(token, 'auth', 'can-i', 'list', 'pods', '-n', 'default');
    assert.deepEqual([allowed.code, allowed.stdout.trim()], [1, 'no'], 'authenticated (as the ServiceAccount, which RBAC grants nothing)');
    const who = await rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token });
    assert.equal(who.code, 403);
    assert.match(JSON.parse(who.body).message, /User "system:serviceaccount:default:peer" cannot list resource "pods"/);

    now += 599_000;
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token })).code, 403, 'still good a second before');
    now += 1_000;
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token })).code, 401, 'expired');
  });

  it('refuses a token whose ServiceAccount was deleted, also once one of the same name is created again, and a token altered', async () => {
    const token = (await createToken('peer', '--duration', '1h')).stdout.trim();
    const core = t.kubeConfig.makeApiClient(CoreV1Api);
    await core.deleteNamespacedServiceAccount({ name: 'peer', namespace: 'default' });
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token })).code, 401);
    await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'peer' } } });
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token })).code, 401, 'another uid');

    const fresh = (await createToken('peer', '--duration', '1h')).stdout.trim();
    const [header, payload, signature] = fresh.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400 })).toString('base64url');
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token: `${header}.${longer}.${signature}` })).code, 401);
  });

  it('binds a token to a Node, a Pod or a Secret that exists (404 otherwise), good only while it does', async () => {
    const core = t.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNode({ body: { metadata: { name: 'n1' } } });
    await core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 's1' } } });
    const bound = async (kind: string, name: string) => {
      const issued = await createToken('peer', '--bound-object-kind', kind, '--bound-object-name', name);
      assert.equal(issued.code, 0, issued.stderr);
      return issued.stdout.trim();
    };
    const toNode = await bound('Node', 'n1');
    const toSecret = await bound('Secret', 's1');
    const missing = await createToken('peer', '--bound-object-kind', 'Pod', '--bound-object-name', 'nowhere');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /pods "nowhere" not found/);
    const works = (token: string) => rawRequest(t, 'GET', '/api/v1/namespaces/default/pods', { token }).then((r) => r.code);
    assert.deepEqual([await works(toNode), await works(toSecret)], [403, 403], 'authenticated');
    await core.deleteNode({ name: 'n1' });
    await core.deleteNamespacedSecret({ namespace: 'default', name: 's1' });
    assert.deepEqual([await works(toNode), await works(toSecret)], [401, 401], 'their objects gone');
  });

  it('answers only POST on the token subresource, and serves it only for ServiceAccounts', async () => {
    assert.equal((await rawRequest(t, 'GET', '/api/v1/namespaces/default/serviceaccounts/peer/token')).code, 405);
    assert.equal((await rawRequest(t, 'POST', '/api/v1/namespaces/default/configmaps/x/token', { body: '{}' })).code, 404);
  });
});
