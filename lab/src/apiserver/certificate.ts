/**
 * A self-signed serving certificate for 127.0.0.1 (and localhost), made at start: kubectl (client-go's
 * clientcmd) sends a kubeconfig's bearer token only over TLS, so the server speaks HTTPS and its
 * kubeconfig carries this certificate as the cluster's CA. Made by `openssl req -x509` (Debian's
 * openssl): an EC P-256 key and a v3 certificate with subjectAltName, serverAuth and CA:TRUE (it is its
 * own root). node:crypto can sign but cannot build a certificate.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Certificate {
  /** PEM. */
  cert: string;
  /** PEM (PKCS#8). */
  key: string;
}

/** A certificate for `ips` and `dnsNames`, valid for a year. */
export function selfSignedCertificate(commonName: string, ips: string[], dnsNames: string[]): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'strait-certificate-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    const altNames = [...ips.map((ip) => `IP:${ip}`), ...dnsNames.map((dns) => `DNS:${dns}`)].join(',');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-sha256',
        '-days',
        '365',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        `subjectAltName=${altNames}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,digitalSignature,keyCertSign',
        '-addext',
        'extendedKeyUsage=serverAuth',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
