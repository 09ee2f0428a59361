/**
 * Documents in files: their text (absent is not an error: the writer may not have written it yet) and
 * their parse, JSON for what programs write, YAML 1.2 (a superset of JSON) for what people write. A
 * document that does not parse is an InputError naming the file; what it holds is checked by the
 * schema of its resource.
 */
import { readFileSync } from 'node:fs';
import type * as Yaml from 'yaml';
import { InputError } from '../errors';
import { parseJsonText } from '../json-text';

/**
 * The YAML parser, loaded at the first YAML document: not at an agent's start, which reads JSON only.
 * It recurses per level of nesting: a document nested thousands deep overflows the stack, which is a
 * refusal in words a person can act on, not a RangeError's.
 */
function parseYaml(text: string): unknown {
  try {
    // Warnings (an unknown tag) would go to stderr as text, among the JSON log lines: the schema checks the values anyway.
    return (require('yaml') as typeof Yaml).parse(text, { logLevel: 'error' });
  } catch (err) {
    // The parser reports its own stack overflow as RESOURCE_EXHAUSTION, with the RangeError's words.
    if (err instanceof RangeError || (err as { code?: unknown }).code === 'RESOURCE_EXHAUSTION')
      throw new Error('nested too deeply to read');
    throw err;
  }
}

/** The file's text, or undefined while it does not exist. */
export function readTextFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

const excerpt = (text: string) => (text.length > 80 ? `${text.slice(0, 80)}…` : text);

/** JSON from a program; a half-written file is refused here too. */
export function parseJsonDocument(text: string, source: string): unknown {
  const parsed = parseJsonText(text);
  if ('problem' in parsed) throw new InputError(source, excerpt(text), `not valid JSON: ${parsed.problem}`);
  return parsed.value;
}

/** A YAML or JSON file a person wrote, parsed; an unreadable file is an InputError naming it. */
export function loadYamlFile(path: string, field: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError(field, path, `cannot read: ${(err as Error).message}`);
  }
  try {
    return parseYaml(text);
  } catch (err) {
    throw new InputError(field, path, `not valid YAML or JSON: ${(err as Error).message}`);
  }
}

/**
 * A document another process writes, read as a poller does: its value made by `read` (which checks it),
 * or undefined while the file is absent, half-written or not (yet) valid.
 */
export function pollDocumentFile<T>(path: string, read: (value: unknown) => T): T | undefined {
  const text = readTextFile(path);
  if (text === undefined) return undefined;
  try {
    return read(parseJsonDocument(text, path));
  } catch (err) {
    if (err instanceof InputError) return undefined;
    throw err;
  }
}
