/**
 * The patch formats clients send: JSON merge patch (RFC 7386: kubectl apply for custom resources,
 * `kubectl patch --type merge`), JSON patch (RFC 6902: @kubernetes/client-node's default for its patch
 * calls) and, for built-in kinds only, strategic merge patch. The last is applied as a merge patch: the
 * same for maps and scalars (kubectl apply's patch of a changed ConfigMap key or pod-template
 * annotation), but not for what needs the kind's schema (lists merged by key, as a Pod's containers).
 * kubectl writes such a change with directives (`$setElementOrder/containers`, `$patch: delete`...),
 * and a patch carrying one is refused rather than misapplied as a merge patch would.
 */
import { jsonKind } from './go-json';
import { isRecord } from './kube-object';
import { ApiError, badRequest } from './status';

/** `apply`: server-side apply (apply-patch.ts, managed-fields.ts), not a patch of this file. */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

/** Sets a key as JSON has it, own, whatever its name: `__proto__` is a key like any other, not the prototype. */
const setOwn = (object: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const result: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else setOwn(result, key, mergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value));
  }
  return result;
}

/** Keys of a strategic merge patch that only a schema-aware merge can honour. */
const directive = (key: string) =>
  key === '$patch' || key === '$retainKeys' || key.startsWith('$setElementOrder/') || key.startsWith('$deleteFromPrimitiveList/');

/** The first strategic-merge directive in `patch` and where it is (`spec.template.spec`), or undefined. */
export function strategicDirective(patch: unknown, at = ''): { key: string; field: string } | undefined {
  if (Array.isArray(patch)) {
    for (const [i, item] of patch.entries()) {
      const found = strategicDirective(item, `${at}[${i}]`);
      if (found) return found;
    }
  } else if (isRecord(patch)) {
    for (const [key, value] of Object.entries(patch)) {
      if (directive(key)) return { key, field: at };
      const found = strategicDirective(value, at === '' ? key : `${at}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/'))
    throw badRequest(`the server rejected our request due to an error in our request: invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

const unprocessable = (message: string) => new ApiError(422, 'Invalid', message);

/** The container `parts` (all but the last) names in `doc`, and the last part. */
function locate(doc: unknown, parts: string[]): [Record<string, unknown> | unknown[], string] {
  let at = doc;
  for (const part of parts.slice(0, -1)) {
    at = Array.isArray(at) ? at[Number(part)] : isRecord(at) && Object.hasOwn(at, part) ? at[part] : undefined;
    if (at === undefined)
      throw unprocessable(`the server rejected our request due to an error in our request: doc is missing path: /${parts.join('/')}`);
  }
  if (!Array.isArray(at) && !isRecord(at))
    throw unprocessable(`the server rejected our request due to an error in our request: doc is missing path: /${parts.join('/')}`);
  return [at, parts[parts.length - 1]!];
}

function read(doc: unknown, path: string): unknown {
  const [container, last] = locate(doc, pointer(path));
  const value = Array.isArray(container) ? container[Number(last)] : Object.hasOwn(container, last) ? container[last] : undefined;
  if (value === undefined)
    throw unprocessable(`the server rejected our request due to an error in our request: doc is missing key: ${path}`);
  return value;
}

function remove(doc: unknown, path: string): unknown {
  const value = read(doc, path);
  const [container, last] = locate(doc, pointer(path));
  if (Array.isArray(container)) container.splice(Number(last), 1);
  else delete container[last];
  return value;
}

function add(doc: unknown, path: string, value: unknown, replace: boolean): unknown {
  const parts = pointer(path);
  if (parts.length === 0) return value;
  const [container, last] = locate(doc, parts);
  if (Array.isArray(container)) {
    const index = last === '-' ? container.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > container.length)
      throw unprocessable(`the server rejected our request due to an error in our request: index out of bounds: ${path}`);
    container.splice(index, replace ? 1 : 0, value);
  } else {
    setOwn(container, last, value);
  }
  return doc;
}

/** An operation as json-patch decodes it: an object (else the decoder's 400; null is no operation, 422), its op, path and from strings (else 422). */
function operation(value: unknown): Operation {
  if (value === null) throw unprocessable('the server rejected our request due to an error in our request: Unexpected kind: unknown');
  if (!isRecord(value)) throw badRequest(`json: cannot unmarshal ${jsonKind(value)} into Go value of type jsonpatch.Operation`);
  for (const field of ['op', 'path', 'from'] as const) {
    if (value[field] !== undefined && typeof value[field] !== 'string')
      throw unprocessable(`the server rejected our request due to an error in our request: ${field} of an operation is not a string`);
  }
  if (value.path === undefined)
    throw unprocessable(
      `the server rejected our request due to an error in our request: ${String(value.op ?? 'an')} operation missing path`,
    );
  return value as unknown as Operation;
}

/** `doc` (a copy the caller owns) after the RFC 6902 operations of `patch`. */
export function jsonPatch(doc: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch))
    throw badRequest('the server rejected our request due to an error in our request: a JSON patch is a list of operations');
  for (const op of patch.map(operation)) {
    switch (op.op) {
      case 'add':
        doc = add(doc, op.path, structuredClone(op.value), false);
        break;
      case 'replace':
        read(doc, op.path);
        doc =
          pointer(op.path).length === 0
            ? structuredClone(op.value)
            : add(doc, op.path, structuredClone(op.value), Array.isArray(locate(doc, pointer(op.path))[0]));
        break;
      case 'remove':
        remove(doc, op.path);
        break;
      case 'move':
        doc = add(doc, op.path, remove(doc, op.from ?? ''), false);
        break;
      case 'copy':
        doc = add(doc, op.path, structuredClone(read(doc, op.from ?? '')), false);
        break;
      case 'test':
        if (JSON.stringify(read(doc, op.path)) !== JSON.stringify(op.value)) {
          throw unprocessable(`the server rejected our request due to an error in our request: testing value ${op.path} failed`);
        }
        break;
      default:
        throw badRequest(`the server rejected our request due to an error in our request: unexpected operation ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}
