/**
 * CEL as kube-apiserver's admission policies run it (k8s.io/apiserver/pkg/cel, on cel-go), on
 * @bufbuild/cel (a conformance-tested implementation of the CEL spec): the standard library, and the
 * strings extension Kubernetes' CEL environment adds (cel-go ext.Strings: split, substring, indexOf,
 * lowerAscii, replace, join, trim... as `@bufbuild/cel/ext` provides it). Objects are unstructured JSON, as
 * Kubernetes evaluates them: a whole number is a CEL int, any other a double; a missing field is an error
 * (`has()` tests for one). Not type-checked before evaluation, as cel-go's checker does: an expression
 * that only the checker refuses (an undeclared variable) fails when evaluated instead.
 */
import { type CelInput, type CelResult, celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { isRecord } from './kube-object';

const env = celEnv({ funcs: strings });

type Program = ReturnType<typeof plan>;

/** Compiled once per expression text: policies are evaluated on every write they match. */
const programs = new Map<string, Program>();

function program(expression: string): Program {
  let compiled = programs.get(expression);
  if (!compiled) {
    compiled = plan(env, parse(expression));
    programs.set(expression, compiled);
  }
  return compiled;
}

/** Why `expression` does not compile (a syntax error, as cel-go's parser reports it), or undefined. */
export function compileError(expression: string): string | undefined {
  try {
    program(expression);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** A JSON value as CEL sees an unstructured one: objects as maps, whole numbers as ints. */
export function celValue(value: unknown): CelInput {
  if (Array.isArray(value)) return value.map(celValue);
  if (isRecord(value)) return new Map(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (value === undefined) return null;
  return value as CelInput;
}

/**
 * A policy's `variables`, each evaluated the first time an expression reads it and then kept
 * (cel-go's lazy composited variables), in order: a variable may read the ones before it.
 */
export class LazyVariables extends Map<string, CelInput> {
  private readonly evaluated = new Map<string, { value: CelInput } | { error: string }>();
  private readonly definitions: Map<string, string>;

  constructor(
    definitions: { name: string; expression: string }[],
    private readonly activation: () => Record<string, CelInput>,
  ) {
    super();
    this.definitions = new Map(definitions.map((d) => [d.name, d.expression]));
  }

  override has(name: string): boolean {
    return this.definitions.has(name);
  }

  override get(name: string): CelInput | undefined {
    const expression = this.definitions.get(name);
    if (expression === undefined) return undefined;
    let known = this.evaluated.get(name);
    if (!known) {
      const result = evaluate(expression, this.activation());
      known = 'error' in result ? { error: `composited variable "${name}" fails to evaluate: ${result.error}` } : result;
      this.evaluated.set(name, known);
    }
    // Raised where an expression reads it: the evaluator makes it that expression's error.
    if ('error' in known) throw new Error(known.error);
    return known.value;
  }
}

/** An expression's value, or why it failed (a missing key, a type error...). */
export function evaluate(expression: string, activation: Record<string, CelInput>): { value: CelInput } | { error: string } {
  let result: CelResult;
  try {
    result = program(expression)(activation);
  } catch (err) {
    return { error: (err as Error).message };
  }
  return isCelError(result) ? { error: result.message } : { value: result as CelInput };
}
