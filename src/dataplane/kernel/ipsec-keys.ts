/**
 * IPsec key material of a peering, derived (HKDF-SHA256) from one per-peering secret that both clusters
 * hold. Each direction gets its own SPI and AEAD key, and both clusters compute the same two directions,
 * so no key exchange is needed. Secret bytes live only inside `Secret`, which prints as '[redacted]'.
 */
import { hkdfSync } from 'node:crypto';
import { inspect } from 'node:util';
import { InputError } from '../../errors';

const redacted = '[redacted]';

/** Sensitive bytes that cannot reach a log, an error or JSON by accident; `reveal` is the only way out. */
export class Secret {
  readonly #bytes: Buffer;

  constructor(bytes: Buffer) {
    this.#bytes = Buffer.from(bytes);
  }

  get length(): number {
    return this.#bytes.length;
  }

  /** A copy, so a caller cannot alter the secret. */
  reveal(): Buffer {
    return Buffer.from(this.#bytes);
  }

  toString(): string {
    return redacted;
  }

  toJSON(): string {
    return redacted;
  }

  [inspect.custom](): string {
    return redacted;
  }
}

const minSecretBytes = 32;

/** A per-peering secret, raw or base64 (a Kubernetes Secret's encoding). Errors give its length, never its value. */
export function peeringSecret(field: string, value: Buffer | string): Secret {
  let bytes: Buffer;
  if (typeof value === 'string') {
    const text = value.trim();
    bytes = Buffer.from(text, 'base64');
    // Buffer.from skips characters that are not base64; re-encoding shows whether anything was dropped.
    if (text === '' || bytes.toString('base64').replace(/=+$/, '') !== text.replace(/=+$/, '')) {
      throw new InputError(field, `${value.length} characters`, 'the per-peering secret must be base64');
    }
  } else {
    bytes = value;
  }
  if (bytes.length < minSecretBytes) {
    throw new InputError(field, `${bytes.length} bytes`, `the per-peering secret must be at least ${minSecretBytes} bytes`);
  }
  return new Secret(bytes);
}

/** rfc4106(gcm(aes)) with a 128-bit key: 16 key bytes followed by the 4-byte salt, 128-bit ICV. */
export const aeadAlgorithm = 'rfc4106(gcm(aes))';
const aeadKeyBytes = 20;
export const aeadIcvBits = 128;

/** SPIs 1..255 are reserved (RFC 4303), 0 means none. */
const minSpi = 256;

export interface DirectionKeys {
  /** Sending cluster id. */
  from: string;
  /** Receiving cluster id. */
  to: string;
  spi: number;
  key: Secret;
}

export interface PeeringKeys {
  /** `a -> b` and `b -> a` for the cluster ids given, whatever their order. */
  forward: DirectionKeys;
  reverse: DirectionKeys;
}

/** Output keying material for one HKDF `info`; 4 SPI bytes then the AEAD key. */
export type Expand = (info: string) => Buffer;

const okmBytes = 4 + aeadKeyBytes;

function hkdfExpand(secret: Secret, low: string, high: string): Expand {
  // The salt binds the unordered pair (sorted, JSON so no id can forge a separator); info binds the direction.
  const salt = Buffer.from(`strait-ipsec-v1 ${JSON.stringify([low, high])}`, 'utf8');
  return (info) => Buffer.from(hkdfSync('sha256', secret.reveal(), salt, info, okmBytes));
}

/**
 * The two directions between `low` and `high` (low < high). Cluster ids are DNS labels, so `->` cannot
 * occur in one and `${from}->${to}` names a direction unambiguously. A reserved SPI, or the same SPI both
 * ways, is derived again with a counter; the second direction is the one redrawn on a tie, so both
 * clusters resolve it the same way.
 */
export function deriveDirections(expand: Expand, low: string, high: string): [DirectionKeys, DirectionKeys] {
  const draw = (from: string, to: string, avoid?: number): DirectionKeys => {
    for (let counter = 0; ; counter++) {
      const okm = expand(counter === 0 ? `${from}->${to}` : `${from}->${to}#${counter}`);
      const spi = okm.readUInt32BE(0);
      if (spi >= minSpi && spi !== avoid) return { from, to, spi, key: new Secret(okm.subarray(4)) };
    }
  };
  const first = draw(low, high);
  return [first, draw(high, low, first.spi)];
}

export function derivePeeringKeys(secret: Secret, a: string, b: string): PeeringKeys {
  if (a === b) throw new InputError('clusterId', b, 'a peering joins two different clusters');
  const [low, high] = a < b ? [a, b] : [b, a];
  const [lowToHigh, highToLow] = deriveDirections(hkdfExpand(secret, low, high), low, high);
  return a === low ? { forward: lowToHigh, reverse: highToLow } : { forward: highToLow, reverse: lowToHigh };
}
