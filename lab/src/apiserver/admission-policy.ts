/**
 * Validating admission policies, as kube-apiserver's ValidatingAdmissionPolicy plugin runs them
 * (k8s.io/apiserver/pkg/admission/plugin/policy/validating: dispatcher.go, validator.go; matching in
 * policy/generic and predicates/rules): on each create, update (also of status, and the result of a
 * patch) and delete, once the object is defaulted and valid and before it is stored, every stored
 * ValidatingAdmissionPolicy whose matchConstraints match the request is evaluated for each of its
 * bindings that match too: matchConditions (any false: skipped), then the validations, in CEL
 * (cel.ts) over `object` (null on DELETE), `oldObject` (null on CREATE), `request` (the AdmissionRequest
 * as unstructured JSON), `namespaceObject`, `params` (null: paramKind is not supported here, and a policy
 * with one fails as a configuration error) and `variables`. A validation that fails is acted on as
 * the binding says: Deny refuses the request (the first denial, 422 Invalid unless its `reason` says
 * otherwise), Warn adds a Warning header, Audit does nothing here (no audit log). An expression
 * that errors is a denial under failurePolicy Fail (the default), ignored under Ignore.
 */
import { randomUUID } from 'node:crypto';
import type { CelInput } from '@bufbuild/cel';
import type { UserInfo } from './authentication';
import { LazyVariables, celValue, evaluate } from './cel';
import { type KubeObject, isRecord } from './kube-object';
import { type ResourceType, groupResource } from './resource-types';
import { selectorSelects } from './selectors';
import { ApiError } from './status';
import type { Store } from './store';

type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

/** A write as admission sees it (admission.Attributes). */
export interface AdmissionRequest {
  operation: Operation;
  type: ResourceType;
  /** `status`, or '' for the object itself. */
  subresource: string;
  namespace: string | undefined;
  /** The object as it would be stored: undefined on DELETE. */
  object: KubeObject | undefined;
  /** The stored object: undefined on CREATE. */
  oldObject: KubeObject | undefined;
  user: UserInfo;
  dryRun: boolean;
}

const policiesResource = 'validatingadmissionpolicies.admissionregistration.k8s.io';
const bindingsResource = 'validatingadmissionpolicybindings.admissionregistration.k8s.io';

const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
const records = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);
const byName = (a: KubeObject, b: KubeObject) => a.metadata.name.localeCompare(b.metadata.name);

/**
 * A RuleWithOperations' `resources` entry against the request's resource and subresource (rules.go):
 * `x` is x itself, `x/status` its status, `*` every resource (not their subresources), a `*` after
 * the slash every subresource.
 */
function resourceMatches(entry: string, resource: string, subresource: string): boolean {
  const [res, sub = ''] = entry.split('/', 2) as [string, string?];
  return (res === '*' || res === resource) && (sub === '*' || sub === subresource);
}

/** A NamedRuleWithOperations of matchConstraints or matchResources (predicates/rules/rules.go). */
function ruleMatches(rule: Record<string, unknown>, request: AdmissionRequest, name: string): boolean {
  const { type } = request;
  const among = (values: string[], value: string) => values.includes('*') || values.includes(value);
  const scope = typeof rule.scope === 'string' ? rule.scope : '*';
  const names = strings(rule.resourceNames);
  return (
    among(strings(rule.operations), request.operation) &&
    among(strings(rule.apiGroups), type.group) &&
    among(strings(rule.apiVersions), type.version) &&
    strings(rule.resources).some((r) => resourceMatches(r, type.plural, request.subresource)) &&
    (scope === '*' || (scope === 'Namespaced') === type.namespaced) &&
    (names.length === 0 || names.includes(name))
  );
}

export class AdmissionPolicies {
  constructor(private readonly store: Store) {}

