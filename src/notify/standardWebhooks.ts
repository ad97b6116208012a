// Signing webhook deliveries as the Standard Webhooks specification (standardwebhooks.com) says, so that
// a receiver can check with any of its libraries that a delivery came from leash, unaltered and recent.
import { createHmac, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { GuardrailValidationError } from '../errors.js';

const PREFIX = 'whsec_';
/** Fewest and most bytes a secret's key may have: the specification's bounds. */
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The headers a signed delivery carries. */
export interface WebhookHeaders {
  /** The notification's id: the same on every attempt, so a receiver can drop a repeat. */
  readonly 'webhook-id': string;
  /** When the attempt was signed, in whole seconds since the epoch. */
  readonly 'webhook-timestamp': string;
  /** `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`. */
  readonly 'webhook-signature': string;
}

/**
 * A webhook signing secret (`whsec_` and the base64 of its key). The key is held privately: the secret
 * prints, serializes and inspects as `[secret]`, so logging a target never logs its key.
 */
export class WebhookSecret {
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
  }

  /**
   * Reads a secret. `field` names where it came from (a policy key, an option) in the error, which never
   * repeats the secret; `what` says it in the message when it needs more words (`the environment variable X`).
   * @throws GuardrailValidationError naming `field` for anything but `whsec_` and the base64 of 24 to 64 bytes
   */
  static parse(secret: unknown, field: string, what = field): WebhookSecret {
    const rule = `a Standard Webhooks secret: "${PREFIX}" and the base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes`;
    const refuse = (got: string): never => {
      throw new GuardrailValidationError(field, `${what} must be ${rule}, got ${got}`);
    };
    if (typeof secret !== 'string') return refuse(secret === undefined ? 'nothing' : typeof secret);
    if (!secret.startsWith(PREFIX)) return refuse(`a value without the "${PREFIX}" prefix`);
    const encoded = secret.slice(PREFIX.length);
    if (encoded === '' || !BASE64.test(encoded)) return refuse(`"${PREFIX}" and text that is not base64`);
    const key = Buffer.from(encoded, 'base64');
    if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
      return refuse(`a key of ${key.length} bytes`);
    }
    return new WebhookSecret(key);
  }

  /** A new secret of 32 random bytes, as `whsec_…`: for a receiver and leash to share. */
  static generate(): string {
    return `${PREFIX}${randomBytes(32).toString('base64')}`;
  }

  /** The headers of a delivery of `body` with idempotency id `id`, signed at `timestampSeconds`. */
  sign(id: string, timestampSeconds: number, body: string): WebhookHeaders {
    const timestamp = String(Math.floor(timestampSeconds));
    const mac = createHmac('sha256', this.#key).update(`${id}.${timestamp}.${body}`).digest('base64');
    return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` };
  }

  toJSON(): string {
    return '[secret]';
  }

  toString(): string {
    return '[secret]';
  }

  [inspect.custom](): string {
    return 'WebhookSecret [secret]';
  }
}
