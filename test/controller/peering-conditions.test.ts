import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type PeeringFacts, peeringConditions } from '../../src/controller/peering-conditions';
import { initializePlanes } from '../../src/network-ipam/planes';
import { parseCidr, parseIp } from '../../src/net/cidr';
import { peerStates } from '../../src/api/peer-states';

const home = initializePlanes(undefined, { podCIDR: '10.0.0.0/16', externalCIDR: '10.200.0.0/24' }).planes;
const theirs = {
  clusterId: 'cluster-b',
  remoteClusterId: 'cluster-a',
  podCIDR: '10.0.0.0/16',
  externalCIDR: '10.201.0.0/24',
  endpoint: { address: '203.0.113.2', port: 4789 },
};
/** B's PodCIDR collides with ours: remapped here; its ExternalCIDR and both of ours are used as they are. */
const tunnel = {
  clusterId: 'cluster-b',
  remotePodCIDR: parseCidr('t', '10.1.0.0/16'),
  remoteExternalCIDR: parseCidr('t', '10.201.0.0/24'),
  localNATPodCIDR: parseCidr('t', '10.0.0.0/16'),
  localNATExternalCIDR: parseCidr('t', '10.200.0.0/24'),
  endpoint: { address: parseIp('t', '203.0.113.2'), standbyAddresses: [] },
};
const established: PeeringFacts = {
  peer: 'cluster-b',
  state: 'ready',
  tunnel,
  theirs,
  home,
  api: { ok: true, reason: 'Reachable', message: 'ok' },
  gateway: { name: 'a-gw', ready: true },
};
const summary = (f: PeeringFacts) => peeringConditions(f).map((c) => `${c.type}=${c.status}/${c.reason}`);

describe("controller: a peering's conditions (TunnelEndpoint status)", () => {
  it('an established peering is Ready, and Remapped says which network moved', () => {
    assert.deepEqual(summary(established), [
      'Ready=True/Connected',
      'Connected=True/Exchanged',
      'CredentialsValid=True/Accepted',
      'Remapped=True/Overlapping',
      'GatewayReady=True/GatewayReady',
    ]);
    assert.equal(peeringConditions(established)[3]!.message, "cluster-b's PodCIDR 10.0.0.0/16 is 10.1.0.0/16");
    const distinct = {
      ...established,
      tunnel: { ...tunnel, remotePodCIDR: parseCidr('t', '10.0.0.0/16') },
      theirs: { ...theirs, podCIDR: '10.0.0.0/16' },
    };
    assert.equal(
      peeringConditions({
        ...distinct,
        home: initializePlanes(undefined, { podCIDR: '10.9.0.0/16', externalCIDR: '10.200.0.0/24' }).planes,
      })[3]!.reason,
      'Overlapping',
    );
    const same = { ...established, tunnel: { ...tunnel, remotePodCIDR: parseCidr('t', '10.0.0.0/16') } };
    assert.deepEqual(peeringConditions(same)[3], {
      type: 'Remapped',
      status: 'False',
      reason: 'NoOverlap',
      message: 'every network is used as its owner numbers it',
    });
  });

  it('each state short of ready names itself as the reason of Ready and Connected', () => {
    assert.deepEqual(summary({ ...established, state: 'waiting-for-peer', tunnel: undefined, theirs: undefined }).slice(0, 2), [
      'Ready=False/WaitingForPeer',
      'Connected=False/WaitingForPeer',
    ]);
    const refused = peeringConditions({
      ...established,
      state: 'refused',
      reason: 'spec.podCIDR: is IPv6 (got "fd00::/48")',
      tunnel: undefined,
    });
    assert.deepEqual(
      [refused[0]!.reason, refused[0]!.message],
      ['Refused', 'the NetworkConfig from cluster-b cannot be used: spec.podCIDR: is IPv6 (got "fd00::/48")'],
    );
    assert.equal(refused[3]!.status, 'Unknown', 'nothing is remapped before the exchange is done');
    assert.equal(summary({ ...established, state: 'remapped', tunnel: undefined })[0], 'Ready=False/WaitingForAnswer');
  });

  it('credentials the peer refuses make the peering not Connected; an unreachable server says nothing of them', () => {
    const rejected = {
      ...established,
      api: { ok: false, reason: 'CredentialsRejected', message: 'the API server of cluster-b refuses our credentials' },
    };
    assert.deepEqual(summary(rejected).slice(0, 3), [
      'Ready=False/CredentialsRejected',
      'Connected=False/CredentialsRejected',
      'CredentialsValid=False/CredentialsRejected',
    ]);
    const unreachable = { ...established, api: { ok: false, reason: 'Unreachable', message: 'cannot be reached' } };
    assert.equal(summary(unreachable)[2], 'CredentialsValid=Unknown/Unreachable');
    assert.equal(
      summary({ ...established, api: undefined })
        .slice(0, 3)
        .join(),
      'Ready=True/Connected,Connected=True/Exchanged,CredentialsValid=Unknown/NotChecked',
    );
  });

  it('no Ready gateway makes the peering not Ready', () => {
    assert.deepEqual(summary({ ...established, gateway: { name: 'a-gw', ready: false } })[0], 'Ready=False/NoReadyGateway');
  });

  it('for any facts: one condition per type, in a fixed order, Ready True exactly when Connected and GatewayReady are', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...peerStates),
        fc.option(fc.constantFrom('Reachable', 'CredentialsRejected', 'Forbidden', 'Unreachable'), { nil: undefined }),
        fc.boolean(),
        (state, api, gatewayUp) => {
          const conditions = peeringConditions({
            ...established,
            state,
            ...(state === 'ready' ? {} : { tunnel: undefined }),
            api: api === undefined ? undefined : { ok: api === 'Reachable', reason: api, message: api },
            gateway: { name: 'a-gw', ready: gatewayUp },
          });
          assert.deepEqual(
            conditions.map((c) => c.type),
            ['Ready', 'Connected', 'CredentialsValid', 'Remapped', 'GatewayReady'],
          );
          const status = (type: string) => conditions.find((c) => c.type === type)!.status;
          assert.equal(status('Ready') === 'True', status('Connected') === 'True' && status('GatewayReady') === 'True');
          // The reason is what kubectl shows: a CamelCase word, as metav1.Condition's validation requires.
          for (const c of conditions) assert.match(c.reason, /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/);
        },
      ),
    );
  });
});
