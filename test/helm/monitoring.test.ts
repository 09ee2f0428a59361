/**
 * The chart's monitoring objects, all off by default: a Prometheus Operator ServiceMonitor per metrics
 * Service, a PrometheusRule whose alerts query only the metrics docs/metrics.md lists, and a Grafana
 * dashboard in a ConfigMap the kube-prometheus-stack sidecar finds. The operator's kinds render only when
 * the cluster serves monitoring.coreos.com/v1 (`--api-versions`) or the values trust it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chartDirectory } from '../../src/api/chart-paths';
import { k8sTool } from '../../lab/src/k8s-tools';
import { type ChartObject, renderChart } from '../support/chart';

const operatorApis = [
  '--api-versions',
  'monitoring.coreos.com/v1/ServiceMonitor',
  '--api-versions',
  'monitoring.coreos.com/v1/PrometheusRule',
];
const allOn = ['--set', 'metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboards.enabled=true'];

/** The metrics docs/metrics.md lists (its tables' first column), with a histogram's _bucket, _sum and _count. */
function documentedMetrics(): Set<string> {
  const text = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'metrics.md'), 'utf8');
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^\| `(strait_[a-z_]+)` \| (\w+) \|/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/** The strait_ metric names a PromQL expression reads. */
const metricsIn = (expr: string) => [...expr.matchAll(/\bstrait_[a-z_]+/g)].map((m) => m[0]);

const kinds = (objects: ChartObject[]) =>
  objects.filter((o) => o.apiVersion === 'monitoring.coreos.com/v1' || o.kind === 'ConfigMap').map((o) => `${o.kind}/${o.metadata.name}`);

