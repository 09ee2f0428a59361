/**
 * A Service exported by the standalone control plane (docs/services.md): what a cluster's API server holds
 * of a ServiceExport, its Service and the Service's EndpointSlices, in one run-directory file
 * (`<cluster>/services/<namespace>.<name>.json`, written by whoever stands in for the cluster: the lab).
 * The fields are those the exporter reads (src/services/export-plan.ts), named as Kubernetes names them.
 */
import { type Static, Type } from '@sinclair/typebox';
import { List, Port, Strict, StringEnum } from './schema';

const Protocol = () => StringEnum(['TCP', 'UDP', 'SCTP']);
const dnsLabel = () => Type.String({ format: 'dns-label' });

export const ExportedServiceSchema = Strict({
  namespace: dnsLabel(),
  name: Type.String({ format: 'service-name' }),
  created: Type.String({ format: 'date-time', description: "The ServiceExport's creationTimestamp." }),
  service: Type.Optional(
    Strict(
      {
        type: Type.Optional(StringEnum(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'])),
        clusterIP: Type.Optional(Type.String({ description: 'An address, or None for a headless Service.' })),
        ports: Type.Optional(
          List(
            Strict({
              name: Type.Optional(dnsLabel()),
              protocol: Type.Optional(Protocol()),
              port: Port(),
              appProtocol: Type.Optional(Type.String()),
            }),
            {
              maxItems: 100,
            },
          ),
        ),
        sessionAffinity: Type.Optional(StringEnum(['None', 'ClientIP'])),
        sessionAffinityTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })),
      },
      { description: 'The exported Service; absent: there is none (the export is not valid).' },
    ),
  ),
  endpointSlices: List(
    Strict({
      addressType: StringEnum(['IPv4', 'IPv6', 'FQDN']),
      ports: Type.Optional(
        List(Strict({ name: Type.Optional(dnsLabel()), protocol: Type.Optional(Protocol()), port: Type.Optional(Port()) })),
      ),
      endpoints: List(
        Strict({
          addresses: List(Type.String(), { minItems: 1, maxItems: 100 }),
          conditions: Type.Optional(
            Strict({
              ready: Type.Optional(Type.Boolean()),
              serving: Type.Optional(Type.Boolean()),
              terminating: Type.Optional(Type.Boolean()),
            }),
          ),
          hostname: Type.Optional(dnsLabel()),
          zone: Type.Optional(Type.String()),
        }),
        { maxItems: 1000 },
      ),
    }),
  ),
});

export type ExportedServiceDocument = Static<typeof ExportedServiceSchema>;
