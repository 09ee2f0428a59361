/**
 * `strait-lab apiserver`: one API server as a process, one per lab cluster, its objects in an etcd (the
 * lab starts one per cluster: a restarted server finds its objects). It listens, writes a
 * kubeconfig for its cluster (atomically, with the admin token), prints where it listens as one JSON
 * line, and serves until SIGTERM or SIGINT, then closes and exits 0. Tokens come from files (the
 * admin's, and optionally a token auth file of more users, kube-apiserver's CSV), never from the command
 * line (where `ps` shows them) and never into logs. Started again on the same etcd with the same
 * certificate and signing key (files), it is the same server to its clients, the tokens it issued good.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InputError } from '../../../src/errors';
import { createLogger } from '../../../src/log';
import { writeKubeconfig } from './kubeconfig';
import { parseTokenAuthFile } from './authentication';
import { readCrdDirectory } from './resource-types';
import { startApiServer } from './server';

export interface ApiServerProcessOptions {
  /** `127.0.0.1:0`: host and port (0: any free port). */
  listen: string;
  /** Absent: a random token, written only to the kubeconfig. */
  tokenFile?: string;
  /** `token,user,uid,"group1,group2"` per line (kube-apiserver's --token-auth-file). */
  tokenAuthFile?: string;
  kubeconfig: string;
  /** The cluster's name in the kubeconfig (its context, cluster and user). */
  cluster: string;
  /** A directory of CRD files installed before the first request; none: a new cluster's server. */
  crds?: string;
  watchCacheSize: number;
  /** The etcd's client URL (kube-apiserver's --etcd-servers). */
  etcdServers: string;
  /** How often etcd's history is compacted. */
  compactionIntervalMs: number;
  /** The serving certificate and its key (PEM); absent: a new self-signed one. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** The key ServiceAccount tokens are signed with; absent: a random one. */
  serviceAccountKeyFile?: string;
}

function listenAddress(listen: string): { host: string; port: number } {
  const match = /^(.+):(\d{1,5})$/.exec(listen);
  if (!match || Number(match[2]) > 65535) throw new InputError('--listen', listen, 'expected host:port, like 127.0.0.1:0');
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
}

/** Runs until a signal; resolves after the server closed. */
export async function runApiServerProcess(options: ApiServerProcessOptions, say: (line: string) => void): Promise<void> {
  const { host, port } = listenAddress(options.listen);
  const token = options.tokenFile === undefined ? randomBytes(32).toString('hex') : readFileSync(options.tokenFile, 'utf8').trim();
  if (token === '') throw new InputError('--token-file', options.tokenFile, 'the file is empty');
  const logger = createLogger('apiserver');
  const path = options.tokenAuthFile;
  const users =
    path === undefined
      ? []
      : parseTokenAuthFile(readFileSync(path, 'utf8'), path, (message) => logger.warn({ tokenAuthFile: path }, message));
  if (users.some((u) => u.token === token)) throw new InputError('--token-auth-file', path, 'a user has the token of --token-file');
  const { tlsCertFile: certFile, tlsPrivateKeyFile: keyFile, serviceAccountKeyFile: saKeyFile } = options;
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new InputError(
      certFile === undefined ? '--tls-private-key-file' : '--tls-cert-file',
      certFile ?? keyFile,
      'give both TLS files or neither',
    );
  const certificate =
    certFile === undefined || keyFile === undefined
      ? undefined
      : { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  const serviceAccountKey = saKeyFile === undefined ? undefined : readFileSync(saKeyFile);
  if (serviceAccountKey?.length === 0) throw new InputError('--service-account-key-file', saKeyFile, 'the file is empty');
  const server = await startApiServer({
    token,
    users,
    crds: options.crds === undefined ? [] : readCrdDirectory(options.crds),
    host,
    port,
    watchCacheSize: options.watchCacheSize,
    storage: { etcd: options.etcdServers },
    ...(certificate ? { certificate } : {}),
    ...(serviceAccountKey ? { serviceAccountKey } : {}),
    compactionIntervalMs: options.compactionIntervalMs,
    logger,
  });
  writeKubeconfig(options.kubeconfig, [{ name: options.cluster, server: server.url, ca: server.ca, token }]);
  logger.info({ url: server.url, kubeconfig: options.kubeconfig }, 'serving');
  say(JSON.stringify({ url: server.url, port: server.port, kubeconfig: options.kubeconfig }));
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  logger.info({ signal }, 'stopping');
  await server.close();
}
