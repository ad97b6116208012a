import * as nodeCrypto from 'node:crypto';
import { createHash, createPrivateKey, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { isPlainText } from '../unicode.js';
import { EVENT_INFO, isGuardrailEventType, isGuardName } from '../guardrails/events.js';
import { parseIsoMs } from '../iso.js';
import { canonicalJson, isPlainObject, isWellFormed } from '../json.js';
import { MAX_PLAN_ID_LENGTH, validatePlanId } from '../ids.js';
import { AuditEntry, isSerializableTimestamp, type AuditEntryJson } from './AuditEntry.js';

/**
 * One entry of a plan's durable audit log. `hash` commits to the plan id, the position, the previous
 * entry's hash and the entry itself, so each entry vouches for every entry before it.
 */
export interface ChainedEntry {
  readonly planId: string;
  /** 1-based and consecutive within a plan. */
  readonly seq: number;
  /** The hash of entry `seq - 1`, or {@link GENESIS} for the first entry. */
  readonly prev: string;
  /** {@link entryHash} of this entry: 64 lowercase hex digits. */
  readonly hash: string;
  readonly entry: AuditEntryJson;
}

/**
 * A stored row of a plan's log that cannot be decoded into an entry (damaged text, an unknown event type):
 * its chain fields as stored and why it cannot be read. A verifier reports it as `MALFORMED_ENTRY`, and the
 * rows around it still link to its stored hash.
 */
export interface MalformedEntry {
  readonly planId: string;
  readonly seq: number;
  readonly prev: string;
  readonly hash: string;
  readonly malformed: string;
}

/** The `prev` of a plan's first entry, and the head of an empty log. */
export const GENESIS = '0'.repeat(64);

const HEX_HASH = /^[0-9a-f]{64}$/;

/** True for a SHA-256 digest written as 64 lowercase hex digits. */
export function isHashHex(value: unknown): value is string {
  return typeof value === 'string' && HEX_HASH.test(value);
}

// crypto.hash (Node >= 20.12) skips building a Hash object and is about twice as fast for short input.
const oneShotHash = (nodeCrypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string })
  .hash;
const sha256Hex: (text: string) => string =
  typeof oneShotHash === 'function'
    ? (text) => oneShotHash('sha256', text, 'hex')
    : (text) => createHash('sha256').update(text).digest('hex');

const ENTRY_KEYS: ReadonlySet<string> = new Set([
  'details',
  'event_type',
  'guard_name',
  'result',
  'timestamp',
]);

/** For each event type, the canonical text of its event_type, guard_name and result fields when they agree. */
const EVENT_FIELDS: ReadonlyMap<string, { guardName: string; result: string; text: string }> = new Map(
  Object.entries(EVENT_INFO).map(([eventType, info]) => [
    eventType,
    {
      guardName: info.guardName,
      result: info.result,
      text: `"event_type":${JSON.stringify(eventType)},"guard_name":${JSON.stringify(info.guardName)},"result":${JSON.stringify(info.result)}`,
    },
  ]),
);

/**
 * canonicalJson(entry), written directly when the entry has the audit entry's five keys, a well-formed
 * timestamp string and event_type, guard_name and result that agree: in a verifier, sorting and joining
 * keys costs more than hashing. Anything else takes the general path; both give the same text, or the same
 * error, for every input (a property test checks this).
 */
function canonicalEntry(entry: unknown): string {
  if (isPlainObject(entry)) {
    const keys = Object.keys(entry);
    const et = entry['event_type'];
    const ts = entry['timestamp'];
    const known = typeof et === 'string' ? EVENT_FIELDS.get(et) : undefined;
    if (
      keys.length === 5 &&
      keys.every((k) => ENTRY_KEYS.has(k)) &&
      known !== undefined &&
      known.guardName === entry['guard_name'] &&
      known.result === entry['result'] &&
      typeof ts === 'string' &&
      isWellFormed(ts)
    ) {
      return `{"details":${canonicalDetails(entry['details'])},${known.text},"timestamp":${JSON.stringify(ts)}}`;
    }
  }
  return canonicalJson(entry, 'entry');
}

/**
 * canonicalJson(details), with the first level written here: canonicalJson builds an error path for every
 * value it visits, which is most of its cost on the small flat objects details usually are. Nested and
 * non-finite values, and strings or keys that are not well-formed, go to canonicalJson, so the text (or
 * the error) is the same. Its nesting limit counts from the details, as AuditEntry's does, so every entry
 * AuditEntry accepts can be hashed.
 */
function canonicalDetails(details: unknown): string {
  if (!isPlainObject(details)) return canonicalJson(details, 'entry.details');
  const keys = Object.keys(details).sort();
  let text = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (!isWellFormed(key)) return canonicalJson(details, 'entry.details');
    const v = details[key];
    const value =
      (typeof v === 'string' && isWellFormed(v)) ||
      typeof v === 'boolean' ||
      v === null ||
      (typeof v === 'number' && Number.isFinite(v))
        ? JSON.stringify(v)
        : canonicalJson(v, `entry.details.${key}`);
    text += i === 0 ? `${JSON.stringify(key)}:${value}` : `,${JSON.stringify(key)}:${value}`;
  }
  return `${text}}`;
}

