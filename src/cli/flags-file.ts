/**
 * `--flags-file <file>`: a command's options from a YAML map of long option names (without the dashes)
 * to values, as the Helm chart's ConfigMap holds them for the agent and the controller (Cilium's
 * config-map keys are its flag names too, so the chart and the binary cannot drift: a key the binary
 * does not know is refused, naming the file and the key). The command line wins over the file; the
 * file wins over the defaults. A relative path in an option that names a file is taken from the flags
 * file's directory, so a ConfigMap mounted anywhere can name its own other keys.
 */
import { dirname, resolve } from 'node:path';
import type { Command, Option } from 'commander';
import { loadYamlFile } from '../api/document';
import { InputError } from '../errors';

export interface FlagsFileRules {
  /** Options that name a file or directory: relative values are taken from the flags file's directory. */
  paths: readonly string[];
  /** Options that only make sense typed by a person (one-shot actions): refused in a file. */
  commandLineOnly: readonly string[];
}

const longName = (option: Option) => option.long?.replace(/^--/, '') ?? '';

function valueOf(option: Option, field: string, value: unknown): unknown {
  if (option.isBoolean()) {
    if (typeof value !== 'boolean') throw new InputError(field, value, 'must be true or false');
    return value;
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new InputError(field, value, 'must be a string or a number');
}

/**
 * The command's options with the flags file's values under those given on the command line; without
 * --flags-file, the options as parsed. Nothing is read from the file but what the command declares.
 */
export function optionsWithFlagsFile<T extends object>(command: Command, rules: FlagsFileRules): T {
  const options = command.opts<T & { flagsFile?: string }>();
  const file = options.flagsFile;
  if (file === undefined) return options;
  const document = loadYamlFile(file, '--flags-file');
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new InputError('--flags-file', file, 'must hold a YAML map of option names to values');
  }
  const known = new Map(command.options.map((o) => [longName(o), o]));
  const merged: Record<string, unknown> = { ...options };
  for (const [key, raw] of Object.entries(document)) {
    const field = `${file}: ${key}`;
    const option = known.get(key);
    if (option === undefined || key === 'flags-file')
      throw new InputError(field, raw, `not an option of strait ${command.name()} (see strait ${command.name()} --help)`);
    if (rules.commandLineOnly.includes(key)) throw new InputError(field, raw, 'only on the command line');
    const attribute = option.attributeName();
    if (command.getOptionValueSource(attribute) === 'cli') continue;
    const value = valueOf(option, field, raw);
    merged[attribute] = rules.paths.includes(key) && typeof value === 'string' ? resolve(dirname(resolve(file)), value) : value;
  }
  return merged as T;
}
