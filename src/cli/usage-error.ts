/**
 * Commander's usage errors (an unknown option, a required one missing, a value missing, an extra
 * argument, an unknown command) as InputErrors naming the option or argument and the value given, so
 * they reach stderr as the same `{"error", "field", "value"}` JSON as every other refusal instead of
 * text and a help page. `--help` and `--version` are not errors and print as before.
 */
import { Command, type HelpContext } from 'commander';
import { InputError } from '../errors';

/** `strait network-ipam peer add`, for messages. */
const commandLine = (command: Command): string => {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
};

/** The long flag of an option as commander prints it (`'-s, --state <file>'`), else its first flag. */
const flagIn = (message: string): string => {
  const flags = /option '([^']*)'/.exec(message)?.[1] ?? '';
  const names = flags.split(/[ ,|]+/).filter((f) => f.startsWith('-'));
  return names.find((f) => f.startsWith('--')) ?? names[0] ?? 'option';
};

/**
 * The InputError for commander's `message` of kind `code`, raised by `command`. Strait's commands take
 * options only (no arguments, no choices): any other kind of usage error keeps commander's words.
 */
function usageError(command: Command, code: string, message: string): InputError {
  const line = commandLine(command);
  const seeHelp = `; see \`${line} --help\``;
  const commands = () => command.commands.map((c) => c.name()).join(', ');
  switch (code) {
    case 'commander.unknownOption': {
      // "error: unknown option '<as given>'", and "\n(Did you mean --x?)" when one is close.
      const [, given = '', suggestion] = /^error: unknown option '([\s\S]*)'(?:\n\(Did you mean (\S+)\?\))?$/.exec(message) ?? [];
      return new InputError(
        given.split('=')[0]!,
        given,
        `not an option of ${line}${suggestion ? `; did you mean ${suggestion}?` : ''}${seeHelp}`,
      );
    }
    case 'commander.missingMandatoryOptionValue':
      return new InputError(flagIn(message), null, `required by ${line}, not given${seeHelp}`);
    case 'commander.optionMissingArgument':
      return new InputError(flagIn(message), null, `needs a value${seeHelp}`);
    case 'commander.unknownCommand':
      return new InputError('command', command.args[0] ?? null, `not a command of ${line}: one of ${commands()}${seeHelp}`);
    case 'commander.missingCommand':
      return new InputError('command', null, `${line} needs one of its commands: ${commands()}${seeHelp}`);
    case 'commander.excessArguments':
      return new InputError('arguments', command.args, `${line} takes no arguments, only options${seeHelp}`);
    default:
      return new InputError('arguments', command.args, `${message.replace(/^error: /, '')}${seeHelp}`);
  }
}

/**
 * Strait's commands: every subcommand is one too (createCommand), and a usage error is thrown as an
 * InputError for the CLI's runner to print, never written as text.
 */
export class StraitCommand extends Command {
  override createCommand(name?: string): Command {
    return new StraitCommand(name);
  }

  override error(message: string, options?: { code?: string; exitCode?: number }): never {
    throw usageError(this, options?.code ?? 'commander.error', message);
  }

  /** A command that needs a subcommand and got none prints its help as an error: a usage error too. */
  override help(context?: HelpContext | ((text: string) => string)): never {
    if (typeof context === 'object' && context.error) throw usageError(this, 'commander.missingCommand', '');
    return super.help(context as HelpContext);
  }
}
