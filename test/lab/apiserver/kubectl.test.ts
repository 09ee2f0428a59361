/**
 * The lab API server driven by the real kubectl 1.31 through a kubeconfig from the writer: discovery
 * without warnings, get with the CRDs' printer columns, client-side apply (create, then a merge patch),
 * delete, get -w, and a bad CR refused naming its field. Outputs are compared with literal text.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { k8sTool, kubectl as runKubectl, tableLines as lines } from '../../support/k8s-tools';
import { type TestApiServer, startTestApiServer } from '../../support/apiserver';

const manifest = (name: string, clusterId: string, podCIDR = '10.1.0.0/16', extra = '') => `apiVersion: strait.io/v1alpha1
kind: NodeDataplane
metadata:
  name: ${name}
spec:
  clusterId: ${clusterId}
  podCIDR: ${podCIDR}
  externalCIDR: 100.64.1.0/24
  transitAddress: 100.64.1.1
  node: {name: ${name}, role: gateway, underlayAddress: 192.168.1.10, gatewayCandidate: true}
  activeGateway: {name: ${name}, underlayAddress: 192.168.1.10}
  overlay: {vni: 1, port: 4789, mac: "02:53:54:00:00:01"}
  peers: []
  natMappings: []
  nodes: [{name: ${name}, underlayAddress: 192.168.1.10, podCIDRs: [10.1.0.0/24]}]
${extra}`;

describe('lab API server with kubectl 1.31', function () {
  this.timeout(20_000);
  let t: TestApiServer;
  const kubectlPath = k8sTool('kubectl');

  const kubectl = (...args: string[]) => runKubectl(t.kubeconfigPath, t.dir, ...args);

  const file = (name: string, text: string) => {
    const path = join(t.dir, name);
    writeFileSync(path, text);
    return path;
  };

  beforeEach(async () => {
    t = await startTestApiServer();
  });
  afterEach(async () => t.close());

  it('gets nodes with NAME, STATUS and AGE, printing nothing on stderr (no discovery errors)', async () => {
    await t.kubeConfig.makeApiClient(CoreV1Api).createNode({
      body: {
        metadata: { name: 'node-a' },
        status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }] },
      },
    });
    const run = await kubectl('get', 'nodes');
    assert.deepEqual({ code: run.code, stderr: run.stderr }, { code: 0, stderr: '' });
    const [header, row, ...more] = lines(run.stdout);
    assert.equal(header, 'NAME STATUS AGE');
    assert.match(row!, /^node-a Ready \d+s$/);
    assert.deepEqual(more, []);
  });

  it('applies a NodeDataplane (created), applies a change (configured, one merge patch), and prints the printer columns', async () => {
    const path = file('n1.yaml', manifest('n1', 'east'));
    assert.deepEqual(await kubectl('apply', '-f', path), { code: 0, stdout: 'nodedataplane.strait.io/n1 created\n', stderr: '' });
    writeFileSync(path, manifest('n1', 'west'));
    assert.deepEqual(await kubectl('apply', '-f', path), { code: 0, stdout: 'nodedataplane.strait.io/n1 configured\n', stderr: '' });
    const custom = t.kubeConfig.makeApiClient(CustomObjectsApi);
    const applied = (await custom.getClusterCustomObject({
      group: 'strait.io',
      version: 'v1alpha1',
      plural: 'nodedataplanes',
      name: 'n1',
    })) as {
      metadata: { generation: number; annotations: Record<string, string> };
      spec: { clusterId: string };
    };
    assert.equal(applied.spec.clusterId, 'west');
    assert.equal(applied.metadata.generation, 2);
    assert.match(applied.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']!, /"clusterId":"west"/);

    await custom.patchClusterCustomObjectStatus(
      {
        group: 'strait.io',
        version: 'v1alpha1',
        plural: 'nodedataplanes',
        name: 'n1',
        body: { status: { ready: true, time: new Date().toISOString(), dataplane: 'ebpf', specGeneration: 2 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const get = await kubectl('get', 'nodedataplanes');
    assert.equal(get.stderr, '');
    const [header, row] = lines(get.stdout);
    assert.equal(header, 'NAME CLUSTER CANDIDATE READY DATAPLANE HEARTBEAT AGE');
    assert.match(row!, /^n1 west true true ebpf \d+s \d+s$/);
    const wide = await kubectl('get', 'sdp', '-o', 'wide');
    assert.equal(lines(wide.stdout)[0], 'NAME CLUSTER CANDIDATE READY DATAPLANE ERROR HEARTBEAT AGE');
  });

  it('gets all four strait kinds at once with -A', async () => {
    assert.deepEqual(await kubectl('apply', '-f', file('n1.yaml', manifest('n1', 'east'))), {
      code: 0,
      stdout: 'nodedataplane.strait.io/n1 created\n',
      stderr: '',
    });
    const run = await kubectl('get', 'networkconfigs,tunnelendpoints,natmappings,nodedataplanes', '-A');
    assert.deepEqual({ code: run.code, stderr: run.stderr }, { code: 0, stderr: '' });
    const [header, row, ...more] = lines(run.stdout);
    assert.equal(header, 'NAME CLUSTER CANDIDATE READY DATAPLANE HEARTBEAT AGE');
    assert.match(row!, /^nodedataplane\.strait\.io\/n1 east true \d+s$/);
    assert.deepEqual(more, []);
  });

  it('deletes a NodeDataplane; getting it then is NotFound', async () => {
    await kubectl('apply', '-f', file('n1.yaml', manifest('n1', 'east')));
    assert.deepEqual(await kubectl('delete', 'nodedataplane', 'n1'), {
      code: 0,
      stdout: 'nodedataplane.strait.io "n1" deleted\n',
      stderr: '',
    });
    assert.deepEqual(await kubectl('get', 'nodedataplane', 'n1'), {
      code: 1,
      stdout: '',
      stderr: 'Error from server (NotFound): nodedataplanes.strait.io "n1" not found\n',
    });
  });

  it('refuses a NodeDataplane with a bad podCIDR naming the field, and one with an unknown field (kubectl sends fieldValidation=Strict)', async () => {
    const bad = await kubectl('apply', '-f', file('bad.yaml', manifest('bad', 'east', '10.0.0.0/33')));
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      'The NodeDataplane "bad" is invalid: spec.podCIDR: Invalid value: "10.0.0.0/33": spec.podCIDR in body must be of type cidr: "10.0.0.0/33"\n',
    );
    const path = file('unknown.yaml', manifest('odd', 'east', '10.1.0.0/16', '  colour: blue\n'));
    const unknown = await kubectl('apply', '-f', path);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.stderr,
      `Error from server (BadRequest): error when creating "${path}": NodeDataplane in version "v1alpha1" cannot be handled as a NodeDataplane: strict decoding error: unknown field "spec.colour"\n`,
    );
  });

  it('prints, with get -w, an object created after it started', async () => {
    await kubectl('apply', '-f', file('n0.yaml', manifest('n0', 'east')));
    const watcher = spawn(kubectlPath, ['get', 'nodedataplanes', '-w'], {
      env: { HOME: t.dir, KUBECONFIG: t.kubeconfigPath, PATH: process.env.PATH },
    });
    let stdout = '';
    let stderr = '';
    watcher.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    watcher.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const rows = (n: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`kubectl get -w printed no ${n} lines: ${JSON.stringify(stdout)} ${stderr}`)),
          10_000,
        );
        const check = () => lines(stdout).length >= n && (clearTimeout(timer), resolve());
        watcher.stdout.on('data', check);
        check();
      });
    try {
      // Its list printed n0: the watch follows from the list's resourceVersion, so n1 can only come from the watch.
      await rows(2);
      await kubectl('apply', '-f', file('n1.yaml', manifest('n1', 'west')));
      await rows(3);
      const [header, first, second] = lines(stdout);
      assert.equal(header, 'NAME CLUSTER CANDIDATE READY DATAPLANE HEARTBEAT AGE');
      assert.match(first!, /^n0 east true \d+s$/);
      assert.match(second!, /^n1 west true \d+s$/);
      assert.equal(stderr, '');
    } finally {
      watcher.kill();
    }
  });
});
