import pino from 'pino';

/**
 * Field names whose values may be secrets (IPsec keys, per-peering secrets, tokens, pre-shared keys,
 * passwords): the word itself, or a name ending in it (`ipsecKey`, `peering_secret`, `BEARER-TOKEN`).
 */
const secretWords = 'secret|key|psk|token|password|authorization';
const secretName = new RegExp(`(?:^|[_.-])(?:${secretWords})s?$`, 'i');
const camelSecretName = /[a-z0-9](?:Secret|Key|Psk|PSK|Token|Password|Authorization)s?$/;
/** A cheap first look at a line: a key ending in one of the words (more than secretName takes). */
const secretNameInJson = new RegExp(`(?:${secretWords})s?"\\s*:`, 'i');

export const redactedValue = '[redacted]';

/** Whether a log field of this name is censored. */
export const isSecretKey = (name: string): boolean => secretName.test(name) || camelSecretName.test(name);

function censor(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(censor);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSecretKey(k) ? redactedValue : censor(v)]));
}

/**
 * A log line with every secret-named field censored, at any depth and inside arrays. It works on the
 * line as written, so nothing escapes it: a child logger's bindings, a serializer's output, a toJSON.
 * Lines without such a key (nearly all) pass untouched.
 */
function redactLine(line: string): string {
  if (!secretNameInJson.test(line)) return line;
  return `${JSON.stringify(censor(JSON.parse(line)))}\n`;
}

/** The options every Strait logger is made with (tests make theirs with them too). */
export const loggerOptions: pino.LoggerOptions = { hooks: { streamWrite: redactLine } };

export type Logger = pino.Logger;

export function createLogger(name: string, level = process.env.STRAIT_LOG_LEVEL ?? 'info'): Logger {
  return pino({ ...loggerOptions, name, level }, pino.destination(2));
}
