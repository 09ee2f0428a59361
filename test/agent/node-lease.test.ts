/** The gateway candidate's fast heartbeat on the lab API server through the real client. */
import assert from 'node:assert/strict';
import { CoordinationV1Api, CoreV1Api, type V1Lease } from '@kubernetes/client-node';
import { NodeLease } from '../../src/agent/kubernetes/node-lease';
import { apiStatus } from '../../src/k8s/api-errors';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { waitFor } from '../support/wait';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const namespace = 'strait-test';

describe('agent: the gateway candidate Lease (NodeLease)', function () {
  this.timeout(20_000);
  let api: TestApiServer;
  let requests: CapturedLog;
  let leaseLog: CapturedLog;
  let leases: CoordinationV1Api;
  let lease: NodeLease | undefined;
  let renew: boolean;

  beforeEach(async () => {
    requests = captureLog();
    leaseLog = captureLog();
    api = await startTestApiServer({ logger: requests.log });
    await api.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    leases = api.kubeConfig.makeApiClient(CoordinationV1Api);
    renew = false;
    lease = new NodeLease({ api: leases, namespace, nodeName: 'n1', intervalMs: 50, log: leaseLog.log }, () => renew);
  });
  afterEach(async () => {
    await lease?.stop();
    await api.close();
  });

  const read = (): Promise<V1Lease> => leases.readNamespacedLease({ name: 'strait-node-n1', namespace });
  // client-node leaves a MicroTime as the server's text (its V1MicroTime is not in its type map).
  const renewTime = async () => String((await read()).spec?.renewTime);
  const leaseRequests = () => requests.lines.filter((l) => l.msg === 'request' && String(l.path).includes('/leases')).length;

  it('is created and renewed (renewTime advancing) only while the node is a ready gateway candidate', async () => {
    lease!.start();
    await sleep(300);
    assert.equal(leaseRequests(), 0, 'no Lease request in 6 intervals while not a ready candidate');

    renew = true;
    await waitFor('the Lease', async () => (await read()).spec?.holderIdentity === 'n1');
    const created = await read();
    assert.equal(created.spec?.leaseDurationSeconds, 1);
    assert.deepEqual(created.metadata?.labels, { 'strait.io/node': 'n1' });
    const first = await renewTime();
    await waitFor('a renewal', async () => (await renewTime()) > first, 2_000);
    await waitFor('another renewal', async () => (await renewTime()) > first, 2_000);
    assert.equal(String((await read()).spec?.acquireTime), String(created.spec?.acquireTime), 'acquired once');

    renew = false;
    await sleep(100);
    const stopped = await renewTime();
    await sleep(300);
    assert.equal(await renewTime(), stopped, 'no renewal in 6 intervals after it stopped being ready');
    assert.deepEqual(
      leaseLog.lines.map((l) => l.msg),
      ['renewing the gateway candidate Lease', 'stopped renewing the Lease: not a ready gateway candidate'],
    );
  });

  it('writes renewTime as a MicroTime and creates the Lease again when it was deleted', async () => {
    renew = true;
    lease!.start();
    await waitFor('the Lease', async () => (await read()).spec?.holderIdentity === 'n1');
    assert.match(await renewTime(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'microseconds, UTC');
    await leases.deleteNamespacedLease({ name: 'strait-node-n1', namespace });
    await waitFor('the Lease again', async () => {
      try {
        return (await read()).spec?.holderIdentity === 'n1';
      } catch (err) {
        if (apiStatus(err) === 404) return false;
        throw err;
      }
    });
    assert.equal(leaseLog.lines.filter((l) => l.level === 50).length, 0, 'a deleted Lease is no error');
  });
});
