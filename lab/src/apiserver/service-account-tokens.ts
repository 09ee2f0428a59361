/**
 * Bound service account tokens, as kube-apiserver issues them through the TokenRequest API (`POST
 * /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`: pkg/registry/core/serviceaccount/storage/token.go,
 * what `kubectl create token` and a Pod's projected token use) and authenticates them
 * (pkg/serviceaccount/jwt.go, claims.go): a JWT the server signs, naming one ServiceAccount by name and
 * uid, good until it expires and while that ServiceAccount exists (a ServiceAccount deleted and created
 * again is another uid: its old tokens are refused). The request's `spec.expirationSeconds` is at least
 * 600 and at most 2^32 (pkg/apis/authentication/validation: `may not specify a duration less than 10
 * minutes`), 3600 when not given. Signed with HS256 and a key of this server's own: clients treat the
 * token as opaque, as they do the real RS256 one.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { authenticatedGroup, type UserInfo } from './authentication';
import { type KubeObject, isRecord, timestamp } from './kube-object';
import { type StatusCause, invalid, notFound } from './status';
import type { Store } from './store';

const issuer = 'https://kubernetes.default.svc.cluster.local';
const minSeconds = 600;
const maxSeconds = 2 ** 32;
const defaultSeconds = 3600;

const base64url = (value: object | Buffer) => (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString('base64url');

interface Claims {
  sub: string;
  exp: number;
  'kubernetes.io': { namespace: string; serviceaccount: { name: string; uid: string } };
}

export class ServiceAccountTokens {
  private readonly key = randomBytes(32);

  constructor(
    private readonly store: Store,
    /** Milliseconds since the epoch: the server's clock, which a test may move on. */
    private readonly now: () => number,
  ) {}

  private sign(text: string): Buffer {
    return createHmac('sha256', this.key).update(text).digest();
  }

  /** A TokenRequest for ServiceAccount `name` in `namespace`: the request answered with its token, or a 404 or 422. */
  issue(namespace: string, name: string, body: unknown): KubeObject {
    const account = this.store.get('serviceaccounts', namespace, name);
    if (!account) throw notFound({ groupResource: 'serviceaccounts', group: '', plural: 'serviceaccounts', name });
    const spec = isRecord(body) && isRecord(body.spec) ? body.spec : {};
    const seconds = spec.expirationSeconds ?? defaultSeconds;
    const causes: StatusCause[] = [];
    if (typeof seconds !== 'number' || !Number.isInteger(seconds))
      causes.push({
        reason: 'FieldValueInvalid',
        message: `Invalid value: ${JSON.stringify(seconds)}: must be a whole number of seconds`,
        field: 'spec.expirationSeconds',
      });
    else if (seconds < minSeconds)
      causes.push({
        reason: 'FieldValueInvalid',
        message: `Invalid value: ${seconds}: may not specify a duration less than 10 minutes`,
        field: 'spec.expirationSeconds',
      });
    else if (seconds > maxSeconds)
      causes.push({
        reason: 'FieldValueTooLong',
        message: `Invalid value: ${seconds}: may not specify a duration larger than 2^32 seconds`,
        field: 'spec.expirationSeconds',
      });
    if (causes.length > 0) throw invalid('TokenRequest', 'authentication.k8s.io', name, causes);
    const audiences = Array.isArray(spec.audiences) && spec.audiences.length > 0 ? (spec.audiences as string[]) : [issuer];
    const issuedAt = Math.floor(this.now() / 1000);
    const expires = issuedAt + (seconds as number);
    const uid = account.metadata.uid ?? '';
    const claims: Claims & Record<string, unknown> = {
      iss: issuer,
      aud: audiences,
      iat: issuedAt,
      nbf: issuedAt,
      exp: expires,
      sub: `system:serviceaccount:${namespace}:${name}`,
      'kubernetes.io': { namespace, serviceaccount: { name, uid } },
    };
    const unsigned = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url(claims)}`;
    return {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: { name, namespace, creationTimestamp: timestamp(new Date(this.now())) },
      spec: { audiences, expirationSeconds: seconds, boundObjectRef: null },
      status: { token: `${unsigned}.${base64url(this.sign(unsigned))}`, expirationTimestamp: timestamp(new Date(expires * 1000)) },
    };
  }

  /** The ServiceAccount a token of this server names, while it is unexpired and that account exists; else undefined (401). */
  authenticate(token: string): UserInfo | undefined {
    const [header, payload, signature, ...rest] = token.split('.');
    if (header === undefined || payload === undefined || signature === undefined || rest.length > 0) return undefined;
    const expected = this.sign(`${header}.${payload}`);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Claims;
    if (claims.exp * 1000 <= this.now()) return undefined;
    const { namespace, serviceaccount } = claims['kubernetes.io'];
    const account = this.store.get('serviceaccounts', namespace, serviceaccount.name);
    if (!account || account.metadata.uid !== serviceaccount.uid) return undefined;
    return {
      name: claims.sub,
      uid: serviceaccount.uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, authenticatedGroup],
    };
  }
}