  /**
   * Runs the policies on `request`: the warnings of its Warn bindings, or the ApiError of the first
   * denial (dispatcher.go: `ValidatingAdmissionPolicy 'P' with binding 'B' denied request: MESSAGE`).
   */
  admit(request: AdmissionRequest): string[] {
    const policies = this.store.list(policiesResource).sort(byName);
    if (policies.length === 0) return [];
    const bindings = this.store.list(bindingsResource).sort(byName);
    const name = (request.object ?? request.oldObject)?.metadata.name ?? '';
    const warnings: string[] = [];
    for (const policy of policies) {
      const spec = record(policy.spec);
      if (!this.matches(record(spec.matchConstraints), request, name)) continue;
      const failClosed = spec.failurePolicy !== 'Ignore';
      for (const binding of bindings.filter((b) => record(b.spec).policyName === policy.metadata.name)) {
        const bindingSpec = record(binding.spec);
        if (isRecord(bindingSpec.matchResources) && !this.matches(bindingSpec.matchResources, request, name)) continue;
        const deny = (message: string, reason = 'Invalid') => {
          const text = `ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: ${message}`;
          return denial(request, name, text, reason);
        };
        if (spec.paramKind !== undefined && spec.paramKind !== null) {
          // A configuration error (dispatcher.go addConfigError), under the failure policy.
          if (failClosed) throw deny('failed to configure binding: paramKind is not supported by this API server');
          continue;
        }
        for (const failure of this.failures(spec, request)) {
          if (failure.error && !failClosed) continue;
          const actions = strings(bindingSpec.validationActions);
          if (actions.includes('Deny')) throw deny(failure.message, failure.reason);
          if (actions.includes('Warn'))
            warnings.push(
              `Validation failed for ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}': ${failure.message}`,
            );
        }
      }
    }
    return warnings;
  }

  /** Whether matchConstraints (or a binding's matchResources) select the request (policy/generic matcher.go). */
  private matches(criteria: Record<string, unknown>, request: AdmissionRequest, name: string): boolean {
    if (!this.namespaceSelected(record(criteria.namespaceSelector), request)) return false;
    const selector = record(criteria.objectSelector);
    const labelsOf = (o: KubeObject | undefined) => record(o?.metadata.labels);
    if (!selectorSelects(selector, labelsOf(request.object)) && !selectorSelects(selector, labelsOf(request.oldObject))) return false;
    if (records(criteria.excludeResourceRules).some((r) => ruleMatches(r, request, name))) return false;
    // No resourceRules: no constraint (a binding's matchResources may leave them to its policy's).
    const rules = records(criteria.resourceRules);
    return rules.length === 0 || rules.some((r) => ruleMatches(r, request, name));
  }

  /**
   * namespace/matcher.go: a namespaced object by its namespace's labels, a Namespace by its own; any
   * other cluster-scoped object is always selected.
   */
  private namespaceSelected(selector: Record<string, unknown>, request: AdmissionRequest): boolean {
    const { type } = request;
    if (type.group === '' && type.kind === 'Namespace') {
      const namespace = request.object ?? request.oldObject;
      return selectorSelects(selector, record(namespace?.metadata.labels));
    }
    if (!type.namespaced) return true;
    const namespace = this.store.get('namespaces', undefined, request.namespace ?? '');
    return selectorSelects(selector, record(namespace?.metadata.labels));
  }

