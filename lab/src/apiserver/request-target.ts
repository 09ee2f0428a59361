/**
 * A request's target (`/api/v1/namespaces/default/configmaps?limit=5`) read as kube-apiserver's Go
 * net/http reads it, before any handler runs:
 * - the path is unescaped whole (url.ParseRequestURI → URL.setPath → unescape(p, encodePath)), so
 *   `%2F` is a `/` that separates segments, and bytes that are not UTF-8 stay bytes (U+FFFD here);
 *   a `%` not followed by two hex digits fails the parse, and the server answers 400 itself
 *   (net/http server.go: "400 Bad Request", text/plain, Connection: close; no Status, no handler);
 *   its segments are what is between slashes once those at either end are trimmed, empty ones kept
 *   (requestinfo.go splitPath, go-restful's tokenizePath);
 * - the query is parsed by url.ParseQuery as URL.Query() does, errors ignored: a pair with a bad
 *   escape or a `;` is dropped, `+` is a space.
 */

/** The target as the handlers see it; undefined when Go's parser refuses it (the bare 400). */
export interface RequestTarget {
  /** Unescaped. */
  path: string;
  query: URLSearchParams;
}

const badEscape = /%(?![0-9A-Fa-f]{2})/;

/** Go's unescape of a valid escaping: each `%XX` is a byte, the rest its UTF-8; the bytes then read as UTF-8. */
function unescape(text: string): string {
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of text.matchAll(/%([0-9A-Fa-f]{2})/g)) {
    parts.push(Buffer.from(text.slice(last, m.index), 'utf8'), Buffer.from([parseInt(m[1]!, 16)]));
    last = m.index + 3;
  }
  parts.push(Buffer.from(text.slice(last), 'utf8'));
  return Buffer.concat(parts).toString('utf8');
}

function parseQuery(raw: string): URLSearchParams {
  const query = new URLSearchParams();
  for (const pair of raw.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const at = pair.indexOf('=');
    const [key, value] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
    if (badEscape.test(key) || badEscape.test(value)) continue;
    query.append(unescape(key.replace(/\+/g, ' ')), unescape(value.replace(/\+/g, ' ')));
  }
  return query;
}

/** `req.url` as Go reads an origin-form target; undefined for what it refuses (a bad escape in the path, no leading `/`). */
export function requestTarget(raw: string): RequestTarget | undefined {
  const at = raw.indexOf('?');
  const [path, query] = at < 0 ? [raw, ''] : [raw.slice(0, at), raw.slice(at + 1)];
  if (!path.startsWith('/') || badEscape.test(path)) return undefined;
  return { path: unescape(path), query: parseQuery(query) };
}

/** The path's segments as kube-apiserver's RequestInfoFactory and router split it. */
export function pathSegments(path: string): string[] {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? [] : trimmed.split('/');
}
