/**
 * Strait's IPv4 and IPv6 routes as desired state. A reconcile owns exactly one scope: a whole table Strait owns
 * (18952), or the routes of protocol 252 in the main table; nothing outside it is read into the diff, so
 * nothing outside it is changed. A route's identity is its destination and metric, as in the kernel.
 */
import { InputError } from '../errors';
import { type Changes, type Diff, type Identity, applyDiff, diffByIdentity } from './desired-state';
import { integer, ipAddress, ipPrefix, linkName } from './kernel-values';
import { type NativeRoute, type NetlinkChange, applyNetlink, dumpRoutes } from './rtnetlink';

export const straitRouteProtocol = 252;

export interface Route {
  /** Canonical network; 0.0.0.0/0 (::/0) for the default route. */
  dst: string;
  /** An unreachable route rejects what it matches (ICMP net unreachable) and has neither dev nor via. */
  type?: 'unreachable';
  dev?: string;
  via?: string;
  /** 0 when absent, as in the kernel (IPv6: the kernel's default 1024). */
  metric?: number;
  /** The gateway is reached on `dev` without a connected route to it (a next hop across a tunnel). */
  onlink?: boolean;
}

export type RouteScope = { table: number } | { protocol: typeof straitRouteProtocol };

/** Validates a desired route and puts it in the form the kernel shows. */
export function route(value: Route, field = 'route'): Route {
  const checked: Route = { dst: ipPrefix(`${field}.dst`, value.dst) };
  if (value.type !== undefined) {
    if (value.type !== 'unreachable')
      throw new InputError(`${field}.type`, value.type, 'the only route type besides unicast is unreachable');
    if (value.dev !== undefined || value.via !== undefined || value.onlink)
      throw new InputError(field, value, 'an unreachable route has no dev, via or onlink');
    checked.type = 'unreachable';
    if (value.metric !== undefined && integer(`${field}.metric`, value.metric, 0, 2 ** 32 - 1)) checked.metric = value.metric;
    return checked;
  }
  if (value.dev !== undefined) checked.dev = linkName(`${field}.dev`, value.dev);
  if (value.via !== undefined) {
    checked.via = ipAddress(`${field}.via`, value.via);
    // An IPv4 route may take an IPv6 gateway (RFC 5549: RTA_VIA, Linux 5.2), not the reverse (the kernel
    // refuses RTA_VIA for IPv6).
    if (isIpv6(checked.dst) && !isIpv6(checked.via))
      throw new InputError(`${field}.via`, value.via, `an IPv6 route takes no IPv4 gateway (dst ${checked.dst})`);
  }
  if (value.metric !== undefined && integer(`${field}.metric`, value.metric, 0, 2 ** 32 - 1)) checked.metric = value.metric;
  if (value.onlink) {
    if (!checked.dev || !checked.via) throw new InputError(`${field}.onlink`, value.onlink, 'an onlink route needs both dev and via');
    checked.onlink = true;
  }
  if (!checked.dev && !checked.via) throw new InputError(field, value, 'a route needs a device (dev) or a gateway (via)');
  return checked;
}

// main, local, default and unspec: a table scope owns every route in its table, so never one of these.
const sharedTables = new Set([0, 253, 254, 255]);

function checkScope(scope: RouteScope): void {
  if ('table' in scope) {
    integer('scope.table', scope.table, 1, 2 ** 32 - 1);
    if (sharedTables.has(scope.table))
      throw new InputError(
        'scope.table',
        scope.table,
        'a table shared with the system (main, local, default) is not owned by Strait; use {protocol: 252}',
      );
  } else if (scope.protocol !== straitRouteProtocol) {
    throw new InputError('scope.protocol', scope.protocol, `only Strait's protocol ${straitRouteProtocol} is owned`);
  }
}

export const routeIdentity: Identity<Route> = {
  key: (r) => `${r.dst} metric ${r.metric ?? 0}`,
  // The kernel picks the device of a route given only a gateway. A route of another type (blackhole,
  // prohibit) reads with neither dev nor via, so it never matches.
  same: (current, desired) =>
    current.type === desired.type &&
    current.via === desired.via &&
    (current.onlink ?? false) === (desired.onlink ?? false) &&
    (desired.type !== undefined || (desired.dev === undefined ? current.dev !== undefined : current.dev === desired.dev)),
};

