/**
 * The Helm chart (helm/strait) with the real helm 3.17: it lints strictly and renders for the defaults
 * and each value set in helm/strait/ci/, and the rendered objects are what a platform team expects (an
 * unprivileged agent with a short list of capabilities, bpffs with the right propagation, probes,
 * priority, RBAC without wildcards), and the ConfigMap is one the binaries read as they are.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { parse } from 'yaml';
import { readControllerConfig } from '../../src/api/controller-config';
import { chartDirectory, valuesSchemaPath } from '../../src/api/chart-paths';
import { crdFiles, valuesSchemaText } from '../../src/api/write-crds';
import { type AgentFlags, agentFlagsFileRules, parseAgentFlags, registerAgentCommand } from '../../src/cli/agent-command';
import { controllerFlagsFileRules, registerControllerCommand } from '../../src/cli/controller-command';
import { optionsWithFlagsFile } from '../../src/cli/flags-file';
import { clusterNodes } from '../../src/k8s/cluster-nodes';
import { parseCidr } from '../../src/net/cidr';
import { k8sTool } from '../../lab/src/k8s-tools';
import { type ChartObject, renderChart } from '../support/chart';

type Obj = ChartObject;

const valueSets = ['defaults', 'ci/ebpf-values.yaml', 'ci/kernel-ipsec-values.yaml', 'ci/pinned-gateway-values.yaml'] as const;
const valuesArgs = (set: string, extra: string[] = []) => [...(set === 'defaults' ? [] : ['-f', join(chartDirectory, set)]), ...extra];
const render = (set: string, extra: string[] = []): Obj[] => renderChart(valuesArgs(set, extra));

const one = (objects: Obj[], kind: string, name?: string) => {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.equal(
    found.length,
    1,
    `exactly one ${kind}${name ? ` ${name}` : ''}, got ${found.map((o) => o.metadata.name).join(', ') || 'none'}`,
  );
  return found[0]!;
};
const configData = (objects: Obj[]) => one(objects, 'ConfigMap', 'strait-config').data as Record<string, string>;

/** What a binary makes of the rendered flags file: the real command's options, its action replaced. */
function readFlagsFile(
  register: (program: Command) => void,
  name: string,
  rules: typeof agentFlagsFileRules | typeof controllerFlagsFileRules,
  text: string,
  argv: string[] = [],
): Obj {
  const dir = mkdtempSync(join(tmpdir(), 'strait-flags-'));
  try {
    writeFileSync(join(dir, `${name}.yaml`), text);
    const program = new Command().exitOverride();
    register(program);
    let options: Obj | undefined;
    program.commands
      .find((c) => c.name() === name)!
      .action((_: unknown, command: Command) => {
        options = optionsWithFlagsFile(command, rules);
      });
    program.parse(['node', 'strait', name, '--flags-file', join(dir, `${name}.yaml`), ...argv]);
    return { ...options!, dir };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the Helm chart', function () {
  this.timeout(60_000);
  const rendered = new Map(valueSets.map((set) => [set, render(set)] as const));
  const get = (set: (typeof valueSets)[number]) => rendered.get(set)!;

  it('has the values.schema.json src/api generates (run `npm run build:crds` after changing it)', () => {
    assert.equal(readFileSync(valuesSchemaPath, 'utf8'), valuesSchemaText());
  });

  for (const set of valueSets) {
    it(`passes helm lint --strict with ${set}`, () => {
      const lint = execFileSync(k8sTool('helm'), ['lint', '--strict', chartDirectory, ...valuesArgs(set)], { encoding: 'utf8' });
      assert.match(lint, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  }

  it('renders the objects a platform team expects, and only those', () => {
    const kinds = get('defaults')
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .sort();
    const crds = [...crdFiles().keys()].map((f) => `CustomResourceDefinition/${f.replace(/\.yaml$/, '')}`).sort();
    assert.deepEqual(kinds, [
      'ClusterRole/strait-agent',
      'ClusterRole/strait-controller',
      'ClusterRoleBinding/strait-agent',
      'ClusterRoleBinding/strait-controller',
      'ConfigMap/strait-config',
      ...crds,
      'DaemonSet/strait-agent',
      'Deployment/strait-controller',
      'Role/strait-agent',
      'Role/strait-controller',
      'Role/strait-controller-events',
      'RoleBinding/strait-agent',
      'RoleBinding/strait-controller',
      'RoleBinding/strait-controller-events',
      'Service/strait-agent-metrics',
      'Service/strait-controller-metrics',
      'ServiceAccount/strait-agent',
      'ServiceAccount/strait-controller',
      'ValidatingAdmissionPolicy/strait-agent-own-node',
      'ValidatingAdmissionPolicy/strait-peer-own-name',
      'ValidatingAdmissionPolicyBinding/strait-agent-own-node',
      'ValidatingAdmissionPolicyBinding/strait-peer-own-name',
    ]);
    // A peer gets its own ServiceAccount, bound to what a peer may do.
    const peers = get('ci/ebpf-values.yaml')
      .filter((o) => o.kind === 'ServiceAccount' && o.metadata.labels['app.kubernetes.io/component'] === 'peer')
      .map((o) => o.metadata.name);
    assert.deepEqual(peers, ['strait-peer-cluster-b', 'strait-peer-cluster-c']);
  });

  for (const set of valueSets) {
    it(`runs the agent unprivileged with NET_ADMIN, BPF and PERFMON only, and bpffs from a privileged init container (${set})`, () => {
      const pod = one(get(set), 'DaemonSet').spec.template.spec;
      assert.equal(pod.hostNetwork, true);
      assert.equal(pod.priorityClassName, 'system-node-critical');
      assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
      assert.ok(pod.terminationGracePeriodSeconds <= 10, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds}`);
      const [agent, ...others] = pod.containers;
      assert.equal(others.length, 0);
      assert.equal(agent.securityContext.privileged, false);
      assert.equal(agent.securityContext.allowPrivilegeEscalation, false);
      assert.deepEqual(agent.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN', 'BPF', 'PERFMON'] });
      assert.deepEqual(
        agent.volumeMounts.find((m: Obj) => m.mountPath === '/sys/fs/bpf'),
        { name: 'bpf-maps', mountPath: '/sys/fs/bpf', mountPropagation: 'HostToContainer' },
      );
      assert.deepEqual(pod.volumes.find((v: Obj) => v.name === 'bpf-maps').hostPath, { path: '/sys/fs/bpf', type: 'DirectoryOrCreate' });
      const [init] = pod.initContainers;
      assert.equal(pod.initContainers.length, 1);
      assert.equal(init.name, 'mount-bpf-fs');
      assert.equal(init.securityContext.privileged, true);
      assert.equal(init.volumeMounts[0].mountPropagation, 'Bidirectional');
      assert.deepEqual(
        agent.env.find((e: Obj) => e.name === 'NODE_NAME'),
        { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      );
      for (const [probe, path] of [
        ['startupProbe', '/healthz'],
        ['livenessProbe', '/healthz'],
        ['readinessProbe', '/readyz'],
      ] as const) {
        assert.deepEqual(agent[probe].httpGet, { path, port: 'metrics' }, probe);
      }
      assert.equal(agent.ports[0].containerPort, 9972);
      assert.equal(one(get(set), 'DaemonSet').spec.updateStrategy.type, 'RollingUpdate');
    });
  }

  it('runs two controller replicas apart, unprivileged, with probes', () => {
    const deployment = one(get('defaults'), 'Deployment');
    assert.equal(deployment.spec.replicas, 2);
    const pod = deployment.spec.template.spec;
    assert.equal(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey, 'kubernetes.io/hostname');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const [controller] = pod.containers;
    assert.deepEqual(controller.securityContext.capabilities, { drop: ['ALL'] });
    assert.deepEqual(controller.readinessProbe.httpGet, { path: '/readyz', port: 'metrics' });
    assert.deepEqual(controller.livenessProbe.httpGet, { path: '/healthz', port: 'metrics' });
    assert.equal(one(get('ci/pinned-gateway-values.yaml'), 'Deployment').spec.replicas, 3);
  });

  it('binds metrics to the node or Pod address unless the values say otherwise', () => {
    const args = (set: (typeof valueSets)[number], kind: string) => one(get(set), kind).spec.template.spec.containers[0].args as string[];
    assert.ok(args('defaults', 'DaemonSet').includes('--metrics-address=$(HOST_IP)'));
    assert.ok(args('defaults', 'Deployment').includes('--metrics-address=$(POD_IP)'));
    assert.ok(args('ci/pinned-gateway-values.yaml', 'DaemonSet').includes('--metrics-address=0.0.0.0'));
  });

  for (const set of valueSets) {
    it(`grants no wildcard verb, resource or API group (${set})`, () => {
      for (const role of get(set).filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')) {
        for (const rule of role.rules as Obj[]) {
          for (const field of ['verbs', 'resources', 'apiGroups'])
            assert.ok(!(rule[field] as string[]).includes('*'), `${role.kind}/${role.metadata.name} ${field}: ${rule[field]}`);
        }
      }
    });
  }

  it('lets the agent read Nodes, NodeDataplanes and StraitGateways, write NodeDataplane status, watch its own DaemonSet, and nothing else (no Lease)', () => {
    const rules = (kind: string) => one(get('defaults'), kind, 'strait-agent').rules as Obj[];
    assert.deepEqual(rules('ClusterRole'), [
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['strait.io'], resources: ['nodedataplanes', 'straitgateways'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['strait.io'], resources: ['nodedataplanes/status'], verbs: ['patch'] },
    ]);
    assert.deepEqual(rules('Role'), [
      // Its deletion is helm uninstall (src/agent/kubernetes/daemonset-watch.ts): by name, no other DaemonSet.
      { apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: ['strait-agent'], verbs: ['list', 'watch'] },
    ]);
    assert.equal(one(get('defaults'), 'DaemonSet', 'strait-agent').metadata.namespace, 'strait-system');
    // The admission policy: its own node's NodeDataplane status, nothing else (no Lease).
    const policy = one(get('defaults'), 'ValidatingAdmissionPolicy', 'strait-agent-own-node');
    assert.deepEqual(policy.spec.matchConstraints.resourceRules, [
      { apiGroups: ['strait.io'], apiVersions: ['*'], operations: ['UPDATE'], resources: ['nodedataplanes/status'] },
    ]);
    assert.equal(policy.spec.validations[0].expression, "variables.node != '' && object.metadata.name == variables.node");
    assert.equal(
      policy.spec.matchConditions[0].expression,
      'request.userInfo.username == "system:serviceaccount:strait-system:strait-agent"',
    );
  });

  it('lets the controller watch its own Deployment by name (its deletion is helm uninstall), and the ConfigMap names it', () => {
    const deploymentRules = (one(get('defaults'), 'Role', 'strait-controller').rules as Obj[]).filter((r) =>
      (r.resources as string[]).includes('deployments'),
    );
    assert.deepEqual(deploymentRules, [
      { apiGroups: ['apps'], resources: ['deployments'], resourceNames: ['strait-controller'], verbs: ['list', 'watch'] },
    ]);
    assert.equal(one(get('defaults'), 'Deployment', 'strait-controller').metadata.namespace, 'strait-system');
    assert.match(one(get('defaults'), 'ConfigMap', 'strait-config').data['controller.yaml'], /^deployment: strait-controller$/m);
  });

  it("hands the controller client-go's leader-election timings (15/10/2 s) unless the values say otherwise", () => {
    const flags = (objects: Obj[]) => parse(one(objects, 'ConfigMap', 'strait-config').data['controller.yaml']) as Obj;
    const timings = (f: Obj) => [f['leader-elect-lease-duration'], f['leader-elect-renew-deadline'], f['leader-elect-retry-period']];
    assert.deepEqual(timings(flags(get('defaults'))), [15, 10, 2]);
    const lab = render('defaults', ['--set-json', 'controller.leaderElection={"leaseDuration":4,"renewDeadline":3,"retryPeriod":0.5}']);
    assert.deepEqual(timings(flags(lab)), [4, 3, 0.5]);
  });

  it('lets the controller create and patch events.k8s.io Events in default (a repeat patches its series), and no core/v1 Events', () => {
    const role = one(get('defaults'), 'Role', 'strait-controller-events');
    assert.equal(role.metadata.namespace, 'default');
    assert.deepEqual(role.rules, [{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }]);
  });

  // test/helm/controller-rbac.test.ts: the controller, run under this role, reads its peers' Secrets and is refused any other.
  it("lets the controller list and watch its peers' Secrets by name, and no other Secret (none without peers)", () => {
    const secretRules = (objects: Obj[]) =>
      (one(objects, 'Role', 'strait-controller').rules as Obj[]).filter((r) => (r.resources as string[]).includes('secrets'));
    assert.deepEqual(secretRules(get('defaults')), [], 'no peers: a rule without resourceNames would grant every Secret');
    assert.deepEqual(
      secretRules(render('defaults', ['--set-json', 'peers=["cluster-b",{"clusterId":"cluster-c","encryption":"ipsec"}]'])),
      [
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['strait-peer-cluster-b', 'strait-peer-cluster-c'],
          verbs: ['list', 'watch'],
        },
      ],
    );
    for (const set of valueSets) {
      for (const role of get(set).filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')) {
        for (const rule of (role.rules as Obj[]).filter((r) => (r.resources as string[]).includes('secrets')))
          assert.ok((rule.resourceNames ?? []).length > 0, `${set}: ${role.kind}/${role.metadata.name} reads every Secret`);
      }
    }
  });

  it("keeps the kernel probe's report for the pod's life in a memory emptyDir, where the agent's --probe-cache points (its root is read-only)", () => {
    const objects = get('defaults');
    const options = readFlagsFile(registerAgentCommand, 'agent', agentFlagsFileRules, configData(objects)['agent.yaml']!);
    assert.equal(parseAgentFlags(options as AgentFlags, { NODE_NAME: 'n1' }).probeCache, '/var/cache/strait/probe-cache.json');
    const pod = one(objects, 'DaemonSet').spec.template.spec;
    assert.deepEqual(
      pod.containers[0].volumeMounts.find((m: Obj) => m.name === 'probe-cache'),
      { name: 'probe-cache', mountPath: '/var/cache/strait' },
    );
    assert.deepEqual(
      pod.volumes.find((v: Obj) => v.name === 'probe-cache'),
      { name: 'probe-cache', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    );
  });

  describe('with poolIpam.enabled', () => {
    const enabled = render('defaults', ['--set', 'poolIpam.enabled=true']);
    const pod = (objects: Obj[]) => one(objects, 'DaemonSet').spec.template.spec;
    const hostPaths = (objects: Obj[]) =>
      Object.fromEntries((pod(objects).volumes as Obj[]).filter((v) => v.hostPath).map((v) => [v.name, v.hostPath]));

    it('passes helm lint --strict', () => {
      const lint = execFileSync(k8sTool('helm'), ['lint', '--strict', chartDirectory, '--set', 'poolIpam.enabled=true'], {
        encoding: 'utf8',
      });
      assert.match(lint, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });

    it('gives the agent --pool-ipam-socket, --pool-ipam-gc-interval and where the plugin is installed in its flags file, which the agent reads as they are; none when disabled', () => {
      const agentYaml = (objects: Obj[]) => configData(objects)['agent.yaml']!;
      assert.deepEqual(
        Object.keys(parse(agentYaml(get('defaults')))).filter((k) => k.startsWith('pool-ipam')),
        [],
      );
      const read = (objects: Obj[]) => {
        const options = readFlagsFile(registerAgentCommand, 'agent', agentFlagsFileRules, agentYaml(objects));
        return (parseAgentFlags(options as AgentFlags, { NODE_NAME: 'n1' }).controlPlane as { poolIpam?: unknown }).poolIpam;
      };
      assert.equal(read(get('defaults')), undefined);
      assert.deepEqual(read(enabled), { socket: '/run/strait/ipam.sock', gcIntervalMs: 600_000 });
      const custom = render('defaults', [
        '--set',
        'poolIpam.enabled=true,poolIpam.socket=/var/run/ipam/s.sock,poolIpam.gcIntervalSeconds=45',
      ]);
      assert.deepEqual(read(custom), { socket: '/var/run/ipam/s.sock', gcIntervalMs: 45_000 });
      assert.deepEqual(hostPaths(custom)['pool-ipam-socket'], { path: '/var/run/ipam', type: 'DirectoryOrCreate' });
      // Where the init container installs strait-ipam, as the agent mounts it: taken off on uninstall.
      const plugin = (objects: Obj[]) =>
        parseAgentFlags(readFlagsFile(registerAgentCommand, 'agent', agentFlagsFileRules, agentYaml(objects)) as AgentFlags, {
          NODE_NAME: 'n1',
        }).poolIpamPlugin;
      assert.equal(plugin(get('defaults')), undefined);
      assert.deepEqual(plugin(enabled), { cniBinDir: '/host/cni-bin', runtimeDir: '/var/lib/strait/strait-ipam' });
      const runtime = render('defaults', ['--set', 'poolIpam.enabled=true,poolIpam.runtimeDir=/opt/strait-ipam']);
      assert.deepEqual(plugin(runtime), { cniBinDir: '/host/cni-bin', runtimeDir: '/opt/strait-ipam' });
    });

    it("mounts the socket's directory, the pods' network namespaces and the plugin's directories from the host, and adds SYS_ADMIN and NET_RAW for the probes; nothing of it when disabled", () => {
      const [agent] = pod(enabled).containers;
      assert.deepEqual(agent.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN', 'BPF', 'PERFMON', 'SYS_ADMIN', 'NET_RAW'] });
      assert.deepEqual(
        agent.volumeMounts.filter((m: Obj) => ['pool-ipam-socket', 'netns', 'cni-bin', 'strait-ipam-runtime'].includes(m.name)),
        [
          { name: 'pool-ipam-socket', mountPath: '/run/strait' },
          { name: 'netns', mountPath: '/run/netns', mountPropagation: 'HostToContainer', readOnly: true },
          { name: 'cni-bin', mountPath: '/host/cni-bin' },
          { name: 'strait-ipam-runtime', mountPath: '/var/lib/strait/strait-ipam' },
        ],
      );
      assert.deepEqual(hostPaths(enabled), {
        'bpf-maps': { path: '/sys/fs/bpf', type: 'DirectoryOrCreate' },
        'pool-ipam-socket': { path: '/run/strait', type: 'DirectoryOrCreate' },
        netns: { path: '/run/netns', type: 'DirectoryOrCreate' },
        'cni-bin': { path: '/opt/cni/bin', type: 'DirectoryOrCreate' },
        'strait-ipam-runtime': { path: '/var/lib/strait/strait-ipam', type: 'DirectoryOrCreate' },
      });
      assert.deepEqual(Object.keys(hostPaths(get('defaults'))), ['bpf-maps']);
      assert.deepEqual(
        pod(get('defaults')).containers[0].volumeMounts.map((m: Obj) => m.name),
        ['config', 'bpf-maps', 'probe-cache'],
      );
    });

    it("installs strait-ipam from an unprivileged init container: the runtime directory at the host's own path, the plugin directory anywhere", () => {
      const names = (objects: Obj[]) => (pod(objects).initContainers as Obj[]).map((c) => c.name);
      assert.deepEqual(names(get('defaults')), ['mount-bpf-fs']);
      assert.deepEqual(names(enabled), ['mount-bpf-fs', 'install-strait-ipam']);
      const custom = render('defaults', [
        '--set',
        'poolIpam.enabled=true,poolIpam.cniBinDir=/usr/libexec/cni,poolIpam.runtimeDir=/opt/strait-ipam',
      ]);
      const install = pod(custom).initContainers[1];
      assert.equal(install.image, 'localhost/strait:0.1.0');
      assert.equal(install.command, undefined, "the image's entrypoint: strait");
      assert.deepEqual(install.args, ['pool-ipam', 'install-plugin', '--cni-bin-dir=/host/cni-bin', '--runtime-dir=/opt/strait-ipam']);
      assert.deepEqual(install.securityContext, {
        privileged: false,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        seLinuxOptions: { level: 's0', type: 'spc_t' },
      });
      assert.deepEqual(install.volumeMounts, [
        { name: 'cni-bin', mountPath: '/host/cni-bin' },
        { name: 'strait-ipam-runtime', mountPath: '/opt/strait-ipam' },
      ]);
      assert.deepEqual(hostPaths(custom)['cni-bin'], { path: '/usr/libexec/cni', type: 'DirectoryOrCreate' });
      assert.deepEqual(hostPaths(custom)['strait-ipam-runtime'], { path: '/opt/strait-ipam', type: 'DirectoryOrCreate' });
    });

    // test/helm/pool-ipam-rbac.test.ts: the service, run under this role, makes each of these calls and no other.
    it('lets the agent also do what the pool IPAM service does, and nothing more', () => {
      assert.deepEqual(one(enabled, 'ClusterRole', 'strait-agent').rules, [
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['strait.io'], resources: ['nodedataplanes', 'straitgateways'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['strait.io'], resources: ['nodedataplanes/status'], verbs: ['patch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['statefulsets', 'deployments', 'replicasets'], verbs: ['get'] },
        { apiGroups: ['strait.io'], resources: ['straitippools'], verbs: ['list', 'watch', 'create', 'delete'] },
        { apiGroups: ['strait.io'], resources: ['straitippools/status'], verbs: ['patch'] },
        { apiGroups: ['strait.io'], resources: ['straitsubnets'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['strait.io'], resources: ['straitsubnets/status'], verbs: ['update'] },
        { apiGroups: ['strait.io'], resources: ['reservedips'], verbs: ['list', 'watch'] },
        { apiGroups: ['strait.io'], resources: ['ipclaims'], verbs: ['list', 'watch', 'create', 'update', 'delete'] },
        { apiGroups: ['strait.io'], resources: ['straitendpoints'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
      ]);
      assert.deepEqual(
        one(enabled, 'Role', 'strait-agent').rules,
        one(get('defaults'), 'Role', 'strait-agent').rules,
        'nothing namespaced',
      );
      assert.deepEqual(
        one(enabled, 'ClusterRole', 'strait-controller').rules,
        one(get('defaults'), 'ClusterRole', 'strait-controller').rules,
      );
    });
  });

  describe("a platform team's own additions (extraEnv, extraVolumes, extraVolumeMounts, extraInitContainers, affinity, podSecurityContext)", () => {
    const added = (component: string) => [
      '--set-json',
      `${component}.extraEnv=[{"name":"HTTPS_PROXY","value":"http://proxy:3128"}]`,
      '--set-json',
      `${component}.extraVolumes=[{"name":"ca","configMap":{"name":"corp-ca"}}]`,
      '--set-json',
      `${component}.extraVolumeMounts=[{"name":"ca","mountPath":"/etc/ssl/corp","readOnly":true}]`,
      '--set-json',
      `${component}.extraInitContainers=[{"name":"wait","image":"busybox:1.36","command":["true"]}]`,
      '--set-json',
      `${component}.affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["infra"]}]}]}}}`,
      '--set-json',
      `${component}.podSecurityContext={"fsGroup":2000}`,
    ];
    const podOf = (objects: Obj[], kind: string) => one(objects, kind).spec.template.spec;

    for (const [component, kind, chartInit] of [
      ['agent', 'DaemonSet', ['mount-bpf-fs']],
      ['controller', 'Deployment', []],
    ] as const) {
      it(`adds them to the ${component}'s Pod after the chart's own, and adds nothing by default`, () => {
        const pod = podOf(render('defaults', added(component)), kind);
        const defaults = podOf(get('defaults'), kind);
        const [container] = pod.containers;
        assert.deepEqual(container.env.at(-1), { name: 'HTTPS_PROXY', value: 'http://proxy:3128' });
        assert.deepEqual(container.env.slice(0, -1), defaults.containers[0].env);
        assert.deepEqual(pod.volumes.at(-1), { name: 'ca', configMap: { name: 'corp-ca' } });
        assert.deepEqual(pod.volumes.slice(0, -1), defaults.volumes);
        assert.deepEqual(container.volumeMounts.at(-1), { name: 'ca', mountPath: '/etc/ssl/corp', readOnly: true });
        assert.deepEqual(container.volumeMounts.slice(0, -1), defaults.containers[0].volumeMounts);
        assert.deepEqual(
          (pod.initContainers as Obj[]).map((c) => c.name),
          [...chartInit, 'wait'],
        );
        assert.deepEqual(
          ((defaults.initContainers ?? []) as Obj[]).map((c) => c.name),
          chartInit,
        );
        assert.equal(
          pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key,
          'pool',
        );
        // Helm merges a map given with the chart's (a key set to null drops one of the chart's).
        assert.deepEqual(pod.securityContext, { ...defaults.securityContext, fsGroup: 2000 });
      });
    }

    it('gives the agent no affinity and no Pod securityContext by default, the controller its non-root one', () => {
      assert.equal(podOf(get('defaults'), 'DaemonSet').affinity, undefined);
      assert.equal(podOf(get('defaults'), 'DaemonSet').securityContext, undefined);
      assert.deepEqual(podOf(get('defaults'), 'Deployment').securityContext, {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      });
    });

    it('passes helm lint --strict with them', () => {
      const lint = execFileSync(k8sTool('helm'), ['lint', '--strict', chartDirectory, ...added('agent'), ...added('controller')], {
        encoding: 'utf8',
      });
      assert.match(lint, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  });

  describe('controller.podDisruptionBudget', () => {
    const pdb = (extra: string[]) =>
      render('defaults', ['--set', 'controller.podDisruptionBudget.enabled=true', ...extra]).filter(
        (o) => o.kind === 'PodDisruptionBudget',
      );

    it("is a policy/v1 PodDisruptionBudget selecting the controller's Pods, maxUnavailable 1; none by default", () => {
      assert.deepEqual(
        get('defaults').filter((o) => o.kind === 'PodDisruptionBudget'),
        [],
      );
      const [budget, ...others] = pdb([]);
      assert.equal(others.length, 0);
      assert.equal(budget!.apiVersion, 'policy/v1');
      assert.equal(budget!.metadata.name, 'strait-controller');
      assert.equal(budget!.metadata.namespace, 'strait-system');
      assert.deepEqual(budget!.spec, {
        maxUnavailable: 1,
        selector: { matchLabels: one(get('defaults'), 'Deployment').spec.selector.matchLabels },
      });
    });

    it('takes minAvailable instead when it is set, a number or a percentage', () => {
      assert.deepEqual(pdb(['--set', 'controller.podDisruptionBudget.minAvailable=1'])[0]!.spec.minAvailable, 1);
      assert.equal(pdb(['--set', 'controller.podDisruptionBudget.minAvailable=1'])[0]!.spec.maxUnavailable, undefined);
      assert.equal(pdb(['--set', 'controller.podDisruptionBudget.maxUnavailable=50%'])[0]!.spec.maxUnavailable, '50%');
    });
  });

  it('rolls the Pods when the settings change, and only then', () => {
    const checksum = (objects: Obj[], kind: string) => one(objects, kind).spec.template.metadata.annotations['checksum/config'] as string;
    const again = render('defaults');
    const changed = render('defaults', ['--set', 'agent.interval=2']);
    for (const kind of ['DaemonSet', 'Deployment']) {
      assert.match(checksum(get('defaults'), kind), /^[0-9a-f]{64}$/);
      assert.equal(checksum(again, kind), checksum(get('defaults'), kind), kind);
      assert.notEqual(checksum(changed, kind), checksum(get('defaults'), kind), kind);
    }
  });

  it('gives the controller a configuration it reads as it is', () => {
    const data = configData(get('ci/ebpf-values.yaml'));
    const config = readControllerConfig(parse(data['cluster.yaml']), 'kubernetes');
    assert.equal(config.clusterId, 'cluster-a');
    assert.deepEqual(config.peers, ['cluster-b', 'cluster-c']);
    assert.deepEqual(config.reflections, [{ to: 'cluster-b', fromPeer: 'cluster-c', podIP: '172.20.1.10' }]);
    assert.deepEqual(config.gatewayNodeSelector, { 'strait.io/gateway-candidate': 'true' });
    assert.equal(config.heartbeatTimeout, 1.5);
    assert.equal('tunnelMTU' in config, false, 'no override by default: each node derives its tunnel MTU');
    const withMtu = readControllerConfig(
      parse(configData(render('ci/ebpf-values.yaml', ['--set', 'cluster.tunnelMTU=1400']))['cluster.yaml']),
      'kubernetes',
    );
    assert.equal(withMtu.tunnelMTU, 1400);
    const options = readFlagsFile(registerControllerCommand, 'controller', controllerFlagsFileRules, data['controller.yaml']);
    assert.equal(options.kubernetes, true);
    assert.equal(options.config, join(options.dir, 'cluster.yaml'), "config: is the ConfigMap's own key, next to the flags file");
    assert.equal(options.metricsPort, '9973');
    assert.equal(options.deployment, 'strait-controller');
  });

  it('gives the agent options it reads as they are, the command line winning', () => {
    const data = configData(get('ci/ebpf-values.yaml'));
    const options = readFlagsFile(registerAgentCommand, 'agent', agentFlagsFileRules, data['agent.yaml'], [
      '--pin-root',
      '/sys/fs/bpf/lab',
    ]);
    const parsed = parseAgentFlags(options as AgentFlags, { NODE_NAME: 'n1' });
    assert.deepEqual(parsed.controlPlane, {
      kind: 'kubernetes',
      nodeName: 'n1',
      namespace: 'strait-system',
      statusRefreshMs: 300_000,
      daemonSet: 'strait-agent',
    });
    assert.equal(parsed.dataplane, 'ebpf');
    assert.equal(parsed.attachMode, 'tcx');
    assert.equal(parsed.intervalMs, 500);
    assert.deepEqual(parsed.liveness, { intervalMs: 200, multiplier: 5 }, 'agent.gatewayProbes');
    assert.equal(parsed.pinRoot, '/sys/fs/bpf/lab', 'the command line wins over pin-root: /sys/fs/bpf/strait');
    assert.equal(String(parsed.podInterfaces), '/^(veth|cali|lxc)/');
    assert.equal(parsed.ipsecSecrets, undefined);
  });

  it('mounts the IPsec Secret read-only and points the agent at it when encryption is on', () => {
    const objects = get('ci/kernel-ipsec-values.yaml');
    const data = configData(objects);
    assert.equal(parse(data['agent.yaml'])['ipsec-secrets'], '/etc/strait-ipsec');
    assert.equal(parse(data['agent.yaml']).dataplane, 'kernel');
    assert.deepEqual(readControllerConfig(parse(data['cluster.yaml']), 'kubernetes').encryptedPeers, ['cluster-a']);
    const pod = one(objects, 'DaemonSet').spec.template.spec;
    assert.deepEqual(pod.volumes.find((v: Obj) => v.name === 'ipsec-secrets').secret, {
      secretName: 'strait-ipsec-keys',
      defaultMode: 0o400,
    });
    assert.deepEqual(
      pod.containers[0].volumeMounts.find((m: Obj) => m.name === 'ipsec-secrets'),
      { name: 'ipsec-secrets', mountPath: '/etc/strait-ipsec', readOnly: true },
    );
    assert.equal(
      one(get('defaults'), 'DaemonSet').spec.template.spec.volumes.find((v: Obj) => v.name === 'ipsec-secrets'),
      undefined,
    );
  });

  it('pins the gateway to the labelled nodes: the controller elects among those only', () => {
    const config = readControllerConfig(parse(configData(get('ci/pinned-gateway-values.yaml'))['cluster.yaml']), 'kubernetes');
    assert.deepEqual(config.gatewayNodeSelector, { 'node-role.example.com/edge-gateway': '', 'topology.kubernetes.io/zone': 'zone-a' });
    const node = (name: string, labels: Record<string, string>, podCIDR: string) => ({
      metadata: { name, labels },
      spec: { podCIDRs: [podCIDR] },
      status: { addresses: [{ type: 'InternalIP', address: `192.0.2.${name.length}` }], conditions: [{ type: 'Ready', status: 'True' }] },
    });
    const read = clusterNodes(
      [
        node('edge-1', { 'node-role.example.com/edge-gateway': '', 'topology.kubernetes.io/zone': 'zone-a' }, '172.20.0.0/24'),
        node('edge-22', { 'node-role.example.com/edge-gateway': '', 'topology.kubernetes.io/zone': 'zone-b' }, '172.20.1.0/24'),
        node('w-333', { 'strait.io/gateway-candidate': 'true' }, '172.20.2.0/24'),
      ],
      [parseCidr('podCIDR', '172.20.0.0/20')],
      config.gatewayNodeSelector,
    );
    assert.deepEqual(
      read.nodes.filter((n) => n.gatewayCandidate).map((n) => n.config.name),
      ['edge-1'],
    );
  });

  it('leaves host bits to the controller, which refuses them naming the value when it reads the ConfigMap', () => {
    const data = configData(render('defaults', ['--set', 'cluster.podCIDR=10.244.0.1/16']));
    assert.throws(() => readControllerConfig(parse(data['cluster.yaml']), 'kubernetes'), /podCIDR/);
  });

  it('refuses bad values naming the value, before anything is rendered', () => {
    const refused = (set: string[], field: RegExp) => {
      const run = spawnSync(k8sTool('helm'), ['template', 'strait', chartDirectory, ...set], { encoding: 'utf8' });
      assert.notEqual(run.status, 0, `${set.join(' ')} was accepted`);
      assert.match(run.stderr, field);
    };
    refused(['--set', 'cluster.podCIDR=10.0.0.0'], /cluster\.podCIDR: Does not match pattern/);
    refused(['--set', 'dataplane=xdp'], /dataplane: dataplane must be one of the following: "auto", "ebpf", "kernel"/);
    refused(['--set', 'cluster.id=Cluster_A'], /cluster\.id: Does not match pattern/);
    refused(['--set', 'agent.interval=0'], /agent\.interval: Must be greater than or equal to 0\.05/);
    refused(['--set', 'cluster.tunnelMTU=1000'], /cluster\.tunnelMTU/);
    refused(['--set', 'agent.unknownKey=1'], /agent: Additional property unknownKey is not allowed/);
    refused(['--set', 'poolIpam.socket=ipam.sock'], /poolIpam\.socket: Does not match pattern/);
    refused(['--set', 'poolIpam.socket=/ipam.sock'], /poolIpam\.socket: Does not match pattern/);
    refused(['--set', 'poolIpam.runtimeDir=/opt/strait/ipam'], /poolIpam\.runtimeDir: Must not validate the schema \(not\)/);
    refused(['--set', 'poolIpam.cniBinDir=/opt/cni bin'], /poolIpam\.cniBinDir: Does not match pattern/);
    refused(['--set', 'poolIpam.gcIntervalSeconds=0'], /poolIpam\.gcIntervalSeconds: Must be greater than 0/);
    // A CIDR's shape: four octets of 0-255 and a prefix of at most 32 (IPv6: 128).
    refused(['--set', 'cluster.podCIDR=10.0.0.0/33'], /cluster\.podCIDR: Does not match pattern/);
    refused(['--set', 'cluster.externalCIDR=10.256.0.0/16'], /cluster\.externalCIDR: Does not match pattern/);
    refused(['--set', 'cluster.podCIDR=fd00::/129'], /cluster\.podCIDR: Does not match pattern/);
    refused(['--set-json', 'cluster.reserved=["192.168.0.0/40"]'], /cluster\.reserved\.0: Does not match pattern/);
    refused(['--set', 'cluster.serviceCIDR=10.96.0.0/33'], /cluster\.serviceCIDR: Must validate at least one schema/);
    refused(['--set', 'metrics.bindAddress=10.0.0.256'], /metrics\.bindAddress: Must validate at least one schema/);
    refused(['--set', 'controller.podDisruptionBudget.maxUnavailable=half'], /controller\.podDisruptionBudget\.maxUnavailable/);
    refused(['--set-json', 'agent.extraVolumes={"name":"ca"}'], /agent\.extraVolumes: Invalid type\. Expected: array, given: object/);
    refused(['--set', 'controller.affinity=none'], /controller\.affinity: Invalid type\. Expected: object, given: string/);
  });
});
