/**
 * The Helm chart's values (helm/strait/values.yaml), as a schema: `npm run build:crds` writes it to
 * helm/strait/values.schema.json, which Helm checks on every install, upgrade, lint and template. The
 * settings the chart hands to the binaries take their schemas from the binaries' own documents
 * (ControllerConfigSchema), so a value Helm accepts is one the controller reads. Free-form Kubernetes
 * blocks (resources, affinity, tolerations, probes) are checked by the API server, not here.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { dataplanes } from './dataplane';
import { ControllerConfigSchema } from './controller-config-schema';
import { apiFormats, type ApiFormatName } from './formats';
import { List, Port, Seconds, StringEnum, Strict } from './schema';

const config = ControllerConfigSchema.properties;
const Free = (description: string) => Type.Object({}, { description });
const FreeList = (description: string) => List(Type.Object({}), { description });
/** A setting that may be left empty (""). */
const OrEmpty = (schema: TSchema) => Type.Union([Type.Literal(''), schema]);
const Probe = Strict({
  failureThreshold: Type.Integer({ minimum: 1 }),
  periodSeconds: Type.Integer({ minimum: 1 }),
});
const ServiceAccount = Strict({ create: Type.Boolean(), name: Type.String(), annotations: Free('Annotations.') });
const Capability = Type.String({ pattern: '^[A-Z_]+$' });
/** An absolute path on the host, of plain characters (the plugin's launcher names it in a shell script). */
const HostPath = (description: string, options: object = {}) => Type.String({ pattern: '^(/[A-Za-z0-9._-]+)+$', description, ...options });

const component = {
  metricsPort: Port({ description: 'The port of /metrics, /healthz and /readyz.' }),
  priorityClassName: Type.String(),
  tolerations: FreeList('Tolerations.'),
  nodeSelector: Type.Record(Type.String(), Type.String()),
  resources: Free('Resource requests and limits.'),
  livenessProbe: Probe,
  readinessProbe: Probe,
  podAnnotations: Type.Record(Type.String(), Type.String()),
  podLabels: Type.Record(Type.String(), Type.String()),
  extraArgs: List(Type.String()),
  extraEnv: FreeList('Extra environment variables (EnvVar objects).'),
  extraVolumes: FreeList('Extra volumes of the Pod (Volume objects).'),
  extraVolumeMounts: FreeList('Extra volume mounts of the container (VolumeMount objects).'),
  extraInitContainers: FreeList('Extra init containers (Container objects).'),
  affinity: Free('Affinity.'),
  podSecurityContext: Free("The Pod's securityContext (a PodSecurityContext)."),
};
/** A PodDisruptionBudget's maxUnavailable or minAvailable: a number of Pods or a percentage. */
const IntOrPercent = [Type.Integer({ minimum: 0 }), Type.String({ pattern: '^[0-9]+%$' })];

