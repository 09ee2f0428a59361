/**
 * The chart on each Kubernetes version its `kubeVersion` claims (>= 1.28): `helm template --kube-version`
 * renders only what that version serves (ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1 from
 * 1.30, v1beta1 before and only where enabled; the agent's policy needs 1.30's node name in Pod-bound
 * tokens), and NOTES.txt says what is not enforced and where a peer's lasting token is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartDirectory } from '../../src/api/chart-paths';
import { k8sTool } from '../../lab/src/k8s-tools';
import { type ChartObject, chartNamespace, renderChart } from '../support/chart';

/** The API versions of the kinds the chart renders that every claimed version serves (GA before 1.28). */
const servedSince128 = ['v1', 'apps/v1', 'rbac.authorization.k8s.io/v1', 'scheduling.k8s.io/v1', 'apiextensions.k8s.io/v1'];

/** `1.30.0` → 30 (compared as a number: 1.100 comes after 1.99). */
const minor = (version: string) => Number(version.split('.')[1]);
const betaPolicies = ['--api-versions', 'admissionregistration.k8s.io/v1beta1/ValidatingAdmissionPolicy'];
const peers = ['--set-json', 'peers=["cluster-b"]'];

const policies = (objects: ChartObject[]) =>
  objects
    .filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))
    .map((o) => `${o.apiVersion} ${o.kind}/${o.metadata.name}`)
    .sort();

describe('Helm chart on Kubernetes 1.28 to 1.31 (helm template --kube-version)', function () {
  this.timeout(60_000);

  for (const version of ['1.28.0', '1.29.0', '1.30.0', '1.31.0']) {
    it(`renders for ${version} only API versions it serves`, () => {
      const objects = renderChart(['--kube-version', version, ...peers]);
      const ga = minor(version) >= 30 ? [...servedSince128, 'admissionregistration.k8s.io/v1'] : servedSince128;
      assert.deepEqual(
        objects.filter((o) => !ga.includes(o.apiVersion)).map((o) => `${o.apiVersion} ${o.kind}`),
        [],
      );
    });
  }

  it('holds agents to their own node and peers to their own offers with v1 policies from 1.30', () => {
    for (const version of ['1.30.0', '1.31.0']) {
      assert.deepEqual(policies(renderChart(['--kube-version', version])), [
        'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy/strait-agent-own-node',
        'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy/strait-peer-own-name',
        'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding/strait-agent-own-node',
        'admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding/strait-peer-own-name',
      ]);
    }
  });

  it('before 1.30: no agent policy (no node name in tokens), the peer policy as v1beta1 only where the cluster serves it', () => {
    for (const version of ['1.28.0', '1.29.0']) {
      assert.deepEqual(policies(renderChart(['--kube-version', version])), [], `${version}, v1beta1 not enabled`);
      assert.deepEqual(policies(renderChart(['--kube-version', version, ...betaPolicies])), [
        'admissionregistration.k8s.io/v1beta1 ValidatingAdmissionPolicy/strait-peer-own-name',
        'admissionregistration.k8s.io/v1beta1 ValidatingAdmissionPolicyBinding/strait-peer-own-name',
      ]);
    }
  });

  // The agent is not privileged, so the runtime's default AppArmor profile would apply, and it denies writes under /sys/fs.
  it('runs the agent AppArmor-unconfined: the securityContext field from 1.30, the annotation before', () => {
    const agent = (version: string) => {
      const daemonSet = renderChart(['--kube-version', version]).find((o) => o.kind === 'DaemonSet')!;
      const [container] = daemonSet.spec.template.spec.containers;
      assert.equal(container.name, 'agent');
      assert.equal(container.securityContext.privileged, false);
      return { annotations: daemonSet.spec.template.metadata.annotations, securityContext: container.securityContext };
    };
    const annotation = 'container.apparmor.security.beta.kubernetes.io/agent';
    for (const version of ['1.30.0', '1.31.0']) {
      assert.deepEqual(agent(version).securityContext.appArmorProfile, { type: 'Unconfined' }, version);
      assert.equal(agent(version).annotations[annotation], undefined, version);
    }
    for (const version of ['1.28.0', '1.29.0']) {
      assert.equal(agent(version).annotations[annotation], 'unconfined', version);
      assert.equal(agent(version).securityContext.appArmorProfile, undefined, version);
    }
  });

  it('refuses a version below its kubeVersion', () => {
    assert.throws(
      () => renderChart(['--kube-version', '1.27.9']),
      /chart requires kubeVersion: >=1\.28\.0-0 which is incompatible with Kubernetes v1\.27\.9/,
    );
  });

  it("covers a peer's DELETE of an offer, judged by the object it removes", () => {
    const policy = renderChart([]).find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === 'strait-peer-own-name')!;
    assert.deepEqual(policy.spec.matchConstraints.resourceRules[0].operations, ['CREATE', 'UPDATE', 'DELETE']);
    assert.deepEqual(policy.spec.variables[1], { name: 'offer', expression: "request.operation == 'DELETE' ? oldObject : object" });
    assert.match(
      policy.spec.validations[0].expression,
      /^variables\.offer\.metadata\.name\.startsWith\(variables\.peer \+ '\.'\) && variables\.offer\.spec\.clusterId == variables\.peer$/,
    );
  });

  it('gives each peer a token that does not expire, in a Secret the controller cannot read', () => {
    const objects = renderChart(peers);
    const secret = objects.find((o) => o.kind === 'Secret')!;
    assert.deepEqual(
      [secret.type, secret.metadata.name, secret.metadata.annotations],
      [
        'kubernetes.io/service-account-token',
        'strait-peer-cluster-b-token',
        { 'kubernetes.io/service-account.name': 'strait-peer-cluster-b' },
      ],
    );
    const controllerSecrets = objects
      .find((o) => o.kind === 'Role' && o.metadata.name === 'strait-controller')!
      .rules.filter((r: ChartObject) => r.resources.includes('secrets'));
    assert.deepEqual(
      controllerSecrets.map((r: ChartObject) => r.resourceNames),
      [['strait-peer-cluster-b']],
    );
  });

  // helm template does not render NOTES.txt: a copy of the chart renders it as a value of a document.
  it('NOTES.txt shows where the lasting token is, and on 1.28 what no admission policy enforces', () => {
    const dir = mkdtempSync(join(tmpdir(), 'strait-notes-'));
    try {
      const chart = join(dir, 'strait');
      cpSync(chartDirectory, chart, { recursive: true });
      renameSync(join(chart, 'templates', 'NOTES.txt'), join(chart, 'notes-source.txt'));
      writeFileSync(join(chart, 'templates', 'notes.yaml'), 'notes: {{ tpl (.Files.Get "notes-source.txt") . | toJson }}\n');
      const notes = (version: string) =>
        (
          parse(
            execFileSync(
              k8sTool('helm'),
              [
                'template',
                'strait',
                chart,
                '--namespace',
                chartNamespace,
                '--kube-version',
                version,
                ...peers,
                '--show-only',
                'templates/notes.yaml',
              ],
              { encoding: 'utf8' },
            ),
          ) as { notes: string }
        ).notes;
      const token = "kubectl -n strait-system get secret strait-peer-cluster-b-token -o jsonpath='{.data.token}' | base64 -d";
      assert.ok(notes('1.31.0').includes(token), notes('1.31.0'));
      assert.doesNotMatch(notes('1.31.0'), /no admission policy/);
      assert.match(notes('1.28.0'), /Kubernetes v1\.28\.0: no admission policy holds an agent to its own node's objects/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
