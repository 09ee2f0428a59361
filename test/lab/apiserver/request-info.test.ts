/**
 * The name a list or watch names for authorization, as kube-apiserver derives it: RequestInfoFactory
 * (k8s.io/apiserver pkg/endpoints/request/requestinfo.go, the same from 1.11, commit 6d795842c "Requires
 * single name for list and watch", to 1.34) decodes the query as ListOptions and, when that succeeds,
 * takes the name a field selector requires (fields.Selector.RequiresExactMatch("metadata.name"), the
 * selector parsed by apimachinery's fields.ParseSelector: pkg/fields/selector.go), if it could be a path
 * segment. RBAC matches that name against a rule's resourceNames (plugin/pkg/auth/authorizer/rbac,
 * ResourceNameMatches), so a Role naming a Secret allows a list or watch of exactly that Secret; a
 * selector kube-apiserver does not read as naming it is a list of the whole collection. From 1.31 the
 * AuthorizeWithSelectors gate hands the raw selectors to authorizers as well; RBAC does not look at them.
 * The chart's controller Role relies on this for the peers' Secrets (docs/kubernetes.md, RBAC).
 */
import assert from 'node:assert/strict';
import { requestInfo, watchRequested } from '../../../lab/src/apiserver/request-info';
import { fieldTerms } from '../../../lab/src/apiserver/selectors';
import { ApiError } from '../../../lab/src/apiserver/status';

const secrets = '/api/v1/namespaces/strait-system/secrets';
/** The verb and name of a GET of `path` with `query` (as sent: already encoded). */
const named = (query: string, path = secrets) => {
  const info = requestInfo('GET', path, new URLSearchParams(query));
  assert.ok(info.resourceRequest);
  return `${info.verb} ${JSON.stringify(info.name)}`;
};

describe('lab API server: the object a list or watch names, as kube-apiserver authorizes it', () => {
  it('names the object a field selector requires with = or ==, among other terms, for a list and a watch', () => {
    assert.equal(named('fieldSelector=metadata.name%3Dstrait-peer-b'), 'list "strait-peer-b"');
    assert.equal(named('fieldSelector=metadata.name%3D%3Dstrait-peer-b&watch=true'), 'watch "strait-peer-b"');
    assert.equal(named('fieldSelector=type%3DOpaque,metadata.name%3Dstrait-peer-b&limit=500'), 'list "strait-peer-b"');
    // The terms are sorted before the first metadata.name term is taken (parseSelector sorts them).
    assert.equal(named('fieldSelector=metadata.name%3Dz,metadata.name%3Da'), 'list "a"');
    // An escaped comma is part of the value (splitTerms, UnescapeValue).
    assert.equal(named('fieldSelector=metadata.name%3Da%5C%2Cb'), 'list "a,b"');
    // An empty term is skipped.
    assert.equal(named('fieldSelector=metadata.name%3Dx,'), 'list "x"');
  });

  it('names nothing when the selector does not require the name, does not parse, or the query does not decode as ListOptions', () => {
    for (const query of [
      '',
      'fieldSelector=',
      'fieldSelector=metadata.name!%3Dx', // a notHasTerm requires no name
      'fieldSelector=metadata.namespace%3Dx',
      'fieldSelector=%20metadata.name%3Dx', // nothing is trimmed: the field is " metadata.name"
      'fieldSelector=metadata.name%20%3Dx',
      'fieldSelector=metadata.name%3Dx,junk', // a term without an operator: the selector does not parse
      'fieldSelector=metadata.name%3Da%3Db', // an unescaped = in the value
      'fieldSelector=metadata.name%3Da%5Cb', // an unknown escape
      'fieldSelector=metadata.name%3Dx&labelSelector=%3Dx', // a label selector that does not parse
      'fieldSelector=metadata.name%3Dx&limit=ten',
      'fieldSelector=metadata.name%3Dx&limit=',
      'fieldSelector=metadata.name%3Dx&timeoutSeconds=9223372036854775808', // beyond int64
      'fieldSelector=metadata.name%3D..', // path.IsValidPathSegmentName
      'fieldSelector=metadata.name%3Da%2Fb',
      'fieldSelector=metadata.name%3Da%25b',
    ])
      assert.equal(named(query), 'list ""', query);
    assert.equal(named('fieldSelector=metadata.name%3Dx&limit=%2B5&timeoutSeconds=-1'), 'list "x"', 'ParseInt takes a sign');
    // A watch by the deprecated /watch/ path has its verb from the path and names nothing by its selector.
    assert.equal(named('fieldSelector=metadata.name%3Dx', '/api/v1/watch/namespaces/strait-system/secrets'), 'watch ""');
    // An object in the path is named by it; the selector is not read.
    assert.equal(named('fieldSelector=metadata.name%3Dx', `${secrets}/y`), 'get "y"');
  });

  it('decodes watch as a Go bool parameter: anything but 0 and false (any case) is true', () => {
    for (const [value, watch] of [
      ['true', true],
      ['1', true],
      ['', true],
      ['f', true],
      ['F', true],
      ['0', false],
      ['false', false],
      ['FALSE', false],
    ] as const)
      assert.equal(watchRequested(new URLSearchParams({ watch: value })), watch, value);
    assert.equal(watchRequested(new URLSearchParams()), false);
  });

  it("reports a field selector that does not parse with fields.ParseSelector's error, as a 400", () => {
    const error = (text: string) => {
      try {
        fieldTerms(text);
      } catch (err) {
        assert.ok(err instanceof ApiError);
        return `${err.code} ${err.message}`;
      }
      return 'parsed';
    };
    assert.equal(error('metadata.name=x,junk'), "400 invalid selector: 'metadata.name=x,junk'; can't understand 'junk'");
    assert.equal(error('metadata.name=a\\b'), '400 invalid field selector: invalid escape sequence: \\b');
    assert.equal(error('metadata.name=a\\'), '400 invalid field selector: invalid escape sequence: \\');
    assert.equal(error('metadata.name=a=b'), '400 invalid field selector: unescaped character in value: 61');
    assert.deepEqual(fieldTerms('b!=2,a==1'), [
      { field: 'a', equal: true, value: '1' },
      { field: 'b', equal: false, value: '2' },
    ]);
  });
});
