/** What a call to a peer's API server says of our credentials there (src/controller/kubernetes/peer-api.ts). */
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import { nextPeerApiState, peerApiState } from '../../../src/controller/kubernetes/peer-api';

const failed = (code: number, message = 'refused') => new ApiException(code, 'failed', JSON.stringify({ message }), {});
const judged = (error: unknown) => {
  const { ok, reason } = peerApiState(error, 'cluster-b', 'strait-system/strait-peer-cluster-b', 1_000);
  return `${ok} ${reason}`;
};

describe('peer API state', () => {
  it('takes any answer but 401, 403 and a 5xx as our credentials working', () => {
    assert.equal(judged(undefined), 'true Reachable');
    for (const code of [404, 409, 422]) assert.equal(judged(failed(code)), 'true Reachable', String(code));
    assert.equal(judged(failed(401)), 'false CredentialsRejected');
    assert.equal(judged(failed(403, 'networkconfigs is forbidden')), 'false Forbidden');
    for (const code of [500, 503]) assert.equal(judged(failed(code)), 'false Unreachable', String(code));
    assert.equal(judged(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })), 'false Unreachable');
  });

  it('names the Secret to mend for a refused token, and quotes the server otherwise', () => {
    assert.match(
      peerApiState(failed(401), 'cluster-b', 'ns/strait-peer-cluster-b', 0).message,
      /put a new kubeconfig in Secret ns\/strait-peer-cluster-b$/,
    );
    assert.match(
      peerApiState(failed(403, 'networkconfigs is forbidden'), 'cluster-b', 's', 0).message,
      /\(403 networkconfigs is forbidden\)/,
    );
    assert.match(peerApiState(new Error('socket hang up'), 'cluster-b', 's', 0).message, /cannot be reached \(socket hang up\)$/);
  });

  it('keeps the first sighting while the reason stays, and takes a new reason at once', () => {
    const first = peerApiState(failed(401), 'cluster-b', 's', 1_000);
    assert.equal(nextPeerApiState(first, peerApiState(failed(401), 'cluster-b', 's', 9_000)), first);
    const unreachable = peerApiState(new Error('reset'), 'cluster-b', 's', 9_000);
    assert.equal(nextPeerApiState(first, unreachable), unreachable);
    const ok = peerApiState(undefined, 'cluster-b', 's', 10_000);
    assert.equal(nextPeerApiState(undefined, ok), ok);
  });
});
