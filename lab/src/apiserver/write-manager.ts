/**
 * Who a write is by, for metadata.managedFields, and the write options that name it, checked as
 * kube-apiserver checks them (apimachinery pkg/apis/meta/v1/validation: ValidateCreateOptions,
 * ValidateUpdateOptions, ValidatePatchOptions, ValidateFieldManager): `fieldManager` at most 128 bytes
 * of printable characters, required for an apply; `force` only for an apply. A refusal is a 422 Invalid
 * of the options kind (`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is
 * required for apply patch`). Without `fieldManager`, the manager is the User-Agent's product, the part
 * before its first '/' (handlers/rest.go prefixFromUserAgent): `kubectl`, `helm`, `node-fetch`.
 */
import type { PatchType } from './patch';
import { ApiError, type StatusCause, badRequest } from './status';

const fieldManagerMaxLength = 128;

export type WriteOptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions';

/** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const printable = (c: string) => c === ' ' || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(c);

/** Go's %#U of an unprintable rune: `U+0009`. */
const goRune = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

function fieldManagerCauses(manager: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (Buffer.byteLength(manager) > fieldManagerMaxLength)
    causes.push({
      reason: 'FieldValueTooLong',
      message: `Too long: may not be more than ${fieldManagerMaxLength} bytes`,
      field: 'fieldManager',
    });
  let at = 0;
  for (const c of manager) {
    if (!printable(c))
      causes.push({
        reason: 'FieldValueInvalid',
        message: `Invalid value: ${JSON.stringify(manager)}: invalid character ${goRune(c)} (at position ${at})`,
        field: 'fieldManager',
      });
    at += Buffer.byteLength(c);
  }
  return causes;
}

/** strconv.ParseBool, as the parameter codec reads `force`. */
function parseBool(text: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  throw badRequest(`strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`);
}

function invalidOptions(kind: WriteOptionsKind, causes: StatusCause[]): ApiError {
  const listed = causes.map((c) => `${c.field}: ${c.message}`);
  const what = listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${kind}.meta.k8s.io "" is invalid: ${what}`, { group: 'meta.k8s.io', kind, causes });
}

/** The part of a User-Agent before its first '/', without unprintable characters, cut at 128 bytes. */
function userAgentProduct(userAgent: string | undefined): string {
  let product = '';
  for (const c of (userAgent ?? '').split('/')[0]!) {
    if (!printable(c)) continue;
    if (Buffer.byteLength(product + c) > fieldManagerMaxLength) break;
    product += c;
  }
  return product;
}

export interface WriteManager {
  /** The manager the write's fields go to. */
  fieldManager: string;
  /** An apply's `force`: take the fields other managers own. */
  force: boolean;
}

/** The manager and force of a write, or the 422 of options the real server refuses. */
export function writeManager(
  query: URLSearchParams,
  userAgent: string | undefined,
  kind: WriteOptionsKind,
  patchType?: PatchType,
): WriteManager {
  const given = query.get('fieldManager') ?? '';
  const forceText = query.get('force');
  const force = kind === 'PatchOptions' && forceText !== null ? parseBool(forceText) : undefined;
  const causes: StatusCause[] = [];
  if (kind === 'PatchOptions' && patchType !== 'apply' && force !== undefined)
    causes.push({ reason: 'FieldValueForbidden', message: 'Forbidden: may not be specified for non-apply patch', field: 'force' });
  if (patchType === 'apply' && given === '')
    causes.push({ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' });
  causes.push(...fieldManagerCauses(given));
  if (causes.length > 0) throw invalidOptions(kind, causes);
  return { fieldManager: given || userAgentProduct(userAgent), force: force ?? false };
}
