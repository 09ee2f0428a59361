/**
 * Where the metrics and health server of `strait agent` and `strait controller` listens
 * (--metrics-address, --metrics-port), or that there is none (port 0). Checked with the other flags,
 * before anything runs.
 */
import { isIP } from 'node:net';
import { InputError } from '../errors';

export interface MetricsListen {
  address: string;
  port: number;
  /** What set the address (a flag, HOST_IP or the default), named when it cannot be listened on. */
  addressFrom: '--metrics-address' | 'HOST_IP' | 'default';
}

export interface MetricsFlags {
  metricsAddress?: string;
  metricsPort?: string;
}

export const defaultMetricsPort = { agent: 9972, controller: 9973 } as const;

/** Loopback unless told otherwise: metrics are not published on every network the host is on by default. */
export const defaultMetricsAddress = '127.0.0.1';

function parsePort(value: string): number {
  const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(port >= 0 && port <= 65535))
    throw new InputError('--metrics-port', value, 'must be a TCP port from 1 to 65535, or 0 for no metrics server');
  return port;
}

/**
 * The address is --metrics-address, else HOST_IP (a DaemonSet sets it from status.hostIP, so Prometheus
 * scrapes each node's agent on the node's address), else 127.0.0.1; every address (0.0.0.0, ::) only
 * when given. Undefined: port 0, no server.
 */
export function parseMetricsListen(
  flags: MetricsFlags,
  env: { HOST_IP?: string | undefined },
  defaultPort: number,
): MetricsListen | undefined {
  const port = parsePort(flags.metricsPort ?? String(defaultPort));
  const [addressFrom, address] =
    flags.metricsAddress !== undefined
      ? (['--metrics-address', flags.metricsAddress] as const)
      : env.HOST_IP
        ? (['HOST_IP', env.HOST_IP] as const)
        : (['default', defaultMetricsAddress] as const);
  if (isIP(address) === 0)
    throw new InputError(
      addressFrom,
      address,
      'must be an IP address to listen on, like 127.0.0.1 or 192.0.2.7 (0.0.0.0 for every address)',
    );
  return port === 0 ? undefined : { address, port, addressFrom };
}