const ChartValuesSchema = Strict({
  nameOverride: Type.String(),
  fullnameOverride: Type.String(),
  commonLabels: Type.Record(Type.String(), Type.String()),
  image: Strict({
    repository: Type.String({ minLength: 1 }),
    tag: Type.String(),
    digest: OrEmpty(Type.String({ pattern: '^sha256:[0-9a-f]{64}$' })),
    pullPolicy: StringEnum(['Always', 'IfNotPresent', 'Never']),
  }),
  imagePullSecrets: List(Type.String()),
  cluster: Strict({
    id: config.clusterId,
    podCIDR: config.podCIDR,
    externalCIDR: config.externalCIDR,
    serviceCIDR: OrEmpty(config.serviceCIDR),
    // {}: single-stack.
    secondary: Type.Union([Strict({}), config.secondary]),
    reserved: List(config.reserved.items),
    pools: List(config.pools.items),
    tunnelMTU: OrEmpty(config.tunnelMTU),
  }),
  peers: List(config.peers.items),
  reflections: List(config.reflections.items),
  // Empty: the controller's default; not merged with it, so a selector of one's own replaces it whole.
  gatewayNodeSelector: { ...config.gatewayNodeSelector, minProperties: 0 },
  dataplane: StringEnum(['auto', ...dataplanes]),
  encryption: Strict({ enabled: Type.Boolean(), secretName: Type.String({ minLength: 1 }) }),
  poolIpam: Strict({
    enabled: Type.Boolean(),
    // Not directly in /: its directory is mounted from the host.
    socket: HostPath('The unix socket strait-ipam calls.', { pattern: '^(/[A-Za-z0-9._-]+){2,}$' }),
    cniBinDir: HostPath("The host's CNI plugin directory."),
    // The image keeps its own files in /opt/strait: the init container mounts this at the same path.
    runtimeDir: HostPath("Where the plugin's runtime goes on the host.", { not: { pattern: '^/opt/strait(/|$)' } }),
    netnsDir: HostPath("The host's directory of pod network namespaces."),
    capabilities: List(Capability),
    gcIntervalSeconds: Type.Number({ exclusiveMinimum: 0, maximum: 86_400, description: 'Seconds between garbage collection scans.' }),
  }),
  metrics: Strict({
    bindAddress: OrEmpty(Type.String({ format: 'ip' })),
    service: Strict({ enabled: Type.Boolean(), annotations: Type.Record(Type.String(), Type.String()) }),
    serviceMonitor: Strict({
      enabled: Type.Boolean(),
      trustCRDsExist: Type.Boolean(),
      labels: Type.Record(Type.String(), Type.String()),
      interval: OrEmpty(Type.String({ pattern: '^([0-9]+(ms|s|m|h))+$', description: 'A Prometheus duration, like 30s.' })),
    }),
    prometheusRule: Strict({
      enabled: Type.Boolean(),
      trustCRDsExist: Type.Boolean(),
      labels: Type.Record(Type.String(), Type.String()),
      dropsPerSecond: Type.Number({ minimum: 0, description: 'Drops per second and reason before StraitAgentDropsRising fires.' }),
    }),
    dashboards: Strict({
      enabled: Type.Boolean(),
      namespace: Type.String(),
      label: Type.String({ minLength: 1 }),
      labelValue: Type.String(),
      annotations: Type.Record(Type.String(), Type.String()),
    }),
  }),
  serviceAccounts: Strict({ agent: ServiceAccount, controller: ServiceAccount }),
  rbac: Strict({ create: Type.Boolean() }),
  crds: Strict({ install: Type.Boolean(), keep: Type.Boolean() }),
  admissionPolicies: Strict({ enabled: Type.Boolean() }),
  agent: Strict({
    ...component,
    interval: Seconds('Seconds between reconciles and heartbeats.'),
    attach: StringEnum(['auto', 'tcx', 'clsact']),
    podInterfaces: Type.String({ minLength: 1 }),
    statusRefresh: Seconds(
      'Seconds after which an unchanged status is written anyway (the kubelet reports an unchanged node status every 5 minutes).',
    ),
    gatewayProbes: Strict({
      interval: Type.Number({
        minimum: 0,
        description: 'Seconds between two probes to each gateway candidate; 0 turns the probes (and local failover) off.',
      }),
      multiplier: Type.Integer({ minimum: 1, maximum: 255, description: 'Probes unanswered before a gateway candidate counts as down.' }),
    }),
    pinRoot: Type.String({ pattern: '^/sys/fs/bpf(/.*)?$' }),
    capabilities: List(Capability),
    terminationGracePeriodSeconds: Type.Integer({ minimum: 0 }),
    updateStrategy: Free('The DaemonSet update strategy.'),
    startupProbe: Probe,
  }),
  controller: Strict({
    ...component,
    replicas: Type.Integer({ minimum: 1 }),
    interval: config.interval,
    heartbeatTimeout: config.heartbeatTimeout,
    // Checked whole by the controller as client-go checks them (leaseDuration > renewDeadline > 1.2 × retryPeriod).
    leaderElection: Strict({
      leaseDuration: Type.Integer({ minimum: 1, description: 'Seconds a standby waits for a silent leader (client-go: 15).' }),
      renewDeadline: Seconds('Seconds a leader leads without renewing its Lease (client-go: 10).'),
      retryPeriod: Seconds('Seconds between two attempts to acquire or renew the Lease (client-go: 2).'),
    }),
    podDisruptionBudget: Strict({
      enabled: Type.Boolean(),
      maxUnavailable: Type.Union(IntOrPercent),
      // null in values.yaml (helm lint checks it as written); the templates see no key (helm drops nulls).
      minAvailable: Type.Optional(Type.Union([Type.Null(), ...IntOrPercent], { description: 'When set, replaces maxUnavailable.' })),
    }),
  }),
});

type JsonSchema = Record<string, unknown>;

/**
 * Stricter than the CRDs' shapes (where the API server's own `cidr` and `ip` formats check the rest):
 * Helm's validator knows no such format, so an IPv4 address is four octets of 0-255 and a prefix is at
 * most 32 (IPv6: 128). Host bits are beyond a pattern: the binaries refuse those when they start.
 */
const octet = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const ipv4 = `${octet}(\\.${octet}){3}`;
const ipv6 = '[0-9a-fA-F:.]*:[0-9a-fA-F:.]*';
const chartPatterns: Partial<Record<ApiFormatName, string>> = {
  cidr: `^(${ipv4}/(3[0-2]|[12]?[0-9])|${ipv6}/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$`,
  ip: `^(${ipv4}|${ipv6})$`,
};

/**
 * The JSON Schema Helm reads: Strait's own string formats become their patterns (Helm's validator does
 * not know them), `$id`-free and plain.
 */
export function chartValuesJsonSchema(): JsonSchema {
  const plain = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(plain);
    if (node === null || typeof node !== 'object') return node;
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'format' && value in apiFormats) {
        const format = value as ApiFormatName;
        out.pattern = chartPatterns[format] ?? apiFormats[format].pattern;
      } else out[key] = plain(value);
    }
    return out;
  };
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'Strait chart values',
    ...(plain(JSON.parse(JSON.stringify(ChartValuesSchema))) as JsonSchema),
  };
}
