/**
 * Kubernetes' protobuf encoding of the bodies clients send that way: helm's release Secrets and the
 * DeleteOptions of its deletes (client-go's typed clients, which helm configures for protobuf). The
 * envelope is the 4 bytes `k8s\0` and a runtime.Unknown holding the type and the object's own message
 * (k8s.io/apimachinery/pkg/runtime/serializer/protobuf). The messages are those of k8s.io/api and
 * k8s.io/apimachinery's generated.proto (release-1.31), limited to the kinds decoded here; a body becomes
 * the JSON object the same request would have sent.
 */
import protobuf from 'protobufjs';
import { isRecord } from './kube-object';

const schema = `
syntax = "proto2";
package k8s;
message Unknown { optional TypeMeta typeMeta = 1; optional bytes raw = 2; optional string contentEncoding = 3; optional string contentType = 4; }
message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
message Time { optional int64 seconds = 1; optional int32 nanos = 2; }
message OwnerReference {
  optional string kind = 1; optional string name = 3; optional string uid = 4; optional string apiVersion = 5;
  optional bool controller = 6; optional bool blockOwnerDeletion = 7;
}
message ManagedFieldsEntry {
  optional string manager = 1; optional string operation = 2; optional string apiVersion = 3; optional Time time = 4;
  optional string fieldsType = 6; optional FieldsV1 fieldsV1 = 7; optional string subresource = 8;
}
message FieldsV1 { optional bytes Raw = 1; }
message ObjectMeta {
  optional string name = 1; optional string generateName = 2; optional string namespace = 3; optional string selfLink = 4;
  optional string uid = 5; optional string resourceVersion = 6; optional int64 generation = 7;
  optional Time creationTimestamp = 8; optional Time deletionTimestamp = 9; optional int64 deletionGracePeriodSeconds = 10;
  map<string, string> labels = 11; map<string, string> annotations = 12; repeated OwnerReference ownerReferences = 13;
  repeated string finalizers = 14; repeated ManagedFieldsEntry managedFields = 17;
}
message Secret {
  optional ObjectMeta metadata = 1; optional bool immutable = 5; map<string, bytes> data = 2;
  map<string, string> stringData = 4; optional string type = 3;
}
message Preconditions { optional string uid = 1; optional string resourceVersion = 2; }
message DeleteOptions {
  optional int64 gracePeriodSeconds = 1; optional Preconditions preconditions = 2; optional bool orphanDependents = 3;
  optional string propagationPolicy = 4; repeated string dryRun = 5;
}
`;

export const protobufMediaType = 'application/vnd.kubernetes.protobuf';

const magic = Buffer.from('k8s\0', 'latin1');
const root = protobuf.parse(schema).root;
const message = (name: string) => root.lookupType(`k8s.${name}`);

/** The kinds whose protobuf bodies this server reads. */
export const protobufKinds = new Set(['Secret', 'DeleteOptions']);

/** A `Time` ({seconds, nanos}) as the RFC 3339 text JSON carries (metav1.Time has second precision). */
const rfc3339 = (time: { seconds?: number }) => new Date((time.seconds ?? 0) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** protobufjs' plain object of a message, with Kubernetes' JSON forms where they differ (times, FieldsV1). */
function jsonForm(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => jsonForm(v, key));
  if (!isRecord(value)) return value;
  if (/Timestamp$|^time$/.test(key)) return rfc3339(value as { seconds?: number });
  if (key === 'fieldsV1') return JSON.parse(Buffer.from(String(value.Raw ?? ''), 'base64').toString('utf8') || '{}') as unknown;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonForm(v, k)]));
}

/** Why a protobuf body cannot be read (the message the real server's decoder would give), or its object. */
export function decodeProtobuf(body: Buffer, kind: string): { object: Record<string, unknown> } | { error: string } {
  if (!body.subarray(0, 4).equals(magic))
    return { error: 'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]' };
  let envelope: Record<string, unknown>;
  let object: Record<string, unknown>;
  try {
    const unknown = message('Unknown');
    envelope = unknown.toObject(unknown.decode(body.subarray(4)), { bytes: Buffer }) as Record<string, unknown>;
    const type = message(kind);
    object = type.toObject(type.decode((envelope.raw as Buffer | undefined) ?? Buffer.alloc(0)), { longs: Number, bytes: String });
  } catch (err) {
    return { error: (err as Error).message };
  }
  const typeMeta = isRecord(envelope.typeMeta) ? envelope.typeMeta : {};
  if (typeMeta.kind !== undefined && typeMeta.kind !== kind) return { error: `the body holds a ${String(typeMeta.kind)}, not a ${kind}` };
  return {
    object: {
      ...(typeMeta.apiVersion ? { apiVersion: typeMeta.apiVersion } : {}),
      ...(typeMeta.kind ? { kind: typeMeta.kind } : {}),
      ...(jsonForm(object) as Record<string, unknown>),
    },
  };
}

/** `object` (one of protobufKinds) in the envelope a client sends: what tests send as helm does. */
export function encodeProtobuf(object: Record<string, unknown>): Buffer {
  const { apiVersion, kind, ...rest } = object as { apiVersion?: string; kind: string };
  const type = message(kind);
  const raw = type.encode(type.fromObject(rest)).finish();
  const envelope = message('Unknown');
  return Buffer.concat([magic, envelope.encode(envelope.fromObject({ typeMeta: { apiVersion, kind }, raw })).finish()]);
}
