/**
 * The validators of the strait.io documents, compiled from their schemas (the *-schema.ts modules and
 * the resources' definitions) at build time: `npm run build:ts` runs write-validators.ts, which writes
 * them as ajv standalone code to generated-validators/ next to this module, a module each. So no process
 * loads TypeBox or ajv's compiler to check a document: in an emulated VM the two took seconds of every
 * start.
 */
import type { ValidateFunction } from 'ajv';
import type { CniNetworkConfigDocument, CniPrevResult, CniValidAttachments } from './cni-network-config-schema';
import type { ControllerConfigDocument } from './controller-config-schema';
import type { ControllerStatus, Reflection } from './controller-status-schema';
import type { ClusterNetworksSpec, NatMappingSpec, PeerNetworksSpec } from './ipam-objects';
import type { IpamStateDocument } from './ipam-state';
import type { NetworkConfigSpec, NetworkConfigStatus } from './network-config-schema';
import type { NodeDataplaneObjectDocument, NodeDataplaneSpecDocument, NodeDataplaneStatus } from './node-dataplane-resource';
import type {
  AddRequest,
  AddResponse,
  CheckRequest,
  DelRequest,
  ErrorResponse,
  GcRequest,
  StatusResponse,
} from './pool-ipam-protocol-schema';
import { checkWith } from './schema-errors';
import type { ServiceOfferSpec, ServiceOfferStatus } from './service-offer-schema';
import type { ExportedServiceDocument } from './exported-service-schema';
import type { ServiceImportDocument } from './service-import-schema';
import type { StraitGatewaySpecDocument } from './strait-gateway-schema';
import type { TunnelEndpointSpecDocument } from './tunnel-endpoint-schema';

/** Each validator by name, with the type of the documents it accepts (its schema's static type). */
export interface ValidatorTypes {
  nodeDataplaneSpec: NodeDataplaneSpecDocument;
  nodeDataplaneObject: NodeDataplaneObjectDocument;
  nodeDataplaneStatus: NodeDataplaneStatus;
  networkConfigSpec: NetworkConfigSpec;
  networkConfigStatus: NetworkConfigStatus;
  tunnelEndpointSpec: TunnelEndpointSpecDocument;
  serviceOfferSpec: ServiceOfferSpec;
  serviceOfferStatus: ServiceOfferStatus;
  exportedService: ExportedServiceDocument;
  serviceImport: ServiceImportDocument;
  straitGatewaySpec: StraitGatewaySpecDocument;
  controllerConfig: ControllerConfigDocument;
  controllerStatus: ControllerStatus;
  reflections: Reflection[];
  ipamState: IpamStateDocument;
  clusterNetworksSpec: ClusterNetworksSpec;
  peerNetworksSpec: PeerNetworksSpec;
  natMappingSpec: NatMappingSpec;
  cniNetworkConfig: CniNetworkConfigDocument;
  cniPrevResult: CniPrevResult;
  cniValidAttachments: CniValidAttachments;
  poolIpamAddRequest: AddRequest;
  poolIpamCheckRequest: CheckRequest;
  poolIpamDelRequest: DelRequest;
  poolIpamGcRequest: GcRequest;
  poolIpamAddResponse: AddResponse;
  poolIpamStatusResponse: StatusResponse;
  poolIpamErrorResponse: ErrorResponse;
}

export type CompiledValidatorName = keyof ValidatorTypes;

/**
 * Checks by the validators the build generated, each loaded by `load` (a plain require: the files are not
 * TypeScript, and the build step that writes them loads the modules using them) at its first check. A
 * check returns `value` typed as its validator's documents, or throws an InputError naming the first
 * problem (its field under `root`) and changes nothing.
 */
export function compiledChecker<Types>(load: (name: keyof Types & string) => ValidateFunction) {
  const validators = new Map<keyof Types, ValidateFunction>();
  return <N extends keyof Types & string>(name: N, value: unknown, root = ''): Types[N] => {
    let validate = validators.get(name);
    if (validate === undefined) validators.set(name, (validate = load(name)));
    return checkWith<Types[N]>(validate, value, root);
  };
}

export const checkCompiled = compiledChecker<ValidatorTypes>((name) => require(`./generated-validators/${name}.js`));
