import { describeValue, GuardrailValidationError } from '../errors.js';
import {
  EVENT_INFO,
  isGuardName,
  isGuardrailEventType,
  type GuardName,
  type GuardrailEventType,
  type GuardrailResult,
} from '../events.js';
import type { GuardCheck } from '../GuardCheck.js';
import { formatIso, isSerializableTimestamp } from '../iso.js';
import { copyJsonObject, type JsonObject } from '../json.js';

/** Wire form of an {@link AuditEntry} (DESIGN.md §3). */
export interface AuditEntryJson {
  event_type: GuardrailEventType;
  guard_name: GuardName;
  result: GuardrailResult;
  timestamp: string;
  details: JsonObject;
}

export interface AuditEntryInit {
  eventType: GuardrailEventType;
  guardName: GuardName;
  /** Epoch milliseconds; defaults to now. */
  timestamp?: number;
  details?: Record<string, unknown>;
}

const EMPTY: JsonObject = Object.freeze({});

/** Details larger than this are refused by {@link AuditEntry.create}. */
export const MAX_DETAILS_BYTES = 4096;

/**
 * One recorded decision. Immutable. The result follows from the event type, and the guard name must be
 * the event type's guard, so an entry cannot say "step_blocked … allowed".
 */
export class AuditEntry {
  // Private fields behind getters make the entry immutable without Object.freeze, which costs more than
  // the rest of recording a check; details the service wrote are frozen when first handed out.
  readonly #eventType: GuardrailEventType;
  readonly #result: GuardrailResult; // kept, not looked up: the trail reads it on every add and eviction
  readonly #timestamp: number;
  readonly #details: JsonObject;
  #detailsFrozen: boolean;

  private constructor(
    eventType: GuardrailEventType,
    timestamp: number,
    details: JsonObject,
    frozen: boolean,
  ) {
    this.#eventType = eventType;
    this.#result = EVENT_INFO[eventType].result;
    this.#timestamp = timestamp;
    this.#details = details;
    this.#detailsFrozen = frozen;
  }

  get eventType(): GuardrailEventType {
    return this.#eventType;
  }

  get guardName(): GuardName {
    return EVENT_INFO[this.#eventType].guardName;
  }

  get result(): GuardrailResult {
    return this.#result;
  }

  /** Epoch milliseconds; formatted as ISO-8601 only when serialized. */
  get timestamp(): number {
    return this.#timestamp;
  }

  get details(): JsonObject {
    if (!this.#detailsFrozen) {
      Object.freeze(this.#details);
      this.#detailsFrozen = true;
    }
    return this.#details;
  }

  /**
   * Validates and builds an entry.
   * @example AuditEntry.create({ eventType: 'step_blocked', guardName: 'step_limit', details: { step: 5 } })
   */
  static create(init: AuditEntryInit): AuditEntry {
    const i = init as unknown as Record<string, unknown>;
    if (typeof init !== 'object' || init === null) {
      throw new GuardrailValidationError('init', `init must be an object, got ${describeValue(init)}`);
    }
    const eventType = i['eventType'];
    if (!isGuardrailEventType(eventType)) {
      throw new GuardrailValidationError(
        'event_type',
        `event_type must be a GuardrailEventType, got ${describeValue(eventType)}`,
      );
    }
    const guardName = i['guardName'];
    if (!isGuardName(guardName) || EVENT_INFO[eventType].guardName !== guardName) {
      throw new GuardrailValidationError(
        'guard_name',
        `guard_name must be "${EVENT_INFO[eventType].guardName}" for event_type "${eventType}", got ${describeValue(guardName)}`,
      );
    }
    const ts = i['timestamp'] === undefined ? Date.now() : i['timestamp'];
    // Whole milliseconds only: the ISO-8601 wire form keeps no more.
    if (!isSerializableTimestamp(ts) || !Number.isInteger(ts)) {
      throw new GuardrailValidationError(
        'timestamp',
        `timestamp must be whole epoch milliseconds within the years 0000-9999, got ${describeValue(ts)}`,
      );
    }
    const details =
      i['details'] === undefined ? { value: EMPTY, bytes: 2 } : copyJsonObject(i['details'], 'details');
    if (details.bytes > MAX_DETAILS_BYTES) {
      throw new GuardrailValidationError(
        'details',
        `details must be at most ${MAX_DETAILS_BYTES} bytes of JSON, got ${details.bytes}`,
      );
    }
    return new AuditEntry(eventType, ts, details.value, true);
  }

  /**
   * @internal an entry for a check leash itself made. `details` must be a fresh flat object of numbers
   * and strings that nothing else holds; it is frozen when first handed out.
   */
  static fromCheck(check: GuardCheck, timestamp: number, details: JsonObject): AuditEntry {
    return new AuditEntry(check.eventType, timestamp, details, false);
  }

  /** @internal an entry whose fields were validated by the caller (the metadata reader). */
  static trusted(eventType: GuardrailEventType, timestamp: number, details: JsonObject): AuditEntry {
    return new AuditEntry(eventType, timestamp, details, true);
  }

  toJSON(): AuditEntryJson {
    return {
      event_type: this.eventType,
      guard_name: this.guardName,
      result: this.result,
      timestamp: formatIso(this.timestamp),
      details: this.details,
    };
  }
}
