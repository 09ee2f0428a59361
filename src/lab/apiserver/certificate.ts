/**
 * A self-signed serving certificate for 127.0.0.1 (and localhost), made at start: kubectl (client-go's
 * clientcmd) sends a kubeconfig's bearer token only over TLS, so the server speaks HTTPS and its
 * kubeconfig carries this certificate as the cluster's CA. Built with node:crypto and a little DER: an
 * EC P-256 key, a v3 certificate with subjectAltName, serverAuth and CA:TRUE (it is its own root).
 */
import { type KeyObject, generateKeyPairSync, randomBytes, sign } from 'node:crypto';

export interface Certificate {
  /** PEM. */
  cert: string;
  /** PEM (PKCS#8). */
  key: string;
}

const tag = (type: number, content: Buffer): Buffer => {
  const n = content.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([type]), length, content]);
};
const sequence = (...items: Buffer[]) => tag(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tag(0x31, Buffer.concat(items));
const explicit = (n: number, content: Buffer) => tag(0xa0 + n, content);
const octets = (content: Buffer) => tag(0x04, content);
const bits = (content: Buffer) => tag(0x03, Buffer.concat([Buffer.from([0]), content]));
const utf8 = (text: string) => tag(0x0c, Buffer.from(text));
const boolean = (value: boolean) => tag(0x01, Buffer.from([value ? 0xff : 0]));

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const base128 = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return tag(0x06, Buffer.from(bytes));
}

/** UTCTime (years before 2050) as X.509 wants it: YYMMDDHHMMSSZ. */
const utcTime = (date: Date) => tag(0x17, Buffer.from(`${date.toISOString().slice(2, 19).replace(/[-T:]/g, '')}Z`));

const ecdsaWithSha256 = sequence(oid('1.2.840.10045.4.3.2'));

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octets(value));
}

/** A certificate for `ips` and `dnsNames`, valid from an hour ago for a year. */
export function selfSignedCertificate(commonName: string, ips: string[], dnsNames: string[]): Certificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }) as { privateKey: KeyObject; publicKey: KeyObject };
  const name = sequence(set(sequence(oid('2.5.4.3'), utf8(commonName))));
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x3f) | 0x40; // a positive INTEGER in minimal form (DER)
  const altNames = sequence(
    ...ips.map((ip) => tag(0x87, Buffer.from(ip.split('.').map(Number)))),
    ...dnsNames.map((dns) => tag(0x82, Buffer.from(dns))),
  );
  const tbs = sequence(
    explicit(0, tag(0x02, Buffer.from([2]))),
    tag(0x02, serial),
    ecdsaWithSha256,
    name,
    sequence(utcTime(new Date(now - 3600_000)), utcTime(new Date(now + 365 * 86400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(
      extension('2.5.29.19', true, sequence(boolean(true))),
      // digitalSignature and keyCertSign.
      extension('2.5.29.15', true, tag(0x03, Buffer.from([0x02, 0x84]))),
      extension('2.5.29.37', false, sequence(oid('1.3.6.1.5.5.7.3.1'))),
      extension('2.5.29.17', false, altNames),
    )),
  );
  const der = sequence(tbs, ecdsaWithSha256, bits(sign('sha256', tbs, privateKey)));
  const pem = (label: string, body: Buffer) => `-----BEGIN ${label}-----\n${body.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END ${label}-----\n`;
  return { cert: pem('CERTIFICATE', der), key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}
