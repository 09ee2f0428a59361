/**
 * Whether a body is JSON as kube-apiserver's decoder sees it, and if not, the error Go's encoding/json
 * scanner reports (scanner.go; sigs.k8s.io/json is its fork): `invalid character 'x' looking for
 * beginning of value`, `unexpected end of JSON input`, `invalid character '[' exceeded max depth` past
 * `maxDepth` levels (Go's: 10,000). Byte by byte, as Go reads it; what passes here JSON.parse reads too.
 * And the name Go's decoder gives a value of the wrong type.
 */

/** How encoding/json names a JSON value that does not fit a Go type (UnmarshalTypeError.Value). */
export function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'number' ? 'number' : 'string';
}

/** Go's scanner's maxNestingDepth. */
const goMaxNestingDepth = 10_000;

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** Go's quoteChar: a byte as the scanner names it (`'x'`, `'\''`, `'"'`, `'\x00'`, `'\n'`). */
function quoteChar(c: number): string {
  if (c === 0x27) return "'\\''";
  if (c === 0x22) return "'\"'";
  const escapes: Record<number, string> = {
    0x07: '\\a',
    0x08: '\\b',
    0x0c: '\\f',
    0x0a: '\\n',
    0x0d: '\\r',
    0x09: '\\t',
    0x0b: '\\v',
    0x5c: '\\\\',
  };
  if (escapes[c] !== undefined) return `'${escapes[c]}'`;
  // strconv.Quote of string(rune(c)): controls as \x.., other unprintable code points as \u...., the rest as they are.
  const hex = c.toString(16).padStart(2, '0');
  if (c < 0x20 || c === 0x7f) return `'\\x${hex}'`;
  if ((c >= 0x80 && c <= 0xa0) || c === 0xad) return `'\\u00${hex}'`;
  return `'${String.fromCodePoint(c)}'`;
}

type Step = (c: number) => Step | string;
const enum Parse {
  ObjectKey,
  ObjectValue,
  ArrayValue,
}

/** The syntax error Go reports for `body`, or undefined when it is one JSON value nested at most `maxDepth` deep. */
export function goJsonSyntaxError(body: Buffer, maxDepth = goMaxNestingDepth): string | undefined {
  const stack: Parse[] = [];
  const error = (c: number, context: string) => `invalid character ${quoteChar(c)} ${context}`;
  const push = (c: number, p: Parse, next: Step): Step | string => {
    stack.push(p);
    return stack.length > maxDepth ? error(c, 'exceeded max depth') : next;
  };
  const literal =
    (word: string, i: number, name: string): Step =>
    (c) => {
      if (c !== word.charCodeAt(i)) return error(c, `in literal ${name} (expecting ${quoteChar(word.charCodeAt(i))})`);
      return i + 1 === word.length ? endValue : literal(word, i + 1, name);
    };
  const beginValue: Step = (c) => {
    if (isSpace(c)) return beginValue;
    switch (c) {
      case 0x7b:
        return push(c, Parse.ObjectKey, beginStringOrEmpty); // {
      case 0x5b:
        return push(c, Parse.ArrayValue, beginValueOrEmpty); // [
      case 0x22:
        return inString; // "
      case 0x2d:
        return neg; // -
      case 0x30:
        return zero; // 0
      case 0x74:
        return literal('true', 1, 'true');
      case 0x66:
        return literal('false', 1, 'false');
      case 0x6e:
        return literal('null', 1, 'null');
    }
    return c >= 0x31 && c <= 0x39 ? one : error(c, 'looking for beginning of value');
  };
  const beginValueOrEmpty: Step = (c) => {
    if (isSpace(c)) return beginValueOrEmpty;
    return c === 0x5d ? endValue(c) : beginValue(c);
  };
  const beginStringOrEmpty: Step = (c) => {
    if (isSpace(c)) return beginStringOrEmpty;
    if (c === 0x7d) {
      stack[stack.length - 1] = Parse.ObjectValue;
      return endValue(c);
    }
    return beginString(c);
  };
  const beginString: Step = (c) => {
    if (isSpace(c)) return beginString;
    return c === 0x22 ? inString : error(c, 'looking for beginning of object key string');
  };
  const endTop: Step = (c) => (isSpace(c) ? endTop : error(c, 'after top-level value'));
  const endValue: Step = (c) => {
    if (stack.length === 0) return endTop(c);
    if (isSpace(c)) return endValue;
    switch (stack[stack.length - 1]) {
      case Parse.ObjectKey:
        if (c === 0x3a) {
          stack[stack.length - 1] = Parse.ObjectValue;
          return beginValue;
        }
        return error(c, 'after object key');
      case Parse.ObjectValue:
        if (c === 0x2c) {
          stack[stack.length - 1] = Parse.ObjectKey;
          return beginString;
        }
        if (c === 0x7d) {
          stack.pop();
          return stack.length === 0 ? endTop : endValue;
        }
        return error(c, 'after object key:value pair');
      default:
        if (c === 0x2c) return beginValue;
        if (c === 0x5d) {
          stack.pop();
          return stack.length === 0 ? endTop : endValue;
        }
        return error(c, 'after array element');
    }
  };
  const inString: Step = (c) => {
    if (c === 0x22) return endValue;
    if (c === 0x5c) return inStringEscape;
    return c < 0x20 ? error(c, 'in string literal') : inString;
  };
  const inStringEscape: Step = (c) => {
    if ([0x62, 0x66, 0x6e, 0x72, 0x74, 0x5c, 0x2f, 0x22].includes(c)) return inString;
    return c === 0x75 ? hexEscape(4) : error(c, 'in string escape code');
  };
  const hexEscape =
    (left: number): Step =>
    (c) => {
      if (!isHex(c)) return error(c, 'in \\u hexadecimal character escape');
      return left === 1 ? inString : hexEscape(left - 1);
    };
  const neg: Step = (c) => (c === 0x30 ? zero : c >= 0x31 && c <= 0x39 ? one : error(c, 'in numeric literal'));
  const one: Step = (c) => (isDigit(c) ? one : zero(c));
  const zero: Step = (c) => (c === 0x2e ? dot : c === 0x65 || c === 0x45 ? exponent : endValue(c));
  const dot: Step = (c) => (isDigit(c) ? dotDigits : error(c, 'after decimal point in numeric literal'));
  const dotDigits: Step = (c) => (isDigit(c) ? dotDigits : c === 0x65 || c === 0x45 ? exponent : endValue(c));
  const exponent: Step = (c) => (c === 0x2b || c === 0x2d ? exponentSign : exponentSign(c));
  const exponentSign: Step = (c) => (isDigit(c) ? exponentDigits : error(c, 'in exponent of numeric literal'));
  const exponentDigits: Step = (c) => (isDigit(c) ? exponentDigits : endValue(c));

  let step: Step = beginValue;
  for (const c of body) {
    const next = step(c);
    if (typeof next === 'string') return next;
    step = next;
  }
  // The end: a value that a space would end (a number) ends; anything else is cut short.
  const end = step(0x20);
  return end === endTop ? undefined : 'unexpected end of JSON input';
}
