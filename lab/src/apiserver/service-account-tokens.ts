/**
 * Bound service account tokens, as kube-apiserver issues them through the TokenRequest API (`POST
 * /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`: pkg/registry/core/serviceaccount/storage/token.go,
 * what `kubectl create token` and a Pod's projected token use) and authenticates them
 * (pkg/serviceaccount/jwt.go, claims.go): a JWT the server signs, naming one ServiceAccount by name and
 * uid, good until it expires and while that ServiceAccount exists (a ServiceAccount deleted and created
 * again is another uid: its old tokens are refused). The request's `spec.expirationSeconds` is at least
 * 600 and at most 2^32 (pkg/apis/authentication/validation: `may not specify a duration less than 10
 * minutes`), 3600 when not given. Signed with HS256 and a key of this server's own: clients treat the
 * token as opaque, as they do the real RS256 one. And the legacy tokens of Secrets of type
 * kubernetes.io/service-account-token, which the token controller fills in (filledSecret): no expiry,
 * good while the Secret holds them.
 *
 * A token may be bound to a Pod, a Node or a Secret (`spec.boundObjectRef`, `kubectl create token
 * --bound-object-kind`): then it is good only while that object, by uid, exists, and its user carries
 * a Pod or a Node in `extra` (pkg/serviceaccount/claims.go, 1.30+ with ServiceAccountTokenPodNodeInfo and
 * 1.31's ServiceAccountTokenNodeBinding, both on): `authentication.kubernetes.io/pod-name`, `pod-uid`,
 * and `node-name`, `node-uid` (a Pod's once it is scheduled). Every bound token has a JTI, which the
 * user carries as `authentication.kubernetes.io/credential-id` (`JTI=<id>`).
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { authenticatedGroup, type UserInfo } from './authentication';
import { type KubeObject, isRecord, timestamp } from './kube-object';
import { ApiError, type StatusCause, badRequest, invalid, notFound } from './status';
import type { Store } from './store';

const issuer = 'https://kubernetes.default.svc.cluster.local';
const minSeconds = 600;
const maxSeconds = 2 ** 32;
const defaultSeconds = 3600;

const base64url = (value: object | Buffer) => (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString('base64url');

interface Reference {
  name: string;
  uid: string;
}

/** A bound token's claims (claims.go). */
interface Claims {
  sub: string;
  exp: number;
  jti: string;
  'kubernetes.io': { namespace: string; serviceaccount: Reference; pod?: Reference; node?: Reference; secret?: Reference };
}

/** The extras of a bound token's user (claims.go: the keys kube-apiserver sets). */
const extraKey = (what: string) => `authentication.kubernetes.io/${what}`;

/** A legacy token's claims (legacy.go), for a Secret of type kubernetes.io/service-account-token: no expiry. */
interface LegacyClaims {
  iss: typeof legacyIssuer;
  sub: string;
  'kubernetes.io/serviceaccount/namespace': string;
  'kubernetes.io/serviceaccount/secret.name': string;
  'kubernetes.io/serviceaccount/service-account.name': string;
  'kubernetes.io/serviceaccount/service-account.uid': string;
}

const legacyIssuer = 'kubernetes/serviceaccount';
export const serviceAccountTokenType = 'kubernetes.io/service-account-token';
const accountNameAnnotation = 'kubernetes.io/service-account.name';
const accountUidAnnotation = 'kubernetes.io/service-account.uid';

export class ServiceAccountTokens {
  constructor(
    private readonly store: Store,
    /** Milliseconds since the epoch: the server's clock, which a test may move on. */
    private readonly now: () => number,
    /** The signing key (kube-apiserver's --service-account-signing-key-file). */
    private readonly key: Buffer,
  ) {}

  private sign(text: string): Buffer {
    return createHmac('sha256', this.key).update(text).digest();
  }

  private jwt(claims: object): string {
    const unsigned = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url(claims)}`;
    return `${unsigned}.${base64url(this.sign(unsigned))}`;
  }

  /**
   * What kube-controller-manager's token controller (pkg/controller/serviceaccount/tokens_controller.go)
   * writes into a Secret of type kubernetes.io/service-account-token that names an existing ServiceAccount
   * and has no token yet: the token, the cluster's CA and the namespace, and the account's uid. Undefined
   * when there is nothing to fill. The token lasts until the Secret is deleted (how it is revoked).
   */
  filledSecret(secret: KubeObject, ca: string): KubeObject | undefined {
    const data = isRecord(secret.data) ? secret.data : {};
    const annotations = isRecord(secret.metadata.annotations) ? (secret.metadata.annotations as Record<string, string>) : {};
    const namespace = secret.metadata.namespace ?? '';
    const name = annotations[accountNameAnnotation];
    if (secret.type !== serviceAccountTokenType || data.token !== undefined || name === undefined) return undefined;
    const account = this.store.get('serviceaccounts', namespace, name);
    if (!account) return undefined;
    const uid = account.metadata.uid ?? '';
    const claims: LegacyClaims = {
      iss: legacyIssuer,
      sub: `system:serviceaccount:${namespace}:${name}`,
      'kubernetes.io/serviceaccount/namespace': namespace,
      'kubernetes.io/serviceaccount/secret.name': secret.metadata.name,
      'kubernetes.io/serviceaccount/service-account.name': name,
      'kubernetes.io/serviceaccount/service-account.uid': uid,
    };
    const encode = (text: string) => Buffer.from(text).toString('base64');
    return {
      ...secret,
      metadata: { ...secret.metadata, annotations: { ...annotations, [accountUidAnnotation]: uid } },
      data: { ...data, token: encode(this.jwt(claims)), 'ca.crt': encode(ca), namespace: encode(namespace) },
    };
  }

  /**
   * What a TokenRequest's `spec.boundObjectRef` binds the token to (token.go): a Pod (and its Node once
   * scheduled) or a Secret of the account's namespace, or a Node, which must exist (404) and be the uid
   * given (409).
   */
  private bound(namespace: string, account: string, ref: unknown): { pod?: Reference; node?: Reference; secret?: Reference } {
    if (!isRecord(ref)) return {};
    const kind = ref.kind;
    if (kind !== 'Pod' && kind !== 'Node' && kind !== 'Secret')
      throw badRequest(
        `cannot bind token for serviceaccount ${JSON.stringify(account)} to object of type ${JSON.stringify(`/v1, Kind=${String(kind)}`)}`,
      );
    const name = typeof ref.name === 'string' ? ref.name : '';
    const resource = { Pod: 'pods', Node: 'nodes', Secret: 'secrets' }[kind];
    const object = this.store.get(resource, kind === 'Node' ? undefined : namespace, name);
    if (!object) throw notFound({ groupResource: resource, group: '', plural: resource, name });
    const uid = object.metadata.uid ?? '';
    if (typeof ref.uid === 'string' && ref.uid !== '' && ref.uid !== uid)
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${kind} ${JSON.stringify(name)}: the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
        { name, kind },
      );
    if (kind === 'Node') return { node: { name, uid } };
    if (kind === 'Secret') return { secret: { name, uid } };
    const nodeName = isRecord(object.spec) && typeof object.spec.nodeName === 'string' ? object.spec.nodeName : '';
    const node = nodeName ? this.store.get('nodes', undefined, nodeName) : undefined;
    return { pod: { name, uid }, ...(node ? { node: { name: nodeName, uid: node.metadata.uid ?? '' } } : {}) };
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
    const boundTo = this.bound(namespace, name, spec.boundObjectRef);
    const claims: Claims & Record<string, unknown> = {
      iss: issuer,
      aud: audiences,
      iat: issuedAt,
      nbf: issuedAt,
      exp: expires,
      jti: randomUUID(),
      sub: `system:serviceaccount:${namespace}:${name}`,
      'kubernetes.io': { namespace, serviceaccount: { name, uid }, ...boundTo },
    };
    return {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: { name, namespace, creationTimestamp: timestamp(new Date(this.now())) },
      spec: { audiences, expirationSeconds: seconds, boundObjectRef: isRecord(spec.boundObjectRef) ? spec.boundObjectRef : null },
      status: { token: this.jwt(claims), expirationTimestamp: timestamp(new Date(expires * 1000)) },
    };
  }

  /** The ServiceAccount a token of this server names, while it is unexpired and that account exists; else undefined (401). */
  authenticate(token: string): UserInfo | undefined {
    const [header, payload, signature, ...rest] = token.split('.');
    if (header === undefined || payload === undefined || signature === undefined || rest.length > 0) return undefined;
    const expected = this.sign(`${header}.${payload}`);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Claims | LegacyClaims;
    let namespace: string;
    let account: Reference;
    const extra: Record<string, string[]> = {};
    if ('iss' in claims && claims.iss === legacyIssuer) {
      // Good while its Secret holds it (legacy.go's validator reads the Secret): deleting the Secret revokes it.
      namespace = claims['kubernetes.io/serviceaccount/namespace'];
      const secret = this.store.get('secrets', namespace, claims['kubernetes.io/serviceaccount/secret.name']);
      const held = isRecord(secret?.data) ? secret.data.token : undefined;
      if (held !== Buffer.from(token).toString('base64')) return undefined;
      account = {
        name: claims['kubernetes.io/serviceaccount/service-account.name'],
        uid: claims['kubernetes.io/serviceaccount/service-account.uid'],
      };
    } else {
      const bound = claims as Claims;
      if (bound.exp * 1000 <= this.now()) return undefined;
      const { pod, node, secret } = bound['kubernetes.io'];
      namespace = bound['kubernetes.io'].namespace;
      account = bound['kubernetes.io'].serviceaccount;
      // Good while what it is bound to exists, by uid (jwt.go's validator looks each up).
      if (pod && this.store.get('pods', namespace, pod.name)?.metadata.uid !== pod.uid) return undefined;
      if (node && this.store.get('nodes', undefined, node.name)?.metadata.uid !== node.uid) return undefined;
      if (secret && this.store.get('secrets', namespace, secret.name)?.metadata.uid !== secret.uid) return undefined;
      if (pod) Object.assign(extra, { [extraKey('pod-name')]: [pod.name], [extraKey('pod-uid')]: [pod.uid] });
      if (node) Object.assign(extra, { [extraKey('node-name')]: [node.name], [extraKey('node-uid')]: [node.uid] });
      extra[extraKey('credential-id')] = [`JTI=${bound.jti}`];
    }
    const stored = this.store.get('serviceaccounts', namespace, account.name);
    if (!stored || stored.metadata.uid !== account.uid) return undefined;
    return {
      name: `system:serviceaccount:${namespace}:${account.name}`,
      uid: account.uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, authenticatedGroup],
      ...(Object.keys(extra).length > 0 ? { extra } : {}),
    };
  }
}
