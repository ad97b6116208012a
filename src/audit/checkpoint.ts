import { createPrivateKey, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { isPlainText } from '../unicode.js';
import { isSerializableTimestamp, parseIsoMs } from '../iso.js';
import { canonicalJson, isPlainObject } from '../json.js';
import { MAX_PLAN_ID_LENGTH } from '../ids.js';

// Checkpoints of a plan's log: signed statements of its size and last hash, kept apart from it.

/** The `prev` of a plan's first entry, and the head of an empty log. */
export const GENESIS = '0'.repeat(64);

const HEX_HASH = /^[0-9a-f]{64}$/;

/** True for a SHA-256 digest written as 64 lowercase hex digits. */
export function isHashHex(value: unknown): value is string {
  return typeof value === 'string' && HEX_HASH.test(value);
}

/**
 * A signed statement "plan `plan` had `size` entries and its last entry's hash was `head` at `ts`", like
 * a transparency log's signed tree head. Kept apart from the log (exported, mailed, committed elsewhere),
 * it lets a verifier detect entries removed from the tail and a forged entry whose followers were all
 * re-hashed.
 */
export interface Checkpoint {
  readonly plan: string;
  /** Number of entries covered: the seq of the entry whose hash is `head`; 0 for an empty log. */
  readonly size: number;
  /** Hash of entry `size`, or {@link GENESIS} when size is 0. */
  readonly head: string;
  /** When the checkpoint was taken (ISO-8601). */
  readonly ts: string;
  /** Base64 Ed25519 signature over `canonicalJson({ plan, size, head, ts })`. */
  readonly signature?: string;
}

const CHECKPOINT_KEYS = ['plan', 'size', 'head', 'ts', 'signature'];
const BASE64_ED25519 = /^[A-Za-z0-9+/]{85}[AQgw]==$/;

/**
 * A checkpoint of a log whose last entry is `last` (null for an empty log), taken at `at` (epoch ms).
 * Unsigned: pass it to {@link signCheckpoint}.
 * @example signCheckpoint(createCheckpoint('plan-1', lastEntry, clock.now()), privateKeyPem)
 */
export function createCheckpoint(
  planId: string,
  last: { readonly seq: number; readonly hash: string } | null,
  at: number,
): Checkpoint {
  if (!isSerializableTimestamp(at)) invalid('at', 'epoch milliseconds within the years 0000-9999', at);
  return validateCheckpoint(
    {
      plan: planId,
      size: last === null ? 0 : last.seq,
      head: last === null ? GENESIS : last.hash,
      ts: new Date(at).toISOString(),
    },
    'checkpoint.',
  );
}

/**
 * @internal checks every field of a checkpoint and returns a frozen copy holding only its fields.
 * `prefix` starts each error's field, e.g. `line 3.` or `checkpoints[2].`.
 */
export function validateCheckpoint(raw: unknown, prefix: string): Checkpoint {
  const name = prefix.endsWith('.') ? prefix.slice(0, -1) : prefix;
  if (!isPlainObject(raw)) {
    throw new GuardrailValidationError(
      name,
      `${name} must be a checkpoint object, got ${describeValue(raw)}`,
    );
  }
  const o = objectWithKeys(raw, name, CHECKPOINT_KEYS, prefix);
  const plan = o['plan'];
  if (
    typeof plan !== 'string' ||
    plan.length === 0 ||
    plan.length > MAX_PLAN_ID_LENGTH ||
    !isPlainText(plan)
  ) {
    invalid(
      `${prefix}plan`,
      `a non-empty string of at most ${MAX_PLAN_ID_LENGTH} characters without control characters`,
      plan,
    );
  }
  const size = o['size'];
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    invalid(`${prefix}size`, 'an integer >= 0', size);
  }
  const head = o['head'];
  if (!isHashHex(head)) invalid(`${prefix}head`, '64 lowercase hex digits', head);
  if (size === 0 && head !== GENESIS) invalid(`${prefix}head`, 'GENESIS (64 zeros) when size is 0', head);
  const ts = o['ts'];
  if (typeof ts !== 'string' || !isSerializableTimestamp(parseIsoMs(ts))) {
    invalid(`${prefix}ts`, 'an ISO-8601 date-time with a time zone', ts);
  }
  const signature = o['signature'];
  if (signature === undefined) return Object.freeze({ plan, size: size + 0, head, ts });
  if (typeof signature !== 'string' || !BASE64_ED25519.test(signature)) {
    invalid(`${prefix}signature`, 'a base64 Ed25519 signature (88 characters)', signature);
  }
  return Object.freeze({ plan, size: size + 0, head, ts, signature });
}

function signedBytes(cp: Checkpoint): Buffer {
  return Buffer.from(canonicalJson({ plan: cp.plan, size: cp.size, head: cp.head, ts: cp.ts }), 'utf8');
}

