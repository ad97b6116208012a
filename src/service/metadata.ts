import { AuditEntry, type AuditEntryJson } from '../audit/AuditEntry.js';
import { AuditTrail } from '../audit/AuditTrail.js';
import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { AutonomyGuardrails, type GuardrailsJson } from '../guardrails/AutonomyGuardrails.js';
import { EVENT_INFO, isGuardrailEventType } from '../events.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { isSerializableTimestamp, parseIsoMs } from '../iso.js';
import { copyJsonObject, isPlainObject, type JsonObject } from '../json.js';
import { integer, strict } from '../validation.js';

/** The key under which leash keeps its state in a plan's metadata. */
export const METADATA_KEY = 'autonomy_guardrails';
/** The wire format version this release writes and reads. */
export const SCHEMA_VERSION = 1;

/** Caps applied to metadata read from outside, so hostile or corrupt input cannot exhaust memory. */
export interface MetadataLimits {
  /** Audit entries in one trail (and the largest `max_entries` accepted). */
  maxAuditEntries: number;
  /** Names in `required_confirmations`. */
  maxRequiredConfirmations: number;
  /** Characters in one operation name, after normalization. */
  maxOperationNameLength: number;
  /** UTF-8 bytes of one entry's `details` as JSON. */
  maxDetailsBytes: number;
  /** UTF-8 bytes of the whole `autonomy_guardrails` value as JSON. */
  maxTotalBytes: number;
}

export const DEFAULT_METADATA_LIMITS: Readonly<MetadataLimits> = Object.freeze({
  maxAuditEntries: 10_000,
  maxRequiredConfirmations: 256,
  maxOperationNameLength: 128,
  maxDetailsBytes: 4096,
  maxTotalBytes: 8 * 1024 * 1024,
});

const limit = integer(1).optional();

/** The `metadataLimits` option: a partial set of limits, the defaults filled in. */
export const metadataLimitsOption = strict({
  maxAuditEntries: limit,
  maxRequiredConfirmations: limit,
  maxOperationNameLength: limit,
  maxDetailsBytes: limit,
  maxTotalBytes: limit,
}).transform((given) => {
  const limits: MetadataLimits = { ...DEFAULT_METADATA_LIMITS };
  for (const key of Object.keys(limits) as (keyof MetadataLimits)[]) limits[key] = given[key] ?? limits[key];
  return limits;
});

/** Wire form of a plan's state (DESIGN.md §3). */
export interface GuardrailsMetadata {
  schema_version: typeof SCHEMA_VERSION;
  guardrails: GuardrailsJson;
  audit_trail: {
    max_entries: number;
    allowed_count: number;
    denied_count: number;
    entries: AuditEntryJson[];
  };
}

/** Serializes guardrails and their audit trail to the wire form. */
export function serializeState(guardrails: AutonomyGuardrails, trail: AuditTrail): GuardrailsMetadata {
  return {
    schema_version: SCHEMA_VERSION,
    guardrails: guardrails.toJSON(),
    audit_trail: {
      max_entries: trail.maxEntries,
      allowed_count: trail.allowedCount,
      denied_count: trail.deniedCount,
      entries: trail.entries.map((e) => e.toJSON()),
    },
  };
}

const ROOT = METADATA_KEY;
const TRAIL = `${ROOT}.audit_trail`;
const EMPTY_DETAILS: JsonObject = Object.freeze({});

/**
 * Reads a plan's state from untrusted metadata (the object holding the `autonomy_guardrails` key).
 * Everything is checked: types, ranges, limits, and that counts and results agree with the entries.
 * @throws GuardrailValidationError naming the path of the first problem found.
 */
export function parseState(
  metadata: unknown,
  limits: MetadataLimits,
): { guardrails: AutonomyGuardrails; trail: AuditTrail } {
  if (!isPlainObject(metadata)) {
    throw new GuardrailValidationError(
      'metadata',
      `metadata must be an object, got ${describeValue(metadata)}`,
    );
  }
  if (!Object.hasOwn(metadata, ROOT)) {
    throw new GuardrailValidationError(ROOT, `metadata has no "${ROOT}" key`);
  }
  const root = requireObject(metadata[ROOT], ROOT, ['schema_version', 'guardrails', 'audit_trail']);
  if (root['schema_version'] !== SCHEMA_VERSION) {
    throw new GuardrailValidationError(
      `${ROOT}.schema_version`,
      `${ROOT}.schema_version must be ${SCHEMA_VERSION} (the version this release reads), got ${describeValue(root['schema_version'])}`,
    );
  }
  const rawGuardrails = requireKey(root, 'guardrails', ROOT);
  const guardrails = AutonomyGuardrails.parse(rawGuardrails, `${ROOT}.guardrails.`, true, limits);
  const trail = parseTrail(requireKey(root, 'audit_trail', ROOT), limits);
  // Every value in `root` has now been checked to be bounded plain JSON, so serializing it is safe.
  const bytes = Buffer.byteLength(JSON.stringify(root), 'utf8');
  if (bytes > limits.maxTotalBytes) {
    throw new GuardrailValidationError(
      ROOT,
      `${ROOT} must be at most ${limits.maxTotalBytes} bytes of JSON, got ${bytes}`,
    );
  }
  return { guardrails, trail };
}

