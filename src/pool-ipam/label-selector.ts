/**
 * metav1.LabelSelector as Kubernetes evaluates it (LabelSelectorAsSelector): every matchLabels pair and
 * every expression must hold; NotIn and DoesNotExist hold when the key is absent; an empty selector
 * selects everything. Pools' nodeAffinity, namespaceAffinity and podAffinity are these.
 */
import { InputError } from '../errors';
import type { LabelSelector } from './model';

type Requirement = NonNullable<LabelSelector['matchExpressions']>[number];

function holds(req: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const present = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case 'In':
      return present && (req.values ?? []).includes(labels[req.key]!);
    case 'NotIn':
      return !present || !(req.values ?? []).includes(labels[req.key]!);
    case 'Exists':
      return present;
    case 'DoesNotExist':
      return !present;
  }
}

export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const pairs = Object.entries(selector.matchLabels ?? {});
  return (
    pairs.every(([key, value]) => Object.hasOwn(labels, key) && labels[key] === value) &&
    (selector.matchExpressions ?? []).every((req) => holds(req, labels))
  );
}

/** Kubernetes' text form (`kubectl get -l`): "app=web,tier in (a,b),!canary"; "<everything>" when empty. */
export function formatSelector(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const req of selector.matchExpressions ?? []) {
    const values = `(${(req.values ?? []).join(',')})`;
    if (req.operator === 'In') parts.push(`${req.key} in ${values}`);
    else if (req.operator === 'NotIn') parts.push(`${req.key} notin ${values}`);
    else if (req.operator === 'Exists') parts.push(req.key);
    else parts.push(`!${req.key}`);
  }
  return parts.length === 0 ? '<everything>' : parts.join(',');
}

const namePart = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a label key ("prefix/name", the prefix a DNS subdomain), or undefined. */
function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !dnsSubdomain.test(prefix)))
    return `the key prefix "${prefix}" is not a DNS subdomain`;
  if (name.length > 63 || !namePart.test(name))
    return `the key name "${name}" must be 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`;
  return undefined;
}

function labelValueProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'a label value is a string';
  if (value !== '' && (value.length > 63 || !namePart.test(value)))
    return `"${value}" is not a label value (0-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit)`;
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const operators = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

/** Checks a selector as the API server would, naming the failing field (`spec.nodeAffinity.matchExpressions[1].values`). */
export function parseLabelSelector(field: string, value: unknown): LabelSelector {
  if (!isObject(value)) throw new InputError(field, value, 'expected a label selector object (matchLabels, matchExpressions)');
  for (const key of Object.keys(value)) {
    if (key !== 'matchLabels' && key !== 'matchExpressions')
      throw new InputError(`${field}.${key}`, value[key], 'unknown field (a label selector has matchLabels and matchExpressions)');
  }
  const selector: LabelSelector = {};
  if (value.matchLabels !== undefined) {
    const labels = value.matchLabels;
    if (!isObject(labels)) throw new InputError(`${field}.matchLabels`, labels, 'expected an object of label keys to values');
    for (const [key, v] of Object.entries(labels)) {
      const problem = labelKeyProblem(key) ?? labelValueProblem(v);
      if (problem) throw new InputError(`${field}.matchLabels`, labels, problem);
    }
    selector.matchLabels = { ...(labels as Record<string, string>) };
  }
  if (value.matchExpressions !== undefined) {
    const list = value.matchExpressions;
    if (!Array.isArray(list)) throw new InputError(`${field}.matchExpressions`, list, 'expected a list of {key, operator, values}');
    selector.matchExpressions = list.map((req: unknown, i) => {
      const at = `${field}.matchExpressions[${i}]`;
      if (!isObject(req)) throw new InputError(at, req, 'expected {key, operator, values}');
      const keyProblem = typeof req.key === 'string' ? labelKeyProblem(req.key) : 'expected a label key string';
      if (keyProblem) throw new InputError(`${at}.key`, req.key, keyProblem);
      const operator = req.operator;
      if (!operators.includes(operator as Requirement['operator']))
        throw new InputError(`${at}.operator`, operator, 'expected In, NotIn, Exists or DoesNotExist');
      const op = operator as Requirement['operator'];
      if (op === 'In' || op === 'NotIn') {
        if (!Array.isArray(req.values) || req.values.length === 0)
          throw new InputError(`${at}.values`, req.values, `${op} needs a non-empty list of values`);
        for (const v of req.values) {
          const problem = labelValueProblem(v);
          if (problem) throw new InputError(`${at}.values`, req.values, problem);
        }
        return { key: req.key as string, operator: op, values: [...(req.values as string[])] };
      }
      if (req.values !== undefined && !(Array.isArray(req.values) && req.values.length === 0)) {
        throw new InputError(`${at}.values`, req.values, `${op} takes no values`);
      }
      return { key: req.key as string, operator: op };
    });
  }
  return selector;
}
