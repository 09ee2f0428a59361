/**
 * Reading a token auth file as kube-apiserver's --token-auth-file reads it: CSV records of token, user
 * name, uid and optionally a quoted comma-separated list of groups; and the users it makes, who are all
 * also in system:authenticated.
 */
import assert from 'node:assert/strict';
import { Authenticator, parseTokenAuthFile } from '../../../lab/src/apiserver/authentication';

describe('the token auth file (--token-auth-file)', () => {
  it('reads token, user, uid and quoted groups; skips blank lines and empty tokens; a repeated token replaces the earlier one (warned, token not shown)', () => {
    const warnings: string[] = [];
    const text = [
      't-alice,alice,uid-1,"operators,dev"',
      't-bob,bob,uid-2',
      '',
      '"t,carol",carol,uid-3,operators,ignored-column\r',
      ',nobody,uid-4,operators',
      't-bob,robert,uid-5,""',
      '"t ""quoted""",dave,uid-6,"a,b,c"',
      '',
    ].join('\n');
    assert.deepEqual(
      parseTokenAuthFile(text, '/etc/users.csv', (w) => warnings.push(w)),
      [
        { token: 't-alice', name: 'alice', uid: 'uid-1', groups: ['operators', 'dev'] },
        { token: 't-bob', name: 'robert', uid: 'uid-5', groups: [''] },
        { token: 't,carol', name: 'carol', uid: 'uid-3', groups: ['operators'] },
        { token: 't "quoted"', name: 'dave', uid: 'uid-6', groups: ['a', 'b', 'c'] },
      ],
    );
    assert.deepEqual(warnings, ['empty token in record 4: skipped', 'duplicate token in record 5: it replaces the earlier one']);
  });

  it('refuses a record of fewer than 3 columns and malformed quoting, naming the file and the line', () => {
    assert.throws(() => parseTokenAuthFile('t1,alice,uid-1\nt2,bob\n', '/etc/users.csv'), {
      message: '--token-auth-file: must have at least 3 columns (token, user name, user uid), found 2 (got "/etc/users.csv")',
    });
    assert.throws(() => parseTokenAuthFile('t1,alice,uid-1\nt"2,bob,uid-2\n', '/etc/users.csv'), {
      message: '--token-auth-file: line 2: bare " in non-quoted-field (got "/etc/users.csv")',
    });
    assert.throws(() => parseTokenAuthFile('"t1"x,alice,uid-1\n', '/etc/users.csv'), {
      message: '--token-auth-file: line 1: extraneous or missing " in quoted-field (got "/etc/users.csv")',
    });
  });

  it('authenticates a bearer token as its user, adding system:authenticated; an unknown token, another scheme or none is no one', () => {
    const authenticator = new Authenticator(parseTokenAuthFile('t-alice,alice,uid-1,operators\nt-bob,bob,uid-2\n', 'users.csv'));
    assert.deepEqual(authenticator.authenticate('Bearer t-alice'), {
      name: 'alice',
      uid: 'uid-1',
      groups: ['operators', 'system:authenticated'],
    });
    assert.deepEqual(authenticator.authenticate('bearer  t-bob '), { name: 'bob', uid: 'uid-2', groups: ['system:authenticated'] });
    for (const header of ['Bearer t-carol', 'Basic t-alice', 'Bearer', undefined])
      assert.equal(authenticator.authenticate(header), undefined, String(header));
  });
});
