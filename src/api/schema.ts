/**
 * The building blocks of the strait.io schemas (TypeBox: one definition gives the TypeScript type by
 * static inference, the JSON Schema that ajv checks documents against, and the CRD's openAPIV3Schema).
 */
import { type ArrayOptions, type TProperties, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import { tunnelMtuRange } from '../nodespec/tunnel-mtu';
import { maxStandbyGateways } from '../nodespec/spec';
import type { ApiFormatName } from './formats';

type Options = { description?: string };

const formatted = (format: ApiFormatName, description: string, options: Options = {}) =>
  Type.String({ format, description: options.description ?? description });

/** A network, host bits clear (10.0.0.0/16, fd00::/64). */
export const CidrText = (options?: Options) =>
  formatted('cidr', 'An IPv4 or IPv6 network with its host bits clear, like 10.0.0.0/16.', options);
/** An IPv4 or IPv6 address. */
export const IpText = (options?: Options) => formatted('ip', 'An IPv4 or IPv6 address.', options);
export const MacText = (options?: Options) => formatted('mac', 'A MAC address like 02:53:54:00:00:01.', options);
export const ClusterIdText = (options?: Options) => formatted('cluster-id', 'A cluster id: a DNS-1123 label.', options);
export const NodeNameText = (options?: Options) => formatted('node-name', 'A Kubernetes node name.', options);

export const Port = (options: Options = {}) =>
  Type.Integer({ minimum: 1, maximum: 65535, description: options.description ?? 'A UDP or TCP port.' });
/** The cluster's override of the tunnel MTU (src/nodespec/tunnel-mtu.ts): the controller config's `tunnelMTU`, handed on in every NodeDataplane. */
/** A gateway's standbys, where a peer's gateway fails over to when it stops answering probes (docs/liveness.md). */
export const StandbyAddresses = () =>
  List(IpText(), {
    maxItems: maxStandbyGateways,
    description:
      "The owner's standby gateways, in failover order: where the peer's gateway sends once the endpoint stops answering its probes.",
  });

export const TunnelMtu = () =>
  Type.Integer({
    ...tunnelMtuRange,
    description: "MTU of the VXLAN tunnels (encrypted peerings: 30 less). Default: each node's underlay device MTU less 50.",
  });
/**
 * The shortest period of a loop a person configures (reconciles, heartbeats, renewals): more often
 * spends a core's share on nothing (a controller at 1e-9 s took 40% of one).
 */
const shortestPeriodSeconds = 0.05;
/** A period in seconds, from `shortestPeriodSeconds` to an hour. */
export const Seconds = (description: string) => Type.Number({ minimum: shortestPeriodSeconds, maximum: 3600, description });
export const Uint32 = (minimum: number, options: Options = {}) => Type.Integer({ minimum, maximum: 0xffffffff, ...options });

/** One of a few strings: `enum` rather than a union of literals, which a structural CRD schema cannot hold. */
export const StringEnum = <T extends string[]>(values: [...T], options: Options = {}): TUnsafe<T[number]> =>
  Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });

/** An object with exactly these fields (an unknown field is refused: it would be silently ignored). */
export const Strict = <T extends TProperties>(properties: T, options: Options = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });

/** A list (order and uniqueness, where they matter, are checked by the typed conversion). */
export const List = <T extends TSchema>(items: T, options: ArrayOptions = {}) => Type.Array(items, options);

/** A Kubernetes status condition (metav1.Condition): what is or is not so, and why. */
export const Condition = Strict({
  type: Type.String({ minLength: 1, maxLength: 316 }),
  status: StringEnum(['True', 'False', 'Unknown']),
  reason: Type.String({ pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$', maxLength: 1024 }),
  message: Type.String({ maxLength: 32768 }),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
});

/**
 * The Kubernetes extensions a schema here may carry for the API server (server-side apply merges such a
 * list by its keys); the documents' validators ignore them.
 */
export const kubernetesSchemaKeywords = ['x-kubernetes-list-type', 'x-kubernetes-list-map-keys'];

/** Conditions, one per type: a list map keyed by `type`, as metav1.Condition lists are declared. */
export const Conditions = () =>
  List(Condition, {
    description: 'What is or is not so, and why (one per type).',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });
