/**
 * Acting as another user (`kubectl --as`, `--as-group`), as kube-apiserver's impersonation filter does
 * it: the Impersonate-User, Impersonate-Group, Impersonate-Uid and Impersonate-Extra-* headers each need
 * the verb `impersonate` on what they name (users, groups, serviceaccounts for a
 * `system:serviceaccount:<ns>:<name>` user; uids and userextras in authentication.k8s.io), else 403;
 * then the request is authorized as the user impersonated: a service account without groups given gets
 * its fixed ones, and every user `system:authenticated`. So `kubectl auth can-i --as <user>` answers for
 * that user, not for the admin asking.
 */
import { type UserInfo, authenticatedGroup } from './authentication';
import type { Decision } from './rbac';
import type { RequestInfo } from './request-info';
import { type ApiError, badRequest, forbidden } from './status';

const serviceAccountUser = /^system:serviceaccount:([^:]+):([^:]+)$/;

/** Go's %v of a v1.ObjectReference: its seven fields, in order, between braces. */
const reference = (kind: string, name: string, apiVersion = '', fieldPath = '') =>
  `{${[kind, '', name, '', apiVersion, '', fieldPath].join(' ')}}`;

/**
 * Groups, extras or a uid without a user: a 400 naming what was asked, in the order asked
 * (impersonation.go buildImpersonationRequests since Kubernetes 1.35; a bare 500 before it).
 */
function withoutUser(groups: string[], extras: [string, string[] | undefined][], uid: string): ApiError {
  const authentication = 'authentication.k8s.io/v1';
  const requested = [
    ...groups.map((g) => reference('Group', g)),
    ...extras.flatMap(([header, values]) =>
      (values ?? []).map((v) => reference('UserExtra', v, authentication, header.slice('impersonate-extra-'.length))),
    ),
    ...(uid === '' ? [] : [reference('UID', uid, authentication)]),
  ];
  return badRequest(`requested [${requested.join(' ')}] without impersonating a user`);
}

/** What `requestor` acts as for this request (`requestor` itself without impersonation headers), or the 403 that refuses it. */
export function impersonated(
  requestor: UserInfo,
  headers: NodeJS.Dict<string[]>,
  authorize: (user: UserInfo, request: RequestInfo) => Decision,
): UserInfo {
  const name = headers['impersonate-user']?.[0] ?? '';
  const groups = headers['impersonate-group'] ?? [];
  const uid = headers['impersonate-uid']?.[0] ?? '';
  const extras = Object.entries(headers).filter(([header]) => header.startsWith('impersonate-extra-'));
  if (name === '') {
    if (groups.length > 0 || uid !== '' || extras.length > 0) throw withoutUser(groups, extras, uid);
    return requestor;
  }
  const check = (resource: string, objectName: string, options: { group?: string; namespace?: string; subresource?: string } = {}) => {
    const request: RequestInfo = {
      resourceRequest: true,
      verb: 'impersonate',
      group: options.group ?? '',
      version: '',
      namespace: options.namespace ?? '',
      resource,
      subresource: options.subresource ?? '',
      name: objectName,
      path: '',
    };
    const decision = authorize(requestor, request);
    if (!decision.allowed) throw forbidden(requestor.name, request, decision.reason);
  };
  const serviceAccount = serviceAccountUser.exec(name);
  if (serviceAccount) check('serviceaccounts', serviceAccount[2]!, { namespace: serviceAccount[1] });
  else check('users', name);
  for (const group of groups) check('groups', group);
  if (uid !== '') check('uids', uid, { group: 'authentication.k8s.io' });
  for (const [header, values] of extras)
    for (const value of values ?? [])
      check('userextras', value, { group: 'authentication.k8s.io', subresource: header.slice('impersonate-extra-'.length) });

  const acting =
    serviceAccount && groups.length === 0 ? ['system:serviceaccounts', `system:serviceaccounts:${serviceAccount[1]}`] : [...groups];
  if (!acting.includes(authenticatedGroup) && !acting.includes('system:unauthenticated')) acting.push(authenticatedGroup);
  // The extra's key is the header's rest, percent-decoded (impersonation.go unescapes it): `Impersonate-Extra-a%2fb` is `a/b`.
  const extra = Object.fromEntries(
    extras.map(([header, values]) => [decodeURIComponent(header.slice('impersonate-extra-'.length)), values ?? []]),
  );
  return { name, uid, groups: acting, ...(extras.length > 0 ? { extra } : {}) };
}
