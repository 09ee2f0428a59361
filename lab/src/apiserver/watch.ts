/**
 * A watch request's answer: a stream of `{"type": ..., "object": ...}` lines, as kube-apiserver writes
 * them. From resourceVersion unset or "0" the current objects come first as ADDED; from a version, the
 * changes after it, or one ERROR event with a 410 Expired Status when the watch cache no longer has
 * them (the client relists). Selectors apply to events: an object modified into the selection is ADDED,
 * out of it DELETED. BOOKMARKs (when asked for) carry the newest resourceVersion; timeoutSeconds ends
 * the stream.
 */
import type { ServerResponse } from 'node:http';
import type { KubeObject } from './kube-object';
import { type ResourceType, apiVersionOf, groupResource } from './resource-types';
import type { Selector } from './selectors';
import { badRequest, expired } from './status';
import type { Change, Store } from './store';
import type { WatchCache } from './watch-cache';

export interface WatchRequest {
  type: ResourceType;
  /** Undefined: every namespace. */
  namespace: string | undefined;
  matches: Selector;
  resourceVersion: string | undefined;
  allowBookmarks: boolean;
  /** sendInitialEvents=true: the current objects first, then a bookmark marking their end. */
  sendInitialEvents: boolean;
  timeoutSeconds: number | undefined;
  /** How an object is written in an event (as is, or as a one-row Table for kubectl get -w). */
  encode: (object: KubeObject) => unknown;
}

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export class Watches {
  /** Open streams, ended when the server closes. */
  private readonly open = new Set<() => void>();

  constructor(
    private readonly store: Store,
    private readonly cache: WatchCache,
    private readonly bookmarkIntervalMs: number,
  ) {}

  /** Answers `res` with the stream of `request`; returns when it is set up (it runs until closed or timed out). */
  serve(res: ServerResponse, request: WatchRequest): void {
    const { type, encode } = request;
    let from: number | undefined;
    if (request.resourceVersion && request.resourceVersion !== '0') {
      from = Number(request.resourceVersion);
      if (!/^\d+$/.test(request.resourceVersion)) throw badRequest(`invalid resource version: ${JSON.stringify(request.resourceVersion)}`);
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const send = (eventType: EventType, object: unknown) => res.write(`${JSON.stringify({ type: eventType, object })}\n`);
    const inScope = (o: KubeObject) =>
      (request.namespace === undefined || o.metadata.namespace === request.namespace) && request.matches(o);
    const bookmark = (annotations?: Record<string, string>) =>
      send('BOOKMARK', {
        kind: type.kind,
        apiVersion: apiVersionOf(type),
        metadata: { resourceVersion: String(this.store.resourceVersion), ...(annotations ? { annotations } : {}) },
      });

    const deliver = (change: Change) => {
      const now = inScope(change.object);
      if (change.type !== 'MODIFIED') {
        if (now) send(change.type, encode(change.object));
        return;
      }
      const before = change.previous !== undefined && inScope(change.previous);
      if (now) send(before ? 'MODIFIED' : 'ADDED', encode(change.object));
      else if (before) send('DELETED', encode(change.object));
    };

    if (from === undefined) {
      for (const object of this.store.list(groupResource(type), request.namespace).filter(request.matches)) send('ADDED', encode(object));
      if (request.sendInitialEvents && request.allowBookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' });
      from = this.store.resourceVersion;
    }
    const watching = this.cache.watch(groupResource(type), from, deliver);
    if ('oldest' in watching) {
      send('ERROR', expired(`too old resource version: ${from} (${watching.oldest})`).status());
      res.end();
      return;
    }

    const timers: NodeJS.Timeout[] = [];
    const end = () => {
      watching.stop();
      for (const timer of timers) clearTimeout(timer);
      this.open.delete(end);
      res.end();
    };
    this.open.add(end);
    res.on('close', end);
    if (request.allowBookmarks) timers.push(setInterval(() => bookmark(), this.bookmarkIntervalMs));
    if (request.timeoutSeconds !== undefined) timers.push(setTimeout(end, request.timeoutSeconds * 1000));
  }

  /** Ends every open stream (the server is closing). */
  closeAll(): void {
    for (const end of [...this.open]) end();
  }
}
