/**
 * What kube-apiserver's Service registry sets before it validates a Service
 * (pkg/registry/core/service/storage/alloc.go, strategy.go), on a single-stack IPv4 cluster with the
 * default --service-cluster-ip-range 10.96.0.0/12: the IP family fields, and a cluster IP from the range
 * that no other Service holds (10.96.0.1 is the `kubernetes` Service's), or the one asked for if it is
 * free and in the range. An update keeps the cluster IP a body leaves out (kubectl replace, helm). Node
 * ports are not allocated here: a NodePort or LoadBalancer Service keeps the ports it was given.
 */
import { randomInt } from 'node:crypto';
import { type KubeObject, isRecord } from './kube-object';
import { type StatusCause, invalid } from './status';
import type { Store } from './store';
import { invalidValue } from './validation';

const range = { base: (10 << 24) | (96 << 16), size: 1 << 20, text: '10.96.0.0/12' };
/** The `kubernetes` Service's address, the range's first. */
const apiServerAddress = '10.96.0.1';

const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const isIp = (text: string) => ipv4.test(text) || (text.includes(':') && /^[0-9A-Fa-f:.]+$/.test(text));
const toNumber = (ip: string) => ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
const toText = (n: number) => [24, 16, 8, 0].map((shift) => (n >>> shift) & 255).join('.');
/** A Go []string as %#v prints it, as field.Error writes a bad clusterIPs value. */
const goStrings = (values: string[]) => `[]string{${values.map((v) => JSON.stringify(v)).join(', ')}}`;

/** The cluster IPs every other Service holds. */
function clusterIPsInUse(store: Store, service: KubeObject): Set<string> {
  const others = store
    .list('services')
    .filter((s) => s.metadata.namespace !== service.metadata.namespace || s.metadata.name !== service.metadata.name);
  return new Set([apiServerAddress, ...others.flatMap((s) => strings(record(s.spec).clusterIPs))]);
}

/**
 * strategy.go patchAllocatedValues: the cluster IPs the stored Service was given that an update's body
 * leaves out; and its ipFamilyPolicy (initIPFamilyFields adopts the old one).
 */
function keepAllocated(spec: Record<string, unknown>, current: Record<string, unknown>): void {
  if (spec.type === 'ExternalName' || current.type === 'ExternalName') return;
  if (!spec.clusterIP && current.clusterIP) spec.clusterIP = current.clusterIP;
  if (strings(spec.clusterIPs).length === 0 && strings(current.clusterIPs).length > 0) spec.clusterIPs = current.clusterIPs;
  spec.ipFamilyPolicy ??= current.ipFamilyPolicy;
}

/** alloc.go initIPFamilyFields on a single-stack IPv4 cluster: the policy and families, or what the cluster cannot serve. */
function ipFamilyFields(spec: Record<string, unknown>): StatusCause[] {
  const headlessSelectorless = spec.clusterIP === 'None' && Object.keys(record(spec.selector)).length === 0;
  spec.ipFamilyPolicy ??= headlessSelectorless ? 'RequireDualStack' : 'SingleStack';
  const families = strings(spec.ipFamilies);
  if (headlessSelectorless) {
    // The one case a single-stack cluster tolerates two families (validation allows it).
    if (families.length === 0) families.push('IPv4');
    if (families.length < 2 && spec.ipFamilyPolicy !== 'SingleStack') families.push(families[0] === 'IPv4' ? 'IPv6' : 'IPv4');
    spec.ipFamilies = families;
    return [];
  }
  const causes: StatusCause[] = [];
  if (spec.ipFamilyPolicy === 'RequireDualStack')
    causes.push(invalidValue('spec.ipFamilyPolicy', spec.ipFamilyPolicy, 'this cluster is not configured for dual-stack services'));
  families.forEach((family, i) => {
    if (family !== 'IPv4') causes.push(invalidValue(`spec.ipFamilies[${i}]`, family, 'not configured on this cluster'));
  });
  spec.ipFamilies = families.length > 0 ? families : ['IPv4'];
  return causes;
}

/** alloc.go allocIPs: the asked-for cluster IP if it is free and in the range, else any free one. */
function allocateClusterIP(spec: Record<string, unknown>, inUse: Set<string>, kept: boolean): StatusCause[] {
  const asked = strings(spec.clusterIPs)[0];
  if (asked === 'None') return [];
  if (asked === undefined) {
    let ip: string;
    do ip = toText(range.base + 1 + randomInt(range.size - 2));
    while (inUse.has(ip));
    spec.clusterIP = ip;
    spec.clusterIPs = [ip];
    return [];
  }
  if (kept) return [];
  const offset = ipv4.test(asked) ? toNumber(asked) - range.base : -1;
  const why =
    offset <= 0 || offset >= range.size - 1
      ? `the provided IP (${asked}) is not in the valid range. The range of valid IPs is ${range.text}`
      : inUse.has(asked)
        ? 'provided IP is already allocated'
        : undefined;
  if (!why) return [];
  const message = `Invalid value: ${goStrings(strings(spec.clusterIPs))}: failed to allocate IP ${asked}: ${why}`;
  return [{ reason: 'FieldValueInvalid', message, field: 'spec.clusterIPs' }];
}

/**
 * The Service registry's allocation (beginCreate, beginUpdate): the 422 it answers (before any
 * validation) when the cluster cannot give what is asked.
 */
export function allocateService(service: KubeObject, store: Store, current?: KubeObject): void {
  const spec = record(service.spec);
  service.spec = spec;
  if (current) keepAllocated(spec, record(current.spec));
  if (spec.type === 'ExternalName') return;
  // strategy.go normalizeClusterIPs: clusterIPs follows clusterIP.
  if (typeof spec.clusterIP === 'string' && spec.clusterIP !== '' && strings(spec.clusterIPs).length === 0)
    spec.clusterIPs = [spec.clusterIP];
  const ips = strings(spec.clusterIPs);
  const malformed = ips.flatMap((ip, i) =>
    ip === 'None' || isIp(ip)
      ? []
      : [invalidValue(`spec.clusterIPs[${i}]`, ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')],
  );
  const causes = malformed.length > 0 ? malformed : ipFamilyFields(spec);
  const kept = current !== undefined && ips[0] !== undefined && strings(record(current.spec).clusterIPs)[0] === ips[0];
  if (causes.length === 0) causes.push(...allocateClusterIP(spec, clusterIPsInUse(store, service), kept));
  if (causes.length > 0) throw invalid('Service', '', service.metadata.name, causes);
}