const isIpv6 = (text: string) => text.includes(':');

/** The kernel's metric of a route the model says is 0: IPv6 turns 0 into 1024 (IP6_RT_PRIO_USER). */
const kernelMetric = (r: Route) => r.metric ?? (isIpv6(r.dst) ? 1024 : 0);

// rtnetlink's route types (RTN_*) the model knows.
const rtnUnicast = 1;
const rtnUnreachable = 7;
const mainTable = 254;

const scopeTable = (scope: RouteScope) => ('table' in scope ? scope.table : mainTable);

/** Pure: the model of a route as rtnetlink reports it; a route of another type (blackhole...) has only dst and metric. */
function routeFromKernel(r: NativeRoute): Route {
  const read: Route = { dst: r.dst };
  if (r.type === rtnUnicast) {
    if (r.dev) read.dev = r.dev;
    if (r.gateway) read.via = r.gateway;
    if (r.onlink) read.onlink = true;
  } else if (r.type === rtnUnreachable) {
    read.type = 'unreachable';
  }
  if (r.metric && r.metric !== kernelMetric({ dst: r.dst })) read.metric = r.metric;
  return read;
}

/** The IPv4 and IPv6 routes in `scope`. */
function readRoutes(scope: RouteScope, netns?: string): Route[] {
  checkScope(scope);
  const routes = [...dumpRoutes(scopeTable(scope), netns, 4), ...dumpRoutes(scopeTable(scope), netns, 6)];
  return ('table' in scope ? routes : routes.filter((r) => r.protocol === straitRouteProtocol)).map(routeFromKernel);
}

/**
 * The destinations among `prefixes` (either family) that the main table already routes with another
 * protocol at the family's default metric (0; IPv6's 1024): Strait's route would replace it, so a caller
 * leaves them alone.
 */
export function routedElsewhere(prefixes: readonly string[], netns?: string): string[] {
  if (prefixes.length === 0) return [];
  const foreign = new Set(
    [...dumpRoutes(mainTable, netns, 4), ...dumpRoutes(mainTable, netns, 6)]
      .filter((r) => r.protocol !== straitRouteProtocol && (r.metric ?? 0) === kernelMetric({ dst: r.dst }))
      .filter((r) => r.dst !== '0.0.0.0/0' && r.dst !== '::/0')
      .map((r) => r.dst),
  );
  return prefixes.map((p, i) => ipPrefix(`prefixes[${i}]`, p)).filter((p) => foreign.has(p));
}

/** Pure: the changes that make the routes in a scope exactly `desired` (validated). */
export function diffRoutes(current: readonly Route[], desired: readonly Route[]): Diff<Route> {
  return diffByIdentity(
    current,
    desired.map((r, i) => route(r, `desired[${i}]`)),
    routeIdentity,
  );
}

function routeChange(op: 'add' | 'replace', r: Route, scope: RouteScope): NetlinkChange {
  return { kind: 'route', op, ...r, metric: kernelMetric(r), table: scopeTable(scope), protocol: straitRouteProtocol };
}

/**
 * Makes the routes in `scope` exactly `desired`, in one batch of rtnetlink changes. New routes use `add`,
 * so in the main table a foreign route with the same destination and metric makes the add fail (EEXIST)
 * instead of being taken over.
 */
export function reconcileRoutes(desired: readonly Route[], scope: RouteScope, netns?: string): Changes<Route> {
  checkScope(scope);
  const diff = diffRoutes(readRoutes(scope, netns), desired);
  return applyDiff(diff, {
    add: (r) => [routeChange('add', r, scope)],
    change: (_from, to) => [routeChange('replace', to, scope)],
    // In the main table the protocol restricts the delete to our own route.
    remove: (r) => [
      {
        kind: 'route',
        op: 'del',
        dst: r.dst,
        metric: kernelMetric(r),
        table: scopeTable(scope),
        ...('table' in scope ? {} : { protocol: straitRouteProtocol }),
      },
    ],
    run: (changes) => applyNetlink(changes, netns),
  });
}