describe('Helm chart monitoring (ServiceMonitor, PrometheusRule, Grafana dashboard)', function () {
  this.timeout(60_000);
  const documented = documentedMetrics();
  const objects = renderChart([...operatorApis, ...allOn]);
  const find = (kind: string) => objects.filter((o) => o.kind === kind);

  it('reads the metric names from docs/metrics.md', () => {
    for (const name of [
      'strait_agent_ready',
      'strait_agent_dropped_packets_total',
      'strait_controller_peer_api_up',
      'strait_controller_reconcile_duration_seconds_bucket',
    ])
      assert.ok(documented.has(name), name);
  });

  it('renders none of them by default, even where the cluster serves the operator', () => {
    assert.deepEqual(kinds(renderChart(operatorApis)), ['ConfigMap/strait-config']);
  });

  it("monitors the agents' and the controllers' metrics Services, on their metrics port, with the node as a label", () => {
    const services = find('Service');
    const monitors = find('ServiceMonitor');
    assert.deepEqual(
      monitors.map((m) => m.metadata.name),
      ['strait-agent', 'strait-controller'],
    );
    for (const monitor of monitors) {
      const service = services.find((s) => s.metadata.name === `${monitor.metadata.name}-metrics`)!;
      assert.equal(monitor.metadata.namespace, 'strait-system');
      assert.deepEqual(monitor.spec.namespaceSelector, { matchNames: ['strait-system'] });
      // The selector matches the Service's labels, and the endpoint names its port.
      for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels)) assert.equal(service.metadata.labels[key], value, key);
      assert.deepEqual(
        objects.filter(
          (o) =>
            o.kind === 'ServiceMonitor' && Object.entries(o.spec.selector.matchLabels).every(([k, v]) => service.metadata.labels[k] === v),
        ),
        [monitor],
      );
      assert.equal(monitor.spec.endpoints[0].port, service.spec.ports[0].name);
      assert.equal(monitor.spec.endpoints[0].path, '/metrics');
      assert.deepEqual(monitor.spec.endpoints[0].relabelings, [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: 'node' }]);
    }
    const labelled = renderChart([
      ...operatorApis,
      ...allOn,
      '--set',
      'metrics.serviceMonitor.labels.release=kps,metrics.serviceMonitor.interval=15s',
    ]);
    for (const monitor of labelled.filter((o) => o.kind === 'ServiceMonitor')) {
      assert.equal(monitor.metadata.labels.release, 'kps');
      assert.equal(monitor.spec.endpoints[0].interval, '15s');
    }
  });

  it('alerts on a peer API server down, peers not ready, no leader, reconcile and apply errors, agents not ready and drops rising', () => {
    const [rule, ...others] = find('PrometheusRule');
    assert.equal(others.length, 0);
    const rules = (rule!.spec.groups as ChartObject[]).flatMap((g) => g.rules as ChartObject[]);
    assert.deepEqual(
      rules.map((r) => r.alert),
      [
        'StraitPeerApiDown',
        'StraitPeerNotReady',
        'StraitControllerNoLeader',
        'StraitControllerReconcileErrors',
        'StraitAgentNotReady',
        'StraitAgentApplyErrors',
        'StraitAgentDropsRising',
      ],
    );
    const expr = (alert: string) => rules.find((r) => r.alert === alert)!.expr as string;
    assert.equal(
      expr('StraitPeerApiDown'),
      'strait_controller_peer_api_up{namespace="strait-system", job="strait-controller-metrics"} == 0',
    );
    assert.match(
      expr('StraitAgentDropsRising'),
      /rate\(strait_agent_dropped_packets_total\{namespace="strait-system", job="strait-agent-metrics"\}\[5m\]\)\) > 1$/,
    );
    for (const r of rules) {
      const used = metricsIn(r.expr);
      assert.ok(used.length > 0, r.alert);
      for (const name of used) assert.ok(documented.has(name), `${r.alert}: ${name} is not in docs/metrics.md`);
      assert.match(r.labels.severity, /^(warning|critical)$/, r.alert);
      assert.ok(r.annotations.summary, r.alert);
    }
    // The alert templates reach Prometheus as they are written, not rendered by helm.
    assert.match(rules[0]!.annotations.summary, /\{\{ \$labels\.peer \}\}/);
    const tuned = renderChart([
      ...operatorApis,
      ...allOn,
      '--set',
      'metrics.prometheusRule.dropsPerSecond=50,metrics.prometheusRule.labels.release=kps',
    ]);
    const tunedRule = tuned.find((o) => o.kind === 'PrometheusRule')!;
    assert.equal(tunedRule.metadata.labels.release, 'kps');
    const tunedDrops = (tunedRule.spec.groups as ChartObject[])
      .flatMap((g) => g.rules as ChartObject[])
      .find((r) => r.alert === 'StraitAgentDropsRising')!;
    assert.match(tunedDrops.expr, / > 50$/);
  });

  it('puts a dashboard in a ConfigMap labelled grafana_dashboard: "1", valid JSON on documented metrics only', () => {
    const [configMap, ...others] = find('ConfigMap').filter((c) => c.metadata.name === 'strait-dashboard');
    assert.equal(others.length, 0);
    assert.equal(configMap!.metadata.labels.grafana_dashboard, '1');
    const dashboard = JSON.parse(configMap!.data['strait.json']);
    assert.equal(dashboard.title, 'Strait');
    const exprs = (dashboard.panels as ChartObject[]).flatMap((p) => (p.targets as ChartObject[]).map((t) => t.expr as string));
    assert.ok(exprs.length >= 8, `${exprs.length} queries`);
    const used = new Set(exprs.flatMap(metricsIn));
    for (const name of used) assert.ok(documented.has(name), `${name} is not in docs/metrics.md`);
    for (const name of ['strait_agent_dropped_packets_total', 'strait_controller_peer_api_up', 'strait_agent_peer_bytes_total'])
      assert.ok(used.has(name), name);
    // A dual-stack peering's traffic per family, as the agent counts it.
    const perPeer = exprs.filter((e) => /strait_agent_peer_/.test(e));
    assert.equal(perPeer.length, 2);
    for (const expr of perPeer) assert.match(expr, /^sum by \(peer, family, direction\) /);
    const ids = (dashboard.panels as ChartObject[]).map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const elsewhere = renderChart([
      '--set',
      'metrics.dashboards.enabled=true,metrics.dashboards.namespace=monitoring,metrics.dashboards.label=dashboards,metrics.dashboards.labelValue=strait',
    ]).find((o) => o.metadata.name === 'strait-dashboard')!;
    assert.equal(elsewhere.metadata.namespace, 'monitoring');
    assert.equal(elsewhere.metadata.labels.dashboards, 'strait');
  });

  it("refuses the operator's kinds where the cluster does not serve them, unless trusted", () => {
    for (const value of ['metrics.serviceMonitor', 'metrics.prometheusRule']) {
      const kind = value.endsWith('serviceMonitor') ? 'ServiceMonitor' : 'PrometheusRule';
      const run = spawnSync(k8sTool('helm'), ['template', 'strait', chartDirectory, '--set', `${value}.enabled=true`], {
        encoding: 'utf8',
      });
      assert.notEqual(run.status, 0, value);
      assert.match(
        run.stderr,
        new RegExp(`${value}\\.enabled: the cluster does not serve monitoring\\.coreos\\.com/v1 ${kind}.*${value}\\.trustCRDsExist=true`),
      );
      assert.equal(
        renderChart(['--set', `${value}.enabled=true,${value}.trustCRDsExist=true`]).filter((o) => o.kind === kind).length > 0,
        true,
        value,
      );
    }
    const run = spawnSync(
      k8sTool('helm'),
      ['template', 'strait', chartDirectory, ...operatorApis, ...allOn, '--set', 'metrics.service.enabled=false'],
      {
        encoding: 'utf8',
      },
    );
    assert.match(
      run.stderr,
      /metrics\.serviceMonitor\.enabled: the ServiceMonitors select the metrics Services: set metrics\.service\.enabled=true/,
    );
  });

  it('passes helm lint --strict with all of them on', () => {
    const lint = execFileSync(
      k8sTool('helm'),
      [
        'lint',
        '--strict',
        chartDirectory,
        ...allOn,
        '--set',
        'metrics.serviceMonitor.trustCRDsExist=true,metrics.prometheusRule.trustCRDsExist=true',
      ],
      { encoding: 'utf8' },
    );
    assert.match(lint, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });
});
