/**
 * The chart's whole life with the real helm 3.17, against the API server double started as a new
 * cluster (no strait.io CRD): `helm install` creates the CRDs (templates of the chart) and waits for them
 * to be Established, `helm upgrade` carries a new CRD field and a changed value, `helm rollback` takes
 * both back, and `helm uninstall` leaves the cluster's objects as they were before the install: no
 * object of the release, no CRD, no strait.io object, no release Secret. With `crds.keep` the CRDs and
 * what they hold stay.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { chartDirectory } from '../../src/api/chart-paths';
import { group, version } from '../../src/api/resource-names';
import { crdFiles, crdTemplate } from '../../src/api/write-crds';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { chartNamespace } from '../support/chart';
import { helm, kubectl } from '../support/k8s-tools';

const release = 'strait';
const clusterValues = [
  '--set',
  'cluster.id=cluster-a',
  '--set',
  'cluster.podCIDR=10.1.0.0/16',
  '--set',
  'cluster.externalCIDR=10.201.0.0/16',
];
const reservedIps = { group, version, plural: 'reservedips' };

/** A copy of the chart whose ReservedIP CRD has one more field (`spec.ticket`): an upgrade's schema change. */
function chartWithNewField(dir: string): string {
  const chart = join(dir, 'strait');
  cpSync(chartDirectory, chart, { recursive: true });
  const crd = parse(crdFiles().get(`reservedips.${group}.yaml`)!) as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, object> } } } } }[] };
  };
  crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.ticket = { type: 'string', maxLength: 64 };
  writeFileSync(join(chart, 'templates', 'crds', `reservedips.${group}.yaml`), crdTemplate(crd));
  return chart;
}

describe('Helm lifecycle on a new cluster (helm 3.17 against the API server double)', function () {
  this.timeout(120_000);
  let api: TestApiServer;
  let scratch: string;
  const run = async (...args: string[]) => {
    const result = await helm(api.kubeconfigPath, api.dir, ...args, '--namespace', chartNamespace);
    assert.equal(result.code, 0, `helm ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  const get = async (...args: string[]) => {
    const result = await kubectl(api.kubeconfigPath, api.dir, 'get', ...args);
    assert.equal(result.code, 0, `kubectl get ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  /** Every object the server holds, by `kind/name` in its namespace: what uninstall must leave as it found. */
  const everything = async () => {
    const resources = await kubectl(api.kubeconfigPath, api.dir, 'api-resources', '--verbs=list', '-o', 'name');
    const names = await get(
      resources.stdout.trim().split('\n').join(','),
      '--all-namespaces',
      '-o',
      'custom-columns=:kind,:metadata.namespace,:metadata.name',
      '--no-headers',
    );
    return names.trim().split('\n').sort();
  };
  const ticketOf = async (name: string) => {
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const object = (await custom.getClusterCustomObject({ ...reservedIps, name })) as { spec: { ticket?: string } };
    return object.spec.ticket;
  };
  const createReservedIp = (name: string, ticket?: string) =>
    api.kubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      ...reservedIps,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'ReservedIP',
        metadata: { name },
        spec: { ips: ['10.1.9.9'], ...(ticket ? { ticket } : {}) },
      },
    });
  const agentInterval = async () => {
    const config = await api.kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: 'strait-config', namespace: chartNamespace });
    return (parse(config.data!['agent.yaml']!) as { interval: number }).interval;
  };

  beforeEach(async () => {
    api = await startTestApiServer({ crdsInstalled: false });
    scratch = mkdtempSync(join(tmpdir(), 'strait-helm-'));
    await api.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: chartNamespace } } });
  });
  afterEach(async () => {
    await api.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('installs, upgrades a CRD and a value, rolls both back, and uninstalls to the cluster it found', async () => {
    const before = await everything();
    assert.equal(before.filter((o) => o.includes(group)).length, 0);

    await run('install', release, chartDirectory, ...clusterValues, '--set', 'agent.interval=5');
    const established = await get(
      'crds',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}',
    );
    assert.deepEqual(established.trim().split('\n'), [...crdFiles().keys()].map((f) => `${f.replace(/\.yaml$/, '')} True`).sort());
    assert.equal(await agentInterval(), 5);
    await createReservedIp('before-upgrade', 'T-1');
    assert.equal(await ticketOf('before-upgrade'), undefined, 'an unknown field is pruned before the upgrade');

    await run('upgrade', release, chartWithNewField(scratch), '--reuse-values', '--set', 'agent.interval=7');
    assert.equal(await agentInterval(), 7);
    await createReservedIp('after-upgrade', 'T-2');
    assert.equal(await ticketOf('after-upgrade'), 'T-2', 'the upgraded CRD keeps the new field');

    await run('rollback', release, '1');
    assert.equal(await agentInterval(), 5);
    await createReservedIp('after-rollback', 'T-3');
    assert.equal(await ticketOf('after-rollback'), undefined, 'the CRD rolled back prunes the field again');
    assert.match(await run('history', release), /3\s+.*deployed.*Rollback to 1/);

    await run('uninstall', release);
    assert.deepEqual(await everything(), before);
    // The ReservedIPs went with their CRD (not only out of sight): a new install finds none.
    await run('install', release, chartDirectory, ...clusterValues);
    assert.equal((await get('reservedips', '-o', 'name')).trim(), '');
  });

  // The lasting peer token NOTES.txt shows (a service-account-token Secret, which the token controller
  // fills in): it is the peer's identity, allowed NetworkConfigs and nothing else; deleting it revokes it.
  it('gives each peer a token that acts as strait-peer-<peer>, for NetworkConfigs only, until its Secret is deleted', async () => {
    await run('install', release, chartDirectory, ...clusterValues, '--set-json', 'peers=["cluster-b"]');
    const secret = 'strait-peer-cluster-b-token';
    const encoded = await get('secret', '-n', chartNamespace, secret, '-o', 'jsonpath={.data.token}');
    const token = Buffer.from(encoded, 'base64').toString();
    const peer = api.kubeconfigFor(token).path;
    const can = async (...args: string[]) => (await kubectl(peer, api.dir, 'auth', 'can-i', ...args)).stdout.trim();
    assert.equal(await can('create', 'networkconfigs.strait.io'), 'yes');
    assert.equal(await can('list', 'secrets', '-n', chartNamespace), 'no');
    assert.equal(await can('list', 'nodedataplanes.strait.io'), 'no');
    await kubectl(api.kubeconfigPath, api.dir, 'delete', 'secret', '-n', chartNamespace, secret);
    const revoked = await kubectl(peer, api.dir, 'get', 'networkconfigs');
    assert.match(revoked.stderr, /You must be logged in to the server/);
  });

  it('keeps the CRDs and the strait.io objects on uninstall with crds.keep, and a new install adopts them', async () => {
    await run('install', release, chartDirectory, ...clusterValues, '--set', 'crds.keep=true');
    await createReservedIp('kept');
    assert.match(await run('uninstall', release), /These resources were kept due to the resource policy:[\s\S]*reservedips\.strait\.io/);
    assert.match(await get('reservedips', '-o', 'name'), /reservedip\.strait\.io\/kept/);
    assert.equal((await get('crds', '-o', 'name')).trim().split('\n').length, crdFiles().size);

    await run('install', release, chartDirectory, ...clusterValues, '--set', 'crds.keep=true');
    assert.match(await get('reservedips', '-o', 'name'), /reservedip\.strait\.io\/kept/);
  });
});