function ed25519Key(key: unknown, field: string, type: 'private' | 'public'): KeyObject {
  const rule = `an Ed25519 ${type} key, as a KeyObject or a PEM string`;
  let k: KeyObject;
  if (typeof key === 'string') {
    try {
      k = type === 'private' ? createPrivateKey(key) : createPublicKey(key);
    } catch (e) {
      // The text is not quoted: it may be a private key.
      throw new GuardrailValidationError(field, `${field} must be ${rule}, got a string that is not one`, {
        cause: e,
      });
    }
  } else if (key instanceof KeyObject) {
    // A private key holds its public half; verifying with it is allowed.
    k = type === 'public' && key.type === 'private' ? createPublicKey(key) : key;
  } else {
    invalid(field, rule, key);
  }
  if (k.type !== type || k.asymmetricKeyType !== 'ed25519') {
    const kind = k.asymmetricKeyType === undefined ? k.type : `${k.type} ${k.asymmetricKeyType}`;
    throw new GuardrailValidationError(field, `${field} must be ${rule}, got a ${kind} key`);
  }
  return k;
}

/** @internal `privateKey` as an Ed25519 private KeyObject; `field` names it in errors. */
export function toPrivateKey(privateKey: KeyObject | string, field = 'privateKey'): KeyObject {
  return ed25519Key(privateKey, field, 'private');
}

/** @internal `publicKey` as an Ed25519 public KeyObject. */
export function toPublicKey(publicKey: KeyObject | string): KeyObject {
  return ed25519Key(publicKey, 'publicKey', 'public');
}

/**
 * A copy of `cp` signed with an Ed25519 private key (any signature it held is replaced).
 * @example
 * const { privateKey, publicKey } = generateKeyPairSync('ed25519');
 * const signed = signCheckpoint(cp, privateKey);
 * @throws GuardrailValidationError for a malformed checkpoint or a key that is not a private Ed25519 key
 */
export function signCheckpoint(cp: Checkpoint, privateKey: KeyObject | string): Checkpoint {
  const valid = validateCheckpoint(cp, 'checkpoint.');
  const key = ed25519Key(privateKey, 'privateKey', 'private');
  const signature = sign(null, signedBytes(valid), key).toString('base64');
  return Object.freeze({ plan: valid.plan, size: valid.size, head: valid.head, ts: valid.ts, signature });
}

/** @internal verifies a checkpoint already validated, with a key already parsed. */
export function checkpointSignatureValid(cp: Checkpoint, key: KeyObject): boolean {
  if (cp.signature === undefined) return false;
  try {
    return verify(null, signedBytes(cp), key, Buffer.from(cp.signature, 'base64'));
  } catch {
    return false;
  }
}

/**
 * True when `cp` carries a valid Ed25519 signature by the holder of `publicKey`'s private key. An
 * unsigned or malformed checkpoint is false, not an error.
 * @throws GuardrailValidationError when `publicKey` is not an Ed25519 key
 */
export function verifyCheckpoint(cp: Checkpoint, publicKey: KeyObject | string): boolean {
  const key = toPublicKey(publicKey);
  let valid: Checkpoint;
  try {
    valid = validateCheckpoint(cp, 'checkpoint.');
  } catch {
    return false;
  }
  return checkpointSignatureValid(valid, key);
}

/**
 * Checkpoints as JSON Lines: one canonical JSON object per line, each line ending in a newline.
 * @throws GuardrailValidationError naming the first malformed checkpoint (`checkpoints[2].head`)
 */
export function exportCheckpoints(list: readonly Checkpoint[]): string {
  if (!Array.isArray(list)) invalid('checkpoints', 'an array of checkpoints', list);
  let text = '';
  for (let i = 0; i < list.length; i++) {
    text += `${canonicalJson(validateCheckpoint(list[i], `checkpoints[${i}].`))}\n`;
  }
  return text;
}

/**
 * Reads checkpoints written by {@link exportCheckpoints}. Blank lines are skipped and CRLF line ends are
 * accepted; anything else malformed is refused, field by field: a key that is not a checkpoint field would
 * not be covered by the signature.
 * @throws GuardrailValidationError whose field names the 1-based line and the field (`line 3.size`)
 */
export function parseCheckpoints(text: string): Checkpoint[] {
  if (typeof text !== 'string') invalid('text', 'a string of JSON Lines', text);
  const out: Checkpoint[] = [];
  for (const [i, rawLine] of text.split('\n').entries()) {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    if (line.trim() === '') continue;
    const where = `line ${i + 1}`;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (e) {
      throw new GuardrailValidationError(where, `${where} is not JSON: ${(e as Error).message}`, {
        cause: e,
      });
    }
    out.push(validateCheckpoint(raw, `${where}.`));
  }
  return out;
}
