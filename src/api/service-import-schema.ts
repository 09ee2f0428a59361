/**
 * A Service imported by the standalone control plane (docs/services.md): what a ServiceImport, its
 * derived Service's cluster IPs and its EndpointSlices hold on Kubernetes, in one run-directory file
 * (`<cluster>/imports/<namespace>.<name>.json`, written by the cluster's controller, read by its service
 * proxy: the lab's).
 */
import { type Static, Type } from '@sinclair/typebox';
import { ClusterIdText, IpText, List, Port, Strict, StringEnum } from './schema';

const Protocol = () => StringEnum(['TCP', 'UDP', 'SCTP']);
const dnsLabel = () => Type.String({ format: 'dns-label' });

export const ServiceImportSchema = Strict({
  namespace: dnsLabel(),
  name: Type.String({ format: 'service-name' }),
  type: StringEnum(['ClusterSetIP', 'Headless']),
  ips: List(IpText(), { maxItems: 2, description: 'The ClusterSetIPs, one per family of the cluster (none for Headless).' }),
  ports: List(Strict({ name: Type.Optional(dnsLabel()), protocol: Protocol(), port: Port(), appProtocol: Type.Optional(Type.String()) })),
  sessionAffinity: StringEnum(['None', 'ClientIP']),
  sessionAffinityTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })),
  clusters: List(ClusterIdText()),
  endpointSlices: List(
    Strict({
      name: Type.String({ minLength: 1, maxLength: 253 }),
      cluster: ClusterIdText(),
      addressType: StringEnum(['IPv4', 'IPv6']),
      ports: List(Strict({ name: Type.Optional(dnsLabel()), protocol: Protocol(), port: Port() })),
      endpoints: List(
        Strict({
          address: IpText(),
          ready: Type.Boolean(),
          serving: Type.Boolean(),
          terminating: Type.Boolean(),
          hostname: Type.Optional(dnsLabel()),
          zone: Type.Optional(Type.String()),
        }),
      ),
    }),
  ),
});

export type ServiceImportDocument = Static<typeof ServiceImportSchema>;
