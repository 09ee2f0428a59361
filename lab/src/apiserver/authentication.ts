/**
 * Who a request is, from its bearer token, as kube-apiserver's token authenticators say it: the admin
 * token (`--token-file`) is user `admin` in group `system:masters`, which authorization lets do
 * anything; the tokens of a token auth file (kube-apiserver's `--token-auth-file`, the same CSV:
 * `token,user,uid,"group1,group2"`) are the users named there. Every authenticated user is also in
 * `system:authenticated`, as the real server adds it. So are the ServiceAccounts of the bound tokens the
 * server issued (service-account-tokens.ts). An unknown token is no one (401).
 */
import { createHash } from 'node:crypto';
import { InputError } from '../../../src/errors';

export interface UserInfo {
  name: string;
  uid: string;
  groups: string[];
  /**
   * What else the authenticator says of the user (user.Info's extra): a Pod- or Node-bound token's
   * `authentication.kubernetes.io/node-name`, which admission policies read as `request.userInfo.extra`.
   */
  extra?: Record<string, string[]>;
}

export interface TokenUser extends UserInfo {
  token: string;
}

/** The group authorization never refuses (kube-apiserver's privileged group). */
export const mastersGroup = 'system:masters';
export const authenticatedGroup = 'system:authenticated';

export const adminUser = (token: string): TokenUser => ({ token, name: 'admin', uid: '', groups: [mastersGroup] });

/**
 * The records of a CSV text as Go's encoding/csv reads them (the reader kube-apiserver uses): fields
 * split by commas, a field in double quotes may hold commas, newlines and doubled quotes, blank lines
 * are skipped, a quote inside an unquoted field is an error.
 */
function csvRecords(text: string, fail: (line: number, why: string) => never): string[][] {
  const records: string[][] = [];
  let line = 1;
  let i = 0;
  const input = text.replace(/\r\n/g, '\n');
  while (i < input.length) {
    if (input[i] === '\n') {
      line += 1;
      i += 1;
      continue;
    }
    const record: string[] = [];
    const start = line;
    for (;;) {
      let field = '';
      if (input[i] === '"') {
        i += 1;
        for (;;) {
          if (i >= input.length) fail(start, 'extraneous or missing " in quoted-field');
          const c = input[i]!;
          if (c === '"' && input[i + 1] === '"') {
            field += '"';
            i += 2;
          } else if (c === '"') {
            i += 1;
            break;
          } else {
            if (c === '\n') line += 1;
            field += c;
            i += 1;
          }
        }
        if (i < input.length && input[i] !== ',' && input[i] !== '\n') fail(line, 'extraneous or missing " in quoted-field');
      } else {
        while (i < input.length && input[i] !== ',' && input[i] !== '\n') {
          if (input[i] === '"') fail(line, 'bare " in non-quoted-field');
          field += input[i];
          i += 1;
        }
      }
      record.push(field);
      if (input[i] === ',') {
        i += 1;
        continue;
      }
      break;
    }
    records.push(record);
  }
  return records;
}

/**
 * The users of a token auth file, as kube-apiserver's tokenfile.NewCSV reads it: at least three
 * columns (token, user name, uid), an optional fourth of comma-separated groups, further columns
 * ignored; a record with an empty token is skipped and a repeated token replaces the earlier one
 * (both with a warning, which never shows the token).
 */
export function parseTokenAuthFile(text: string, path: string, warn: (message: string) => void = () => undefined): TokenUser[] {
  const byToken = new Map<string, TokenUser>();
  const fail = (line: number, why: string): never => {
    throw new InputError('--token-auth-file', path, `line ${line}: ${why}`);
  };
  csvRecords(text, fail).forEach((record, index) => {
    const number = index + 1;
    if (record.length < 3)
      throw new InputError('--token-auth-file', path, `must have at least 3 columns (token, user name, user uid), found ${record.length}`);
    const [token, name, uid, groups] = record as [string, string, string, string | undefined];
    if (token === '') return warn(`empty token in record ${number}: skipped`);
    if (byToken.has(token)) warn(`duplicate token in record ${number}: it replaces the earlier one`);
    byToken.set(token, { token, name, uid, groups: groups === undefined ? [] : groups.split(',') });
  });
  return [...byToken.values()];
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

export class Authenticator {
  /** By the token's SHA-256, so a lookup compares digests, never the secret itself. */
  private readonly users = new Map<string, UserInfo>();

  constructor(
    users: TokenUser[],
    /** The bound service account tokens this server issued (service-account-tokens.ts). */
    private readonly serviceAccounts?: { authenticate(token: string): UserInfo | undefined },
  ) {
    for (const { token, ...user } of users) {
      if (token === '') throw new Error('an API server token may not be empty');
      const groups = user.groups.includes(authenticatedGroup) ? user.groups : [...user.groups, authenticatedGroup];
      this.users.set(digest(token), { ...user, groups });
    }
  }

  /** The user of an `Authorization: Bearer <token>` header, or undefined (401). */
  authenticate(authorization: string | undefined): UserInfo | undefined {
    const match = /^Bearer\s+(\S+)\s*$/i.exec((authorization ?? '').trim());
    if (!match) return undefined;
    return this.users.get(digest(match[1]!)) ?? this.serviceAccounts?.authenticate(match[1]!);
  }
}
