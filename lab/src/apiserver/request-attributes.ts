/**
 * What a request asks to do, in the terms authorization speaks (kube-apiserver's RequestInfo), as
 * request-info.ts derives it; its own module so that status.ts, which words a refusal from it, and
 * request-info.ts, which parses selectors whose errors are statuses, do not import each other.
 */
export type RequestInfo =
  | {
      resourceRequest: true;
      verb: string;
      group: string;
      version: string;
      /** '' for a cluster-scoped request (also a list across all namespaces). */
      namespace: string;
      resource: string;
      subresource: string;
      /** '' when the request names no object. */
      name: string;
      path: string;
    }
  | { resourceRequest: false; verb: string; path: string };
