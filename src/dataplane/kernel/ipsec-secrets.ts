/**
 * Where a gateway finds the per-peering IPsec secrets: never in the spec, the controller's files, argv
 * or a log. The standalone agent reads a directory with one file per peer cluster id, holding the
 * secret in base64, readable by its owner only; a Kubernetes Secret mounted as a volume has the same
 * shape (one file per key, `defaultMode: 0400`), so it is read by the same code.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../errors';
import { type Secret, peeringSecret } from './ipsec-keys';

export interface PeeringSecrets {
  /** Where the secrets come from, for messages. */
  readonly source: string;
  /** The secret of the peering with `peer`; throws an InputError naming the file (never its content). */
  secretFor(peer: string): Secret;
  /** Changes whenever `secretFor(peer)` may give something else (cheap: no read of the secret). */
  version(peer: string): string;
}

/** Cluster ids are DNS labels, so a file name made of one cannot leave the directory. */
const clusterIdPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function secretsDirectory(dir: string): PeeringSecrets {
  return {
    source: dir,
    secretFor(peer) {
      if (!clusterIdPattern.test(peer)) throw new InputError('peer', peer, 'a cluster id is a DNS label');
      const path = join(dir, peer);
      let mode: number;
      try {
        const stat = statSync(path);
        if (!stat.isFile()) throw new InputError(path, 'not a regular file', `the IPsec secret of the peering with ${peer} must be a file`);
        mode = stat.mode & 0o777;
      } catch (err) {
        if (err instanceof InputError) throw err;
        const code = (err as NodeJS.ErrnoException).code;
        throw new InputError(
          path,
          code ?? 'unreadable',
          `no IPsec secret for the peering with ${peer}: put the peering's base64 secret (at least 32 bytes) there, mode 0600`,
        );
      }
      // A secret others can read is no longer a secret: refuse it rather than use it.
      if ((mode & 0o077) !== 0)
        throw new InputError(path, `mode 0${mode.toString(8)}`, 'an IPsec secret file must be readable by its owner only (chmod 600)');
      return peeringSecret(path, readFileSync(path, 'utf8'));
    },
    version(peer) {
      // A Secret volume update swaps a symlink: the file's identity and times change with it.
      const stat = statSync(join(dir, peer), { throwIfNoEntry: false });
      return stat ? `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.mode}` : 'absent';
    },
  };
}
