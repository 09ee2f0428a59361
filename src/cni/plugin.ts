/**
 * One CNI call of `strait-ipam` (spec 1.0.0 and 1.1.0, an IPAM plugin): checks the environment and the
 * network configuration, forwards the call to the node's pool IPAM service and prints its answer as the
 * spec's result or error. Nothing is decided here.
 */
import { type ValidatorTypes, checkCompiled } from '../api/compiled-validators';
import { InputError } from '../errors';
import { IpamError } from '../pool-ipam/ipam-error';
import { type CniErrorCode, cniErrorCodes, ipamPaths } from '../pool-ipam/protocol';
import { type CniCommand, attachmentEnvironment, cniCommand, podArguments } from './environment';
import {
  type NetworkConfig,
  decodeNetworkConfig,
  latestCniVersion,
  parseNetworkConfig,
  prevResultAddresses,
  validAttachments,
  versionResult,
} from './network-config';
import { callService } from './service-client';

export interface PluginOutcome {
  /** What to print on stdout: a result, an error, or nothing (CHECK, DEL, GC and STATUS succeed silently). */
  stdout: string;
  exitCode: 0 | 1;
}

/** `answer` read as the service's answer `name` (its schema: src/api/pool-ipam-protocol-schema.ts), or the problem with it. */
function answerOf<N extends 'poolIpamAddResponse' | 'poolIpamStatusResponse'>(name: N, answer: unknown): ValidatorTypes[N] | InputError {
  try {
    return checkCompiled(name, answer, 'answer');
  } catch (err) {
    if (err instanceof InputError) return err;
    throw err;
  }
}

/** ADD's result for an IPAM plugin (spec "Delegated plugins (IPAM)"): no interfaces, no interface index. */
function addResult(cniVersion: string, answer: unknown, socket: string): object {
  const answered = answerOf('poolIpamAddResponse', answer);
  if (answered instanceof InputError) {
    throw new IpamError(
      cniErrorCodes.ioFailure,
      `the pool IPAM service on ${socket} answered ADD without a usable result (${answered.message}): ${JSON.stringify(answer).slice(0, 300)}`,
    );
  }
  return {
    cniVersion,
    ips: answered.ips.map((ip) => ({ address: ip.address, ...(ip.gateway === undefined ? {} : { gateway: ip.gateway }) })),
    routes: answered.routes.map((route) => ({ dst: route.dst, ...(route.gw === undefined ? {} : { gw: route.gw }) })),
    dns: {},
  };
}

async function call(command: Exclude<CniCommand, 'VERSION'>, env: NodeJS.ProcessEnv, config: NetworkConfig): Promise<object | undefined> {
  const { socket, name: network, options } = config;
  const unavailableCode: CniErrorCode = command === 'STATUS' ? cniErrorCodes.pluginNotAvailable : cniErrorCodes.tryAgainLater;
  const post = (path: string, body: object) => callService({ socket, method: 'POST', path, body, unavailableCode });
  switch (command) {
    case 'ADD':
    case 'CHECK': {
      const { containerId, ifname, netns } = attachmentEnvironment(env, command);
      const pod = podArguments(env, command);
      const request = {
        containerId,
        ifname,
        network,
        netns: netns!,
        podNamespace: pod.podNamespace!,
        podName: pod.podName!,
        ...(pod.podUid ? { podUid: pod.podUid } : {}),
        options,
      };
      if (command === 'ADD') return addResult(config.cniVersion, await post(ipamPaths.add, request), socket);
      const addresses = prevResultAddresses(config.raw);
      await post(ipamPaths.check, addresses === undefined ? request : { ...request, prevResultAddresses: addresses });
      return undefined;
    }
    case 'DEL': {
      const { containerId, ifname } = attachmentEnvironment(env, command);
      await post(ipamPaths.del, { containerId, ifname, network, ...podArguments(env, command) });
      return undefined;
    }
    case 'GC':
      await post(ipamPaths.gc, { network, validAttachments: validAttachments(config.raw) });
      return undefined;
    case 'STATUS': {
      const status = answerOf(
        'poolIpamStatusResponse',
        await callService({ socket, method: 'GET', path: ipamPaths.status, unavailableCode }),
      );
      if (status instanceof InputError || !status.ready) {
        const why = status instanceof InputError ? `its answer is no status (${status.message})` : (status.message ?? 'no reason given');
        throw new IpamError(cniErrorCodes.pluginNotAvailable, `the pool IPAM service on ${socket} is not ready: ${why}`);
      }
      return undefined;
    }
  }
}

export async function runPlugin(env: NodeJS.ProcessEnv, readStdin: () => Promise<string>): Promise<PluginOutcome> {
  // Errors carry the configuration's version once it is known to be one we speak.
  let cniVersion = latestCniVersion;
  try {
    const command = cniCommand(env);
    if (command === 'VERSION') return { stdout: `${JSON.stringify(versionResult(await readStdin()))}\n`, exitCode: 0 };
    const decoded = decodeNetworkConfig(await readStdin());
    cniVersion = decoded.cniVersion;
    const result = await call(command, env, parseNetworkConfig(decoded.raw, cniVersion));
    return { stdout: result === undefined ? '' : `${JSON.stringify(result)}\n`, exitCode: 0 };
  } catch (err) {
    const error =
      err instanceof IpamError
        ? { code: err.code, msg: err.message, ...(err.details === undefined ? {} : { details: err.details }) }
        : { code: cniErrorCodes.ioFailure, msg: err instanceof Error ? err.message : String(err) };
    return { stdout: `${JSON.stringify({ cniVersion, ...error })}\n`, exitCode: 1 };
  }
}
