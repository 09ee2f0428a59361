/**
 * Label and field selectors of list and watch requests (`labelSelector=app=x,tier in (a,b),!canary`,
 * `fieldSelector=metadata.name=n1`), with the real semantics: `!=` and `notin` also match an object
 * without the label; the fields every resource supports are metadata.name and metadata.namespace, some
 * kinds add their own (a Pod's spec.nodeName); any other is a 400. And the LabelSelector objects of
 * specs (a workload's, an admission policy's namespaceSelector).
 */
import { type KubeObject, isRecord } from './kube-object';
import { badRequest } from './status';

export type Selector = (object: KubeObject) => boolean;

const everything: Selector = () => true;

/** `a,b in (x,y),c` → its requirements (commas inside parentheses belong to a set). */
function requirements(text: string): string[] {
  return (text.match(/([^,(]|\([^)]*\))+/g) ?? []).map((r) => r.trim()).filter((r) => r !== '');
}

const key = '[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?';
const value = '[-A-Za-z0-9_.]*';

/** An object's label `k`, undefined when it has none (its own labels only: `constructor` is no label). */
const label = (o: KubeObject, k: string): string | undefined => {
  const labels = o.metadata.labels ?? {};
  return Object.hasOwn(labels, k) ? labels[k] : undefined;
};

function labelRequirement(text: string): Selector {
  let m = new RegExp(`^(!?)\\s*(${key})$`).exec(text);
  if (m) {
    const [, not, k] = m;
    return not ? (o) => label(o, k!) === undefined : (o) => label(o, k!) !== undefined;
  }
  m = new RegExp(`^(${key})\\s*(==|=|!=)\\s*(${value})$`).exec(text);
  if (m) {
    const [, k, , op, v] = m;
    return op === '!=' ? (o) => label(o, k!) !== v : (o) => label(o, k!) === v;
  }
  m = new RegExp(`^(${key})\\s+(in|notin)\\s*\\(([^)]*)\\)$`).exec(text);
  if (m) {
    const [, k, , op, list] = m;
    const values = new Set(list!.split(',').map((v) => v.trim()));
    return op === 'in' ? (o) => values.has(label(o, k!) ?? '\0absent') : (o) => !values.has(label(o, k!) ?? '\0absent');
  }
  throw badRequest(`unable to parse requirement: ${JSON.stringify(text)}`);
}

export function labelSelector(text: string | null): Selector {
  if (!text) return everything;
  const all = requirements(text).map(labelRequirement);
  return (o) => all.every((matches) => matches(o));
}

const fields: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata.name,
  'metadata.namespace': (o) => o.metadata.namespace ?? '',
};

/** One term of a field selector: `field=value` (`==` is the same) or `field!=value`. */
export interface FieldTerm {
  field: string;
  equal: boolean;
  value: string;
}

/** Go's sort.Strings order: by UTF-8 bytes. */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * A field selector's terms as apimachinery's fields.ParseSelector reads them (pkg/fields/selector.go,
 * unchanged from 1.11 to 1.34): split at the commas no backslash escapes (splitTerms), sorted as strings,
 * empty ones skipped; each split at its first operator, `!=`, `==` then `=` tried at each position
 * (splitTerm), nothing trimmed (` metadata.name=x` is the field ` metadata.name`); the value unescaped
 * (`\\`, `\,`, `\=`), any other escape or a bare `,` or `=` in it an error (UnescapeValue). Throws the
 * 400 kube-apiserver answers with the decoder's error.
 */
export function fieldTerms(text: string): FieldTerm[] {
  const parts: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts
    .sort(byBytes)
    .filter((part) => part !== '')
    .map((part) => {
      let at = -1;
      let op = '';
      for (let i = 0; i < part.length && at < 0; i++) {
        op = ['!=', '==', '='].find((o) => part.startsWith(o, i)) ?? '';
        if (op) at = i;
      }
      if (at < 0) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
      return { field: part.slice(0, at), equal: op !== '!=', value: unescapeFieldValue(part.slice(at + op.length)) };
    });
}

function unescapeFieldValue(text: string): string {
  let value = '';
  let inSlash = false;
  for (const c of text) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') throw badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      value += c;
      inSlash = false;
    } else if (c === '\\') inSlash = true;
    // Go prints the rune with %v: its number.
    else if (c === ',' || c === '=') throw badRequest(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    else value += c;
  }
  if (inSlash) throw badRequest('invalid field selector: invalid escape sequence: \\');
  return value;
}

/** A field selector on metadata.name, metadata.namespace and the kind's own `extra` fields. */
export function fieldSelector(text: string | null, extra: Record<string, (o: KubeObject) => string> = {}): Selector {
  if (!text) return everything;
  const all = fieldTerms(text).map(({ field, equal, value }): Selector => {
    const read = Object.hasOwn(fields, field) ? fields[field] : Object.hasOwn(extra, field) ? extra[field] : undefined;
    if (!read) throw badRequest(`field label not supported: ${field}`);
    return equal ? (o) => read(o) === value : (o) => read(o) !== value;
  });
  return (o) => all.every((matches) => matches(o));
}

/** Whether a metav1.LabelSelector object (matchLabels, matchExpressions; empty: everything) selects `labels`. */
export function selectorSelects(selector: Record<string, unknown>, labels: Record<string, unknown>): boolean {
  const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
  for (const [key, value] of Object.entries(record(selector.matchLabels)))
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  const expressions = Array.isArray(selector.matchExpressions) ? selector.matchExpressions.filter(isRecord) : [];
  return expressions.every(({ key, operator, values }) => {
    const has = typeof key === 'string' && Object.hasOwn(labels, key);
    const among = Array.isArray(values) && values.includes(labels[key as string]);
    return operator === 'In' ? has && among : operator === 'NotIn' ? !has || !among : operator === 'Exists' ? has : !has;
  });
}
