/**
 * A request's body decoded where kube-apiserver's handlers decode it (handlers/create.go, update.go,
 * patch.go, delete.go), and refused as they refuse it: first its Content-Type (negotiation.go: none is
 * JSON; a type the server does not read is 415 UnsupportedMediaType, `the body of the request was in an
 * unknown format - accepted media types include: ...`, listing what this server reads: JSON, and protobuf
 * for the kinds helm sends so (protobuf.ts), where kube also reads YAML and protobuf for every built-in),
 * then its JSON, with Go's syntax error (go-json.ts) in a 400 BadRequest worded as each handler words
 * it. (A GET's body is never read: server.ts drains it.)
 *
 * One limit is this server's own: JSON nested deeper than 1,000 levels is refused as Go refuses it past
 * 10,000 (`invalid character '{' exceeded max depth`), as JavaScript's recursion (structuredClone,
 * JSON.stringify) fails on objects a few thousand deep. No Kubernetes object is nested near that.
 */
import { goJsonSyntaxError } from './go-json';
import type { PatchType } from './patch';
import { decodeProtobuf, protobufKinds, protobufMediaType } from './protobuf';
import { ApiError, badRequest } from './status';

const json = 'application/json';

/** How deep a body's JSON may nest here (Go's decoder: 10,000). */
const maxDepth = 1_000;

/** The media type of a Content-Type header, lowercased, without parameters ('' when there is none). */
const mediaType = (header: string | undefined) => (header ?? '').split(';')[0]!.trim().toLowerCase();

const unsupportedMediaType = (accepted: readonly string[]) =>
  new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );

/** Go's json.Unmarshal of `body`, its syntax error worded by `refuse`. */
function parse(body: Buffer, refuse: (error: string) => string): unknown {
  const error = goJsonSyntaxError(body, maxDepth);
  if (error !== undefined) throw badRequest(refuse(error));
  return JSON.parse(body.toString('utf8')) as unknown;
}

/** The start of a body, as apiserver's summarizeData quotes it in a decode error: text if an object, else hex. */
function summary(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  const head = body.subarray(0, 30);
  const text = body[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return body.length > 30 ? `${text} ...` : text;
}

/** How a body is encoded: JSON, or Kubernetes' protobuf envelope (./protobuf.ts). */
export type BodyFormat = 'json' | 'protobuf';

/** The media types this server reads a body of `kind` in: JSON, and protobuf for the kinds ./protobuf.ts knows. */
const readable = (kind: string) => (protobufKinds.has(kind) ? [json, protobufMediaType] : [json]);

/**
 * A body's format from its Content-Type (none is JSON), or 415 (checked before the body is read). The real
 * server also reads YAML, and protobuf for every built-in kind: a body it reads and this server does not
 * is refused here, named by the 415's list, never taken for something else.
 */
export function bodyFormat(contentType: string | undefined, kind: string): BodyFormat {
  const type = mediaType(contentType);
  if (type === '' || type === json) return 'json';
  if (type === protobufMediaType && protobufKinds.has(kind)) return 'protobuf';
  throw unsupportedMediaType(readable(kind));
}

/** The object of a create or an update of `kind`. */
export function decodeObject(body: Buffer, kind: string, format: BodyFormat): unknown {
  if (format === 'protobuf') {
    const decoded = decodeProtobuf(body, kind);
    if ('error' in decoded) throw badRequest(`the object provided is unrecognized (must be of type ${kind}): ${decoded.error}`);
    return decoded.object;
  }
  return parse(
    body,
    (error) =>
      `the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: ${error} (${summary(body)})`,
  );
}

/** A DELETE's DeleteOptions: undefined without a body (its Content-Type then unread). */
export function decodeDeleteOptions(body: Buffer, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  if (bodyFormat(contentType, 'DeleteOptions') === 'protobuf') {
    const decoded = decodeProtobuf(body, 'DeleteOptions');
    if ('error' in decoded) throw badRequest(decoded.error);
    return decoded.object;
  }
  return parse(body, (error) => `couldn't get version/kind; json parse error: ${error}`);
}

const patchMediaTypes: Record<PatchType, string> = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** The patch type a PATCH's Content-Type names among `accepted`, or 415 (checked before the body is read). */
export function patchTypeOf(contentType: string | undefined, accepted: readonly PatchType[]): PatchType {
  const type = accepted.find((t) => patchMediaTypes[t] === mediaType(contentType));
  if (!type) throw unsupportedMediaType(accepted.map((t) => patchMediaTypes[t]));
  return type;
}

/** A PATCH's patch (but an apply's, which is YAML: apply-patch.ts). */
export const decodePatch = (body: Buffer): unknown => parse(body, (error) => error);
