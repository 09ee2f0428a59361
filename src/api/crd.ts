/**
 * A resource's CustomResourceDefinition (apiextensions.k8s.io/v1), generated from its schemas: the
 * openAPIV3Schema is made structural (every node typed, no additionalProperties beside properties, only
 * value validations under anyOf) and speaks OpenAPI 3.0 (boolean exclusiveMinimum, formats the API
 * server knows; Strait's own formats become patterns).
 */
import type { TSchema } from '@sinclair/typebox';
import { type ApiFormat, type ApiFormatName, apiFormats } from './formats';
import type { ResourceDefinition } from './resource';
import { group, version } from './resource-names';

type JsonSchema = Record<string, unknown>;

/** Formats the API server checks itself (k8s.io/kube-openapi/pkg/validation/strfmt), used as they are. */
const kubernetesFormats = new Set(['date-time', 'cidr', 'mac', 'ipv4', 'ipv6', 'hostname', 'uuid', 'byte']);

function structural(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    switch (key) {
      case 'additionalProperties':
        // Unknown fields are pruned by the API server; `false` beside `properties` is not structural.
        if (typeof value === 'object') out[key] = structural(value as JsonSchema);
        break;
      case 'patternProperties': {
        // TypeBox's Record of string keys: a map, which a structural schema spells additionalProperties.
        const patterns = Object.entries(value as Record<string, JsonSchema>);
        if (patterns.length !== 1 || patterns[0]![0] !== '^(.*)$')
          throw new Error(`a CRD schema cannot hold patternProperties ${Object.keys(value as object).join(', ')}`);
        out.additionalProperties = structural(patterns[0]![1]);
        break;
      }
      case 'properties':
        out[key] = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([k, v]) => [k, structural(v)]));
        break;
      case 'items':
        out[key] = structural(value as JsonSchema);
        break;
      case 'anyOf': {
        // A union of one type: the type goes up, the branches keep only their value validations.
        const branches = (value as JsonSchema[]).map(structural);
        const types = new Set(branches.map((b) => b.type));
        if (types.size !== 1) throw new Error(`a CRD schema cannot hold a union of types ${[...types].join(', ')}`);
        out.type = [...types][0];
        out.anyOf = branches.map(({ type: _type, description: _description, ...validations }) => validations);
        break;
      }
      case 'const':
        out.type ??= typeof value;
        out.enum = [value];
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
        out[key] = true;
        break;
      case 'format': {
        const own: ApiFormat | undefined = apiFormats[value as ApiFormatName];
        if (own) {
          out.pattern = own.pattern;
          if (own.kubernetesFormat) out.format = own.kubernetesFormat;
        } else if (kubernetesFormats.has(value as string)) {
          out.format = value;
        }
        break;
      }
      default:
        out[key] = value;
    }
  }
  return out;
}

/** The resource's CRD as a plain object (ready for YAML). */
export function customResourceDefinition(resource: ResourceDefinition<TSchema, TSchema | undefined>): JsonSchema {
  const plain = (schema: TSchema) => structural(JSON.parse(JSON.stringify(schema)) as JsonSchema);
  const singular = resource.kind.toLowerCase();
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${resource.plural}.${group}`, labels: { 'app.kubernetes.io/part-of': 'strait' } },
    spec: {
      group,
      names: {
        kind: resource.kind,
        listKind: `${resource.kind}List`,
        plural: resource.plural,
        singular,
        shortNames: resource.shortNames,
        categories: ['strait'],
      },
      scope: resource.scope ?? 'Cluster',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          ...(resource.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: [...resource.columns, { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }],
          schema: {
            openAPIV3Schema: {
              description: resource.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: plain(resource.spec),
                ...(resource.status ? { status: plain(resource.status) } : {}),
              },
            },
          },
        },
      ],
    },
  };
}
