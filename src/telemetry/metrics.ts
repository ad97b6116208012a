import { EVENT_INFO, type GuardrailEventType } from '../events.js';
import type { OtelAttributes, OtelCounter, OtelHistogram, OtelMeter, OtelObservableResult } from './otel.js';

// leash's metrics: made once per Telemetry, on the meter it was given. An instrument the meter cannot
// make is a no-op: nothing of telemetry may fail a service.

/** A cap's current window and what one scope of it spent and holds, as the service reads it. */
export interface CapReading {
  readonly cap: {
    readonly id: string;
    readonly limitMicros: number;
    readonly match: Readonly<Record<string, string>>;
  };
  /** null when the cap's window cannot be worked out: nothing is observed of it. */
  readonly window: unknown;
  readonly uses: readonly {
    /** The scope's labels as JSON, or null for a cap nothing was spent under in the window. */
    readonly scope: string | null;
    readonly spentMicros: number;
    readonly reservedMicros: number;
  }[];
}

/** Reads every stored cap as of now (the service's cap standings). */
export type CapReader = () => Promise<readonly CapReading[]>;

/** The attribute name of a plan label (or a cap scope's label) on a metric. */
export const labelAttribute = (name: string): string => `leash.label.${name}`;

/** Bucket boundaries of `leash.approval.wait`, in seconds: a second to a week. */
const WAIT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14_400, 28_800, 86_400, 604_800];

/** Open reservations whose tool or model is remembered, at most. */
const MAX_REMEMBERED = 10_000;

const NO_COUNTER: OtelCounter = { add: () => undefined };
const NO_HISTOGRAM: OtelHistogram = { record: () => undefined };

/** Each event type's attributes on `leash.decisions`, made once: a decision counted allocates nothing. */
const DECISION_ATTRIBUTES = new Map<string, OtelAttributes>(
  Object.entries(EVENT_INFO).map(([type, info]) => [
    type,
    Object.freeze({ 'leash.event_type': type, 'leash.result': info.result }),
  ]),
);

/**
 * The instruments of a service's telemetry:
 *
 * | name | instrument | unit | attributes |
 * | --- | --- | --- | --- |
 * | `leash.decisions` | counter | `{decision}` | `leash.event_type`, `leash.result` |
 * | `leash.spend` | counter | `{unit}` | `leash.label.<name>` of each plan label; `gen_ai.tool.name` or `gen_ai.request.model` when known |
 * | `leash.approval.wait` | histogram | `s` | `leash.result` (`approved`, `denied`, `expired`) |
 * | `leash.cap.remaining` | observable gauge | `{unit}` | `leash.cap.id`, `leash.label.<name>` of the cap's scope |
 *
 * `{unit}` is the budget's own unit (whatever currency or credit it is in). No plan id is an attribute:
 * plans are countless, and each would be a time series of its own.
 */
export class LeashMetrics {
  readonly #decisions: OtelCounter;
  readonly #spend: OtelCounter;
  readonly #wait: OtelHistogram;
  readonly #meter: OtelMeter;
  #capsObserved = false;
  /**
   * The tool or model (its attribute) each open reservation of a tool or model call is for, by plan and
   * reservation id: its commit's.
   */
  readonly #names = new Map<string, OtelAttributes>();

  constructor(meter: OtelMeter) {
    this.#meter = meter;
    this.#decisions = made(NO_COUNTER, () =>
      meter.createCounter('leash.decisions', {
        description: 'Decisions leash made, by event type and result',
        unit: '{decision}',
      }),
    );
    this.#spend = made(NO_COUNTER, () =>
      meter.createCounter('leash.spend', {
        description: 'Cost committed to plan budgets, in the budget unit, by plan label and tool or model',
        unit: '{unit}',
      }),
    );
    this.#wait = made(NO_HISTOGRAM, () =>
      meter.createHistogram('leash.approval.wait', {
        description: 'Seconds from an approval request to its decision',
        unit: 's',
        advice: { explicitBucketBoundaries: WAIT_BUCKETS },
      }),
    );
  }

  /** Counts one decision. */
  decision(eventType: GuardrailEventType): void {
    this.#decisions.add(1, DECISION_ATTRIBUTES.get(eventType));
  }

  /** Counts `amount` committed (> 0) with `attributes` (labels, tool or model). */
  spend(amount: number, attributes: OtelAttributes): void {
    this.#spend.add(amount, attributes);
  }

  /**
   * Remembers the tool or model reservation `key` was made for (`gen_ai.tool.name` or
   * `gen_ai.request.model`), until its settlement takes it.
   */
  remember(key: string, names: OtelAttributes): void {
    const remembered = this.#names;
    // Reservations that lapse unsettled are forgotten, oldest first, past this many.
    if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value as string);
    remembered.set(key, names);
  }

  /** The tool or model reservation `key` was made for, forgotten from now on. */
  take(key: string): OtelAttributes | undefined {
    const names = this.#names.get(key);
    if (names !== undefined) this.#names.delete(key);
    return names;
  }

  /** Records the wait of an approval settled as `result`. */
  approvalWait(seconds: number, result: 'approved' | 'denied' | 'expired'): void {
    this.#wait.record(seconds, { 'leash.result': result });
  }

  /**
   * Observes `leash.cap.remaining` from `read` at each collection: each cap's limit less what every
   * scope spent and holds in its current window. Once per telemetry; what `read` rejects with is dropped.
   */
  observeCaps(read: CapReader): void {
    if (this.#capsObserved) return;
    this.#capsObserved = true;
    try {
      const gauge = this.#meter.createObservableGauge('leash.cap.remaining', {
        description: "What each spend cap's scope may still spend in its current window, in the budget unit",
        unit: '{unit}',
      });
      gauge.addCallback((result) => observeReadings(read, result));
    } catch {
      // a meter that cannot make it observes nothing
    }
  }
}

async function observeReadings(read: CapReader, result: OtelObservableResult): Promise<void> {
  try {
    for (const reading of await read()) {
      if (reading.window === null) continue;
      const { id, limitMicros, match } = reading.cap;
      for (const use of reading.uses) {
        // A cap nothing was spent under has its whole limit, under the labels it matches exactly.
        const labels =
          use.scope === null ? exactLabels(match) : (JSON.parse(use.scope) as Record<string, string>);
        const attributes: OtelAttributes = { 'leash.cap.id': id };
        for (const name of Object.keys(labels)) attributes[labelAttribute(name)] = labels[name];
        result.observe((limitMicros - use.spentMicros - use.reservedMicros) / 1_000_000, attributes);
      }
    }
  } catch {
    // a store that cannot be read now is observed at the next collection
  }
}

/** The labels of `match` with one value (not `*`, which stands for every value). */
function exactLabels(match: Readonly<Record<string, string>>): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const name of Object.keys(match)) if (match[name] !== '*') labels[name] = match[name] as string;
  return labels;
}

function made<T>(fallback: T, make: () => T): T {
  try {
    return make();
  } catch {
    return fallback;
  }
}
