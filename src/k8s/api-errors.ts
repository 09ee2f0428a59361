/**
 * The HTTP status of a failed API call, as @kubernetes/client-node reports it: an ApiException carries
 * `code`, a failed watch `statusCode`. Other errors (connection refused, reset) have none.
 */

export function apiStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
  if (typeof code === 'number') return code;
  if (typeof statusCode === 'number') return statusCode;
  return undefined;
}

/** One line for a log: the status and the API server's message, or the error's own (an ApiException's message holds the response headers too). */
export function apiErrorText(err: unknown): string {
  const status = apiStatus(err);
  const body = (err as { body?: unknown } | null)?.body;
  let message: unknown = body;
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: unknown }).message ?? body;
    } catch {
      // not JSON: the body as it is
    }
  } else if (typeof body === 'object' && body !== null) {
    message = (body as { message?: unknown }).message;
  }
  if (status !== undefined) return `${status}${typeof message === 'string' ? ` ${message}` : ''}`;
  return err instanceof Error ? err.message : String(err);
}
