import * as nodeCrypto from 'node:crypto';
import { createHash } from 'node:crypto';
import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { EVENT_INFO, isGuardrailEventType, isGuardName } from '../events.js';
import { isSerializableTimestamp, parseIsoMs } from '../iso.js';
import { canonicalJson, isPlainObject, isWellFormed } from '../json.js';
import { validatePlanId } from '../ids.js';
import { AuditEntry, type AuditEntryJson } from './AuditEntry.js';

import { GENESIS, isHashHex } from './checkpoint.js';

export {
  GENESIS,
  isHashHex,
  createCheckpoint,
  exportCheckpoints,
  parseCheckpoints,
  signCheckpoint,
  verifyCheckpoint,
  type Checkpoint,
} from './checkpoint.js';

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
    // String(n) writes a finite number as JSON does, at half the cost of JSON.stringify.
    const value =
      typeof v === 'number' && Number.isFinite(v)
        ? String(v)
        : (typeof v === 'string' && isWellFormed(v)) || typeof v === 'boolean' || v === null
          ? JSON.stringify(v)
          : canonicalJson(v, `entry.details.${key}`);
    text += i === 0 ? `${quotedKey(key)}:${value}` : `,${quotedKey(key)}:${value}`;
  }
  return `${text}}`;
}

/** Details keys quoted as JSON: the same few names come back in entry after entry. */
const quotedKeys = new Map<string, string>();

function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    // Bounded, and short names only: details written by callers, or read back by a verifier, may use any.
    if (key.length <= 64 && quotedKeys.size < 1_000) quotedKeys.set(key, quoted);
  }
  return quoted;
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
    // Most often the hash made last, which is known to be one: the pattern need not read it again.
    if (previous.hash !== lastMade && !isHashHex(previous.hash)) {
      invalid('previous.hash', '64 lowercase hex digits', previous.hash);
    }
    seq = previous.seq + 1;
    prev = previous.hash;
  }
  const audit = entry instanceof AuditEntry ? entry : entryFromJson(entry);
  const json = Object.freeze(audit.toJSON());
  const hash = entryHash(planId, seq, prev, json);
  lastMade = hash;
  return Object.freeze({ planId, seq, prev, hash, entry: json });
}

/** The hash {@link chainEntry} made last: a well-formed one, and most often the next entry's previous. */
let lastMade = GENESIS;

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
