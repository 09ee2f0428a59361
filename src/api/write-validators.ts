/**
 * The build step after tsc (`npm run build:ts`): compiles the schemas of the strait.io documents with ajv
 * into standalone code, a module per validator in dist/src/api/generated-validators/, which
 * compiled-validators.ts loads. The lab compiles its own schemas the same way (lab/src/write-validators.ts).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import Ajv, { _, type Options } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import { CniNetworkConfigSchema, CniPrevResultSchema, CniValidAttachmentsSchema } from './cni-network-config-schema';
import type { CompiledValidatorName } from './compiled-validators';
import { ControllerConfigSchema } from './controller-config-schema';
import { ControllerStatusSchema, ReflectionListSchema } from './controller-status-schema';
import { ClusterNetworksSpecSchema, NatMappingSpecSchema, PeerNetworksSpecSchema } from './ipam-objects';
import { IpamStateSchema } from './ipam-state';
import { NetworkConfigSpecSchema, NetworkConfigStatusSchema } from './network-config-schema';
import { NodeDataplaneObjectSchema, NodeDataplaneSpecSchema, NodeDataplaneStatusSchema } from './node-dataplane-resource';
import {
  AddRequestSchema,
  AddResponseSchema,
  CheckRequestSchema,
  DelRequestSchema,
  ErrorResponseSchema,
  GcRequestSchema,
  StatusResponseSchema,
} from './pool-ipam-protocol-schema';
import { mustBeKeyword } from './schema-errors';
import { kubernetesSchemaKeywords } from './schema';
import { ServiceOfferSpecSchema, ServiceOfferStatusSchema } from './service-offer-schema';
import { ExportedServiceSchema } from './exported-service-schema';
import { ServiceImportSchema } from './service-import-schema';
import { StraitGatewaySpecSchema } from './strait-gateway-schema';
import { TunnelEndpointSpecSchema } from './tunnel-endpoint-schema';
import { validatorFormats } from './validator-formats';

/**
 * How every document is checked (and how a test compiles a schema to compare): the first problem only,
 * with `verbose`, as the messages (schema-errors.ts) read the failing schema and value from each error;
 * `mustBe` is the annotation of a schema's own words for a refusal.
 */
export const documentValidatorOptions: Options = {
  allErrors: false,
  verbose: true,
  strict: true,
  formats: validatorFormats,
  keywords: [mustBeKeyword, ...kubernetesSchemaKeywords],
};

/**
 * How the requests on the pool IPAM's socket are checked: a key their schema does not define is dropped
 * (`removeAdditional`), not refused. During a rolling upgrade the plugin may be a newer build than the
 * service, and the handler sees the protocol's fields only.
 */
export const droppingUnknownKeysOptions: Options = { ...documentValidatorOptions, removeAdditional: true };

export const documentSchemas: Record<CompiledValidatorName, TSchema> = {
  nodeDataplaneSpec: NodeDataplaneSpecSchema,
  nodeDataplaneObject: NodeDataplaneObjectSchema,
  nodeDataplaneStatus: NodeDataplaneStatusSchema,
  networkConfigSpec: NetworkConfigSpecSchema,
  networkConfigStatus: NetworkConfigStatusSchema,
  tunnelEndpointSpec: TunnelEndpointSpecSchema,
  serviceOfferSpec: ServiceOfferSpecSchema,
  serviceOfferStatus: ServiceOfferStatusSchema,
  exportedService: ExportedServiceSchema,
  serviceImport: ServiceImportSchema,
  straitGatewaySpec: StraitGatewaySpecSchema,
  controllerConfig: ControllerConfigSchema,
  controllerStatus: ControllerStatusSchema,
  reflections: ReflectionListSchema,
  ipamState: IpamStateSchema,
  clusterNetworksSpec: ClusterNetworksSpecSchema,
  peerNetworksSpec: PeerNetworksSpecSchema,
  natMappingSpec: NatMappingSpecSchema,
  cniNetworkConfig: CniNetworkConfigSchema,
  cniPrevResult: CniPrevResultSchema,
  cniValidAttachments: CniValidAttachmentsSchema,
  poolIpamAddRequest: AddRequestSchema,
  poolIpamCheckRequest: CheckRequestSchema,
  poolIpamDelRequest: DelRequestSchema,
  poolIpamGcRequest: GcRequestSchema,
  poolIpamAddResponse: AddResponseSchema,
  poolIpamStatusResponse: StatusResponseSchema,
  poolIpamErrorResponse: ErrorResponseSchema,
};

const compiledWith: Partial<Record<CompiledValidatorName, Options>> = {
  poolIpamAddRequest: droppingUnknownKeysOptions,
  poolIpamCheckRequest: droppingUnknownKeysOptions,
  poolIpamDelRequest: droppingUnknownKeysOptions,
  poolIpamGcRequest: droppingUnknownKeysOptions,
};

/** The options each validator is compiled with. */
export const documentValidatorOptionsOf = (name: CompiledValidatorName): Options => compiledWith[name] ?? documentValidatorOptions;

/** The formats' definitions as generated code finds them: `require(module)[name]`, `module` relative to that code. */
export interface FormatsExport {
  module: string;
  name: string;
}

const standaloneAjv = (options: Options, formats: FormatsExport) =>
  new Ajv({ ...options, code: { source: true, formats: _`require(${formats.module})[${formats.name}]` } });

const header = (source: string) => `// Generated from ${source} by \`npm run build:ts\`: do not edit.\n`;

/** The text of one module exporting a validator per schema, by name: for a process that checks with all of them. */
export function validatorsModule(options: Options, formats: FormatsExport, schemas: Record<string, object>, source: string): string {
  const ajv = standaloneAjv(options, formats);
  for (const [name, schema] of Object.entries(schemas)) ajv.addSchema(schema, name);
  return header(source) + standaloneCode(ajv, Object.fromEntries(Object.keys(schemas).map((name) => [name, name])));
}

/**
 * Writes `directory` anew: a module per schema, `<name>.js`, exporting its validator, so that a process
 * loads only the validators it checks with (an agent the NodeDataplane's, not all the documents').
 */
export function writeValidatorModules(
  directory: string,
  options: Options | ((name: string) => Options),
  formats: FormatsExport,
  schemas: Record<string, object>,
  source: string,
): void {
  rmSync(directory, { recursive: true, force: true });
  mkdirSync(directory);
  for (const [name, schema] of Object.entries(schemas)) {
    const ajv = standaloneAjv(typeof options === 'function' ? options(name) : options, formats);
    writeFileSync(join(directory, `${name}.js`), header(source) + standaloneCode(ajv, ajv.compile(schema)));
  }
}

if (require.main === module) {
  writeValidatorModules(
    join(__dirname, 'generated-validators'),
    (name) => documentValidatorOptionsOf(name as CompiledValidatorName),
    { module: '../validator-formats', name: 'validatorFormats' },
    documentSchemas,
    'the schemas of src/api (src/api/write-validators.ts)',
  );
}
