/**
 * The API rules of ValidatingAdmissionPolicies and their bindings that are cheap to check, as
 * kube-apiserver's validation has them (pkg/apis/admissionregistration/validation/validation.go):
 * the required fields, the values an enum takes, and every CEL expression compiling, so a policy the
 * real server refuses (`spec.validations[0].expression: Invalid value: "1 +": compilation failed`) is
 * refused here rather than stored and failing each request it matches. Only syntax is checked: what
 * cel-go's type checker alone refuses (an undeclared variable) errs at evaluation instead (cel.ts).
 */
import { compileError } from './cel';
import { type KubeObject, isRecord } from './kube-object';
import type { StatusCause } from './status';
import { invalidValue, required, unsupported } from './validation';

const record = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** An expression field: required, and compiling (validation.go validateValidationExpression and friends). */
function expressionCauses(field: string, expression: unknown, optional = false): StatusCause[] {
  if (typeof expression !== 'string' || expression.trim() === '') return optional && expression === undefined ? [] : [required(field)];
  const error = compileError(expression);
  return error ? [invalidValue(field, expression, `compilation failed: ERROR: ${error}`)] : [];
}

/** Each `[i].name` required and each `[i].expression` compiling, of matchConditions or variables. */
function namedExpressions(field: string, items: unknown): StatusCause[] {
  return list(items).flatMap((item, i) => {
    const { name, expression } = record(item);
    const nameCauses = typeof name === 'string' && name !== '' ? [] : [required(`${field}[${i}].name`)];
    return [...nameCauses, ...expressionCauses(`${field}[${i}].expression`, expression)];
  });
}

export function validateValidatingAdmissionPolicy(policy: KubeObject): StatusCause[] {
  const spec = record(policy.spec);
  const causes: StatusCause[] = [];
  if (spec.failurePolicy !== undefined && spec.failurePolicy !== 'Fail' && spec.failurePolicy !== 'Ignore')
    causes.push(unsupported('spec.failurePolicy', spec.failurePolicy, ['Fail', 'Ignore']));
  if (!isRecord(spec.matchConstraints)) causes.push(required('spec.matchConstraints'));
  else if (list(spec.matchConstraints.resourceRules).length === 0) causes.push(required('spec.matchConstraints.resourceRules'));
  const validations = list(spec.validations);
  if (validations.length === 0 && list(spec.auditAnnotations).length === 0)
    causes.push(required('spec.validations', 'validations or auditAnnotations must contain at least one item'));
  validations.forEach((item, i) => {
    const validation = record(item);
    causes.push(...expressionCauses(`spec.validations[${i}].expression`, validation.expression));
    causes.push(...expressionCauses(`spec.validations[${i}].messageExpression`, validation.messageExpression, true));
    const reasons = ['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge'];
    if (validation.reason !== undefined && !reasons.includes(validation.reason as string))
      causes.push(unsupported(`spec.validations[${i}].reason`, validation.reason, reasons));
  });
  causes.push(...namedExpressions('spec.matchConditions', spec.matchConditions));
  causes.push(...namedExpressions('spec.variables', spec.variables));
  return causes;
}

export function validateValidatingAdmissionPolicyBinding(binding: KubeObject): StatusCause[] {
  const spec = record(binding.spec);
  const causes: StatusCause[] = [];
  if (typeof spec.policyName !== 'string' || spec.policyName === '') causes.push(required('spec.policyName'));
  const actions = list(spec.validationActions);
  if (actions.length === 0) causes.push(required('spec.validationActions', 'at least one validation action is required'));
  actions.forEach((action, i) => {
    if (action !== 'Deny' && action !== 'Warn' && action !== 'Audit')
      causes.push(unsupported(`spec.validationActions[${i}]`, action, ['Audit', 'Deny', 'Warn']));
  });
  if (actions.includes('Deny') && actions.includes('Warn'))
    causes.push(
      invalidValue(
        'spec.validationActions',
        actions,
        'must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)',
      ),
    );
  return causes;
}