/**
 * @internal the hash function of one plan, for hashing many of its entries: the plan id is encoded once.
 * Takes unknown values so a verifier can hash whatever a store returned.
 * @throws GuardrailValidationError when the values are not plain, finite JSON
 */
export function entryHasher(planId: string): (seq: unknown, prev: unknown, entry: unknown) => string {
  const plan = typeof planId === 'string' && isWellFormed(planId) ? JSON.stringify(planId) : null;
  return (seq, prev, entry) => {
    // The keys in canonical order: entry < plan < prev < seq.
    if (plan !== null && Number.isSafeInteger(seq) && typeof prev === 'string' && isWellFormed(prev)) {
      return sha256Hex(
        `{"entry":${canonicalEntry(entry)},"plan":${plan},"prev":${JSON.stringify(prev)},"seq":${String(seq)}}`,
      );
    }
    return sha256Hex(canonicalJson({ plan: planId, seq, prev, entry }));
  };
}

/**
 * SHA-256 (lowercase hex) of `canonicalJson({ plan: planId, seq, prev, entry })` (RFC 8785). The plan id
 * and the position are hashed, so an entry copied to another plan or another place no longer verifies; the
 * text is canonical, so the order the entry's keys were written in does not matter.
 * @example entryHash('plan-1', 1, GENESIS, entry.toJSON())
 */
export function entryHash(planId: string, seq: number, prev: string, entry: AuditEntryJson): string {
  return entryHasher(planId)(seq, prev, entry);
}

/**
 * Appends `entry` after `previous` (null for a plan's first entry): the next seq, the link to the
 * previous hash and this entry's hash. A wire-form entry is validated like one read from metadata and
 * copied (its timestamp rewritten in canonical UTC form), so later changes to the caller's object cannot
 * reach the chain.
 * @example
 * const first = chainEntry('plan-1', null, entry);        // seq 1, prev GENESIS
 * const second = chainEntry('plan-1', first, nextEntry);  // seq 2, prev first.hash
 * @throws GuardrailValidationError for a bad plan id, previous link or entry
 */
export function chainEntry(
  planId: string,
  previous: { readonly seq: number; readonly hash: string } | null,
  entry: AuditEntry | AuditEntryJson,
): ChainedEntry {
  validatePlanId(planId);
  let seq = 1;
  let prev = GENESIS;
  if (previous !== null) {
    if (typeof previous !== 'object') invalid('previous', 'an object with seq and hash, or null', previous);
    if (!Number.isSafeInteger(previous.seq) || previous.seq < 1 || previous.seq >= Number.MAX_SAFE_INTEGER) {
      invalid('previous.seq', 'an integer >= 1 and below Number.MAX_SAFE_INTEGER', previous.seq);
    }
    if (!isHashHex(previous.hash)) invalid('previous.hash', '64 lowercase hex digits', previous.hash);
    seq = previous.seq + 1;
    prev = previous.hash;
  }
  const audit = entry instanceof AuditEntry ? entry : entryFromJson(entry);
  const json = Object.freeze(audit.toJSON());
  return Object.freeze({ planId, seq, prev, hash: entryHash(planId, seq, prev, json), entry: json });
}

function entryFromJson(raw: unknown): AuditEntry {
  if (!isPlainObject(raw)) {
    throw new GuardrailValidationError(
      'entry',
      `entry must be an AuditEntry or its JSON, got ${describeValue(raw)}`,
    );
  }
  const o = objectWithKeys(raw, 'entry', [...ENTRY_KEYS]);
  for (const key of ['event_type', 'guard_name', 'result', 'timestamp']) {
    if (!Object.hasOwn(o, key)) throw new GuardrailValidationError(`entry.${key}`, `entry.${key} is missing`);
  }
  const eventType = o['event_type'];
  if (!isGuardrailEventType(eventType)) invalid('entry.event_type', 'a known event type', eventType);
  const guardName = o['guard_name'];
  if (!isGuardName(guardName)) invalid('entry.guard_name', 'a known guard name', guardName);
  const ts = o['timestamp'];
  const ms = typeof ts === 'string' ? parseIsoMs(ts) : NaN;
  if (!isSerializableTimestamp(ms)) invalid('entry.timestamp', 'an ISO-8601 date-time with a time zone', ts);
  const details = o['details'] === undefined ? {} : (o['details'] as Record<string, unknown>);
  const audit = AuditEntry.create({ eventType, guardName, timestamp: ms, details });
  if (o['result'] !== audit.result) {
    invalid('entry.result', `"${audit.result}" for event_type "${eventType}"`, o['result']);
  }
  return audit;
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
