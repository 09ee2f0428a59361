/**
 * The documents of the pool IPAM's plugin/service protocol (src/pool-ipam/protocol.ts): the requests the
 * service reads on its socket, the answers the plugin reads, and the names and switches the plugin takes
 * from the CNI network configuration to forward (cni-network-config-schema.ts). Each field says in its
 * `mustBe` what a refusal of it reads (schema-errors.ts), in the CNI errors' words.
 *
 * The service compiles the requests' validators to drop a key they do not define instead of refusing it
 * (write-validators.ts): during a rolling upgrade the plugin in /opt/cni/bin may be a newer build than the
 * service answering it, and the handler sees the protocol's fields only.
 */
import { type Static, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import {
  absolutePathPattern,
  containerIdPattern,
  interfaceNamePattern,
  interfaceNameWords,
  namespaceNamePattern,
  networkNamePattern,
  objectNamePattern,
} from './cni-names';
import { mustBeKeyword } from './schema-errors';
import { List, Strict } from './schema';

type Options = { description?: string };

/** A value's own refusal reads `must be <words>`. */
export const mustBe = (words: string) => ({ [mustBeKeyword]: words });

export const NetworkName = () =>
  Type.String({
    pattern: networkNamePattern,
    ...mustBe('a CNI network name (letters, digits, "_", "." and "-", starting with a letter or digit)'),
    description: "The CNI network's name (a Multus NetworkAttachmentDefinition's too: pools' `multusName`).",
  });

const PoolName = () => Type.String({ pattern: objectNamePattern, ...mustBe('a pool name (a DNS-1123 subdomain)') });
const PodName = () => Type.String({ pattern: objectNamePattern, ...mustBe('a pod name (a DNS-1123 subdomain)') });
const NamespaceName = () => Type.String({ pattern: namespaceNamePattern, ...mustBe('a namespace name (a DNS-1123 label)') });
export const AbsolutePath = (options: Options = {}) =>
  Type.String({ pattern: absolutePathPattern, ...mustBe('an absolute path'), ...options });
export const ContainerId = () =>
  Type.String({
    pattern: containerIdPattern,
    ...mustBe('a CNI container id (letters, digits, "_", "." and "-", not starting with one of the last three)'),
  });
/** Its characters: the readers check its 15 bytes, which no pattern counts (checkInterfaceNameBytes). */
export const InterfaceName = () => Type.String({ pattern: interfaceNamePattern, ...mustBe(interfaceNameWords) });
export const Flag = (description: string) => Type.Boolean({ ...mustBe('true or false'), description });
export const PoolList = (words: string, description: string) => List(PoolName(), { ...mustBe(words), description });

/** A request's fields (an object whose unknown keys the service's validators drop). */
const Request = <T extends TProperties>(properties: T, options: Options = {}) => Strict(properties, { ...mustBe('an object'), ...options });
const RequestList = <T extends TSchema>(items: T, options: Options = {}) => List(items, { ...mustBe('a list'), ...options });

/** The IPAM section of the network configuration, as the plugin forwards it (checked by both sides). */
const IpamNetworkOptionsSchema = Request({
  defaultIpv4Pools: RequestList(PoolName(), { description: 'Pools tried when no annotation names any (rule 4), in order.' }),
  defaultIpv6Pools: RequestList(PoolName()),
  detectConflict: Flag('ARP/NDP probe for the chosen address before ADD returns; per pool `spec.detectConflict` overrides.'),
  detectGateway: Flag("ARP/NDP probe of the pool's gateway before ADD returns; per pool `spec.detectGateway` overrides."),
});

/** One attachment: what CNI identifies it by (containerId + ifname, within a network name). */
const attachmentFields = { containerId: ContainerId(), ifname: InterfaceName() };

const AttachmentSchema = Request(attachmentFields);

const addFields = {
  ...attachmentFields,
  network: NetworkName(),
  netns: AbsolutePath({ description: 'CNI_NETNS: where the probes are sent from (the interface `ifname` exists there, maybe down).' }),
  podNamespace: NamespaceName(),
  podName: PodName(),
  /** From CNI_ARGS (K8S_POD_UID); absent on old runtimes. */
  podUid: Type.Optional(Type.String({ not: { const: '' }, ...mustBe('a non-empty string') })),
  options: IpamNetworkOptionsSchema,
};

export const AddRequestSchema = Request(addFields);

export const CheckRequestSchema = Request({
  ...addFields,
  prevResultAddresses: Type.Optional(
    RequestList(Type.String(mustBe('a string')), {
      description: 'The `address` of each of `prevResult.ips` (what the runtime holds from ADD); absent without prevResult.',
    }),
  ),
});

export const DelRequestSchema = Request({
  ...attachmentFields,
  network: NetworkName(),
  podNamespace: Type.Optional(NamespaceName()),
  podName: Type.Optional(PodName()),
});

export const GcRequestSchema = Request({
  network: NetworkName(),
  validAttachments: RequestList(AttachmentSchema, {
    description: '`cni.dev/valid-attachments`: every allocation of `network` not listed here is released.',
  }),
});

/*
 * The answers, as the plugin reads them: it needs these fields, and takes more (a newer service may send
 * them) without passing them on.
 */

/** One address given to the attachment: `address` with its prefix length (CNI's ipConfig). */
const AllocatedIpSchema = Type.Object({
  address: Type.String(),
  gateway: Type.Optional(Type.String()),
  pool: Type.String(),
  vlan: Type.Optional(Type.Integer()),
});

const AllocatedRouteSchema = Type.Object({ dst: Type.String(), gw: Type.Optional(Type.String()) });

export const AddResponseSchema = Type.Object({ ips: List(AllocatedIpSchema, { minItems: 1 }), routes: List(AllocatedRouteSchema) });

export const StatusResponseSchema = Type.Object({
  ready: Type.Boolean({ description: 'False while the informers are not synced: STATUS answers code 50 (the plugin is not available).' }),
  message: Type.Optional(Type.String()),
});

/** The body of every non-2xx answer of the service; the plugin prints it as the CNI error. */
export const ErrorResponseSchema = Type.Object({ code: Type.Integer(), msg: Type.String(), details: Type.Optional(Type.String()) });

export type IpamNetworkOptions = Static<typeof IpamNetworkOptionsSchema>;
export type Attachment = Static<typeof AttachmentSchema>;
export type AddRequest = Static<typeof AddRequestSchema>;
export type CheckRequest = Static<typeof CheckRequestSchema>;
export type DelRequest = Static<typeof DelRequestSchema>;
export type GcRequest = Static<typeof GcRequestSchema>;
export type AddResponse = Static<typeof AddResponseSchema>;
/** GC's answer: the addresses it released (the plugin succeeds silently and reads none of it, so it has no validator). */
export interface GcResponse {
  released: string[];
}
export type StatusResponse = Static<typeof StatusResponseSchema>;
export type ErrorResponse = Static<typeof ErrorResponseSchema>;