function parseTrail(raw: unknown, limits: MetadataLimits): AuditTrail {
  const o = requireObject(raw, TRAIL, ['max_entries', 'allowed_count', 'denied_count', 'entries']);
  const maxEntries = intField(
    requireKey(o, 'max_entries', TRAIL),
    `${TRAIL}.max_entries`,
    1,
    false,
  ) as number;
  if (maxEntries > limits.maxAuditEntries)
    invalid(`${TRAIL}.max_entries`, `at most ${limits.maxAuditEntries}`, maxEntries);
  const allowed = intField(requireKey(o, 'allowed_count', TRAIL), `${TRAIL}.allowed_count`, 0, false);
  const denied = intField(requireKey(o, 'denied_count', TRAIL), `${TRAIL}.denied_count`, 0, false);
  const entries = requireKey(o, 'entries', TRAIL);
  if (!Array.isArray(entries)) {
    throw new GuardrailValidationError(
      `${TRAIL}.entries`,
      `${TRAIL}.entries must be an array, got ${describeValue(entries)}`,
    );
  }
  if (entries.length > maxEntries) {
    invalid(`${TRAIL}.entries`, `at most max_entries (${maxEntries}) long`, entries);
  }
  const trail = new AuditTrail({ maxEntries });
  for (let i = 0; i < entries.length; i++)
    trail.add(parseEntry(entries[i], `${TRAIL}.entries[${i}]`, limits));
  if (allowed !== trail.allowedCount) {
    throw new GuardrailValidationError(
      `${TRAIL}.allowed_count`,
      `${TRAIL}.allowed_count must equal the allowed entries (${trail.allowedCount}), got ${allowed}`,
    );
  }
  if (denied !== trail.deniedCount) {
    throw new GuardrailValidationError(
      `${TRAIL}.denied_count`,
      `${TRAIL}.denied_count must equal the denied entries (${trail.deniedCount}), got ${denied}`,
    );
  }
  return trail;
}

function parseEntry(raw: unknown, path: string, limits: MetadataLimits): AuditEntry {
  const o = requireObject(raw, path, ['event_type', 'guard_name', 'result', 'timestamp', 'details']);
  const eventType = requireKey(o, 'event_type', path);
  if (!isGuardrailEventType(eventType)) {
    throw new GuardrailValidationError(
      `${path}.event_type`,
      `${path}.event_type must be a known event type, got ${describeValue(eventType)}`,
    );
  }
  const info = EVENT_INFO[eventType];
  const guardName = requireKey(o, 'guard_name', path);
  if (guardName !== info.guardName) {
    throw new GuardrailValidationError(
      `${path}.guard_name`,
      `${path}.guard_name must be "${info.guardName}" for event_type "${eventType}", got ${describeValue(guardName)}`,
    );
  }
  const result = requireKey(o, 'result', path);
  if (result !== info.result) {
    throw new GuardrailValidationError(
      `${path}.result`,
      `${path}.result must be "${info.result}" for event_type "${eventType}", got ${describeValue(result)}`,
    );
  }
  const ts = requireKey(o, 'timestamp', path);
  const ms = typeof ts === 'string' ? parseIsoMs(ts) : NaN;
  if (!isSerializableTimestamp(ms)) {
    invalid(`${path}.timestamp`, 'an ISO-8601 date-time with a time zone', ts);
  }
  let details: JsonObject = EMPTY_DETAILS;
  if (o['details'] !== undefined) {
    const copy = copyJsonObject(o['details'], `${path}.details`);
    if (copy.bytes > limits.maxDetailsBytes) {
      throw new GuardrailValidationError(
        `${path}.details`,
        `${path}.details must be at most ${limits.maxDetailsBytes} bytes of JSON, got ${copy.bytes}`,
      );
    }
    details = copy.value;
  }
  return AuditEntry.trusted(eventType, ms, details);
}

function requireObject(raw: unknown, path: string, keys: readonly string[]): Record<string, unknown> {
  if (!isPlainObject(raw)) {
    throw new GuardrailValidationError(path, `${path} must be an object, got ${describeValue(raw)}`);
  }
  return objectWithKeys(raw, path, keys);
}

function requireKey(o: Record<string, unknown>, key: string, path: string): unknown {
  if (!Object.hasOwn(o, key))
    throw new GuardrailValidationError(`${path}.${key}`, `${path}.${key} is missing`);
  return o[key];
}