  /** The validations that failed (or errored) for one binding, after its matchConditions (validator.go). */
  private failures(spec: Record<string, unknown>, request: AdmissionRequest): { message: string; reason: string; error: boolean }[] {
    const namespace = request.type.namespaced ? this.store.get('namespaces', undefined, request.namespace ?? '') : undefined;
    const activation: Record<string, CelInput> = {
      object: celValue(request.object ?? null),
      oldObject: celValue(request.oldObject ?? null),
      request: celValue(admissionRequest(request)),
      namespaceObject: celValue(namespace ?? null),
      params: null,
    };
    const variables = records(spec.variables).map((v) => ({ name: String(v.name), expression: String(v.expression) }));
    activation.variables = new LazyVariables(variables, () => activation) as ReadonlyMap<string, CelInput>;

    // matchConditions (matchconditions/matcher.go): any false skips the policy, even if others erred.
    const errors: string[] = [];
    for (const condition of records(spec.matchConditions)) {
      const result = evaluate(String(condition.expression), activation);
      if ('error' in result) errors.push(`expression '${String(condition.expression)}' resulted in error: ${result.error}`);
      else if (result.value !== true) return [];
    }
    if (errors.length > 0)
      return [{ message: errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`, reason: 'Invalid', error: true }];

    const failures: { message: string; reason: string; error: boolean }[] = [];
    for (const validation of records(spec.validations)) {
      const expression = String(validation.expression);
      const result = evaluate(expression, activation);
      if ('error' in result) {
        failures.push({ message: `expression '${expression}' resulted in error: ${result.error}`, reason: 'Invalid', error: true });
        continue;
      }
      if (result.value === true) continue;
      failures.push({ message: failureMessage(validation, activation), reason: String(validation.reason ?? 'Invalid'), error: false });
    }
    return failures;
  }
}

/**
 * A failed validation's message (validator.go): its messageExpression's value if that is a string of one
 * line, else its message, else `failed expression: <expression>`.
 */
function failureMessage(validation: Record<string, unknown>, activation: Record<string, CelInput>): string {
  if (typeof validation.messageExpression === 'string') {
    const result = evaluate(validation.messageExpression, activation);
    if ('value' in result && typeof result.value === 'string') {
      const message = result.value.trim();
      if (message !== '' && !message.includes('\n')) return message;
    }
  }
  if (typeof validation.message === 'string' && validation.message.trim() !== '') return validation.message.trim();
  return `failed expression: ${String(validation.expression).trim()}`;
}

/**
 * The AdmissionRequest CEL's `request` is (cel.CreateAdmissionRequest), as unstructured JSON: fields
 * tagged omitempty (subResource, namespace, the user's uid, groups and extra) absent when empty.
 */
function admissionRequest(request: AdmissionRequest): Record<string, unknown> {
  const { type, user } = request;
  const kind = { group: type.group, version: type.version, kind: type.kind };
  const resource = { group: type.group, version: type.version, resource: type.plural };
  const subResource = request.subresource ? { subResource: request.subresource } : {};
  const options = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions' }[request.operation];
  const name = (request.object ?? request.oldObject)?.metadata.name ?? '';
  return {
    uid: randomUUID(),
    kind,
    resource,
    ...subResource,
    requestKind: kind,
    requestResource: resource,
    ...(request.subresource ? { requestSubResource: request.subresource } : {}),
    ...(name ? { name } : {}),
    ...(request.namespace ? { namespace: request.namespace } : {}),
    operation: request.operation,
    userInfo: {
      username: user.name,
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.groups.length > 0 ? { groups: user.groups } : {}),
      ...(user.extra && Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}),
    },
    dryRun: request.dryRun,
    options: { apiVersion: 'meta.k8s.io/v1', kind: options },
  };
}

/**
 * admission.NewForbidden with the decision's reason and its code (dispatcher.go reasonToCode: Forbidden
 * 403, Unauthorized 401, RequestEntityTooLarge 413, anything else 422): `nodedataplanes.strait.io "n1"
 * is forbidden: MESSAGE`, the message also as the one cause.
 */
function denial(request: AdmissionRequest, name: string, message: string, reason: string): ApiError {
  const codes: Record<string, number> = { Forbidden: 403, Unauthorized: 401, RequestEntityTooLarge: 413 };
  const what = `${groupResource(request.type)}${name ? ` ${JSON.stringify(name)}` : ''}`;
  return new ApiError(codes[reason] ?? 422, reason, `${what} is forbidden: ${message}`, {
    ...(name ? { name } : {}),
    group: request.type.group,
    kind: request.type.plural,
    causes: [{ message }],
  });
}
