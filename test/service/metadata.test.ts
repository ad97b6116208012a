import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailValidationError,
  ManualClock,
  METADATA_KEY,
  SCHEMA_VERSION,
  type MetadataLimits,
} from '../../src/index.js';
import { MAX_JSON_DEPTH } from '../../src/json.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

/** Small limits keep the over-the-limit inputs small. */
const LIMITS: MetadataLimits = {
  maxAuditEntries: 10,
  maxRequiredConfirmations: 3,
  maxOperationNameLength: 16,
  maxDetailsBytes: 256,
  maxTotalBytes: 4096,
};

type Json = Record<string, unknown>;

function service(limits: Partial<MetadataLimits> = LIMITS, auditCapacity = 10) {
  const clock = new ManualClock(T0);
  return { clock, service: new AutonomyGuardrailService({ clock, metadataLimits: limits, auditCapacity }) };
}

/** A valid wire value (DESIGN.md §3) with four entries; entries[3] is a denied step. */
function wire(): { autonomy_guardrails: Json & { guardrails: Json; audit_trail: Json } } & Json {
  return {
    autonomy_guardrails: {
      schema_version: 1,
      guardrails: {
        max_steps: 5,
        tool_budget: 10,
        required_confirmations: ['deploy'],
        max_wall_clock_seconds: null,
        start_time: '2026-11-30T10:00:00.000Z',
        actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: 3 },
        step_count: 1,
        budget_spent: 2.5,
      },
      audit_trail: {
        max_entries: 10,
        allowed_count: 2,
        denied_count: 2,
        entries: [
          entry('step_allowed', 'step_limit', 'allowed', 1, { step: 0, limit: 5 }),
          entry('budget_allowed', 'tool_budget', 'allowed', 2, { cost: 2.5, spent: 2.5 }),
          entry('confirmation_required', 'confirmation', 'denied', 3, { operation: 'deploy' }),
          entry('step_blocked', 'step_limit', 'denied', 4, { step: 5, limit: 5 }),
        ],
      },
    },
  };
}

function entry(eventType: string, guardName: string, result: string, second: number, details: Json): Json {
  return {
    event_type: eventType,
    guard_name: guardName,
    result,
    timestamp: iso(T0 + second * 1000),
    details,
  };
}

type Wire = ReturnType<typeof wire>;
const root = (m: Wire): Json => m.autonomy_guardrails;
const guardrails = (m: Wire): Json => m.autonomy_guardrails.guardrails;
const actorLimits = (m: Wire): Json => guardrails(m)['actor_limits'] as Json;
const trail = (m: Wire): Json => m.autonomy_guardrails.audit_trail;
const entries = (m: Wire): Json[] => trail(m)['entries'] as Json[];
const entry3 = (m: Wire): Json => entries(m)[3] as Json;

async function loadError(
  metadata: unknown,
  limits: Partial<MetadataLimits> = LIMITS,
): Promise<string | undefined> {
  try {
    await service(limits).service.loadFromMetadata('plan', metadata);
  } catch (e) {
    expect(e).toBeInstanceOf(GuardrailValidationError);
    return (e as GuardrailValidationError).field;
  }
  throw new Error('expected loadFromMetadata to refuse the metadata');
}

function mutated(change: (m: Wire) => void): Wire {
  const m = wire();
  change(m);
  return m;
}

const G = 'autonomy_guardrails.guardrails';
const A = 'autonomy_guardrails.audit_trail';
const E3 = `${A}.entries[3]`;

describe('toMetadata', () => {
  it('writes the state in the DESIGN.md wire format, snake_case with ISO-8601 timestamps', async () => {
    const { service: s, clock } = service(LIMITS, 10);
    await s.configureGuardrails('plan', {
      maxSteps: 5,
      toolBudget: 10,
      requiredConfirmations: ['deploy'],
      actorLimits: { maxRetriesPerFailure: 3 },
      budgetSpent: 2.5,
    });
    await s.markStarted('plan');
    clock.advance(1000);
    await s.takeStep('plan');

    expect(await s.toMetadata('plan')).toStrictEqual({
      autonomy_guardrails: {
        schema_version: 1,
        guardrails: {
          max_steps: 5,
          tool_budget: 10,
          required_confirmations: ['deploy'],
          max_wall_clock_seconds: null,
          start_time: '2026-11-30T10:00:00.000Z',
          actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: 3 },
          step_count: 1,
          budget_spent: 2.5,
        },
        audit_trail: {
          max_entries: 10,
          allowed_count: 1,
          denied_count: 0,
          entries: [
            {
              event_type: 'step_allowed',
              guard_name: 'step_limit',
              result: 'allowed',
              timestamp: '2026-11-30T10:00:01.000Z',
              details: { step: 0, limit: 5 },
            },
          ],
        },
      },
    });
  });

  it('writes under the key METADATA_KEY with the version SCHEMA_VERSION', async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', {});
    const out = await s.toMetadata('plan');
    expect(Object.keys(out)).toEqual([METADATA_KEY]);
    expect((out[METADATA_KEY] as Json)['schema_version']).toBe(SCHEMA_VERSION);
  });

  it("keeps the caller's other metadata keys", async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', { maxSteps: 1 });
    const out = await s.toMetadata('plan', { owner: 'ops', tags: ['a'], nested: { n: 1 } });
    expect(out['owner']).toBe('ops');
    expect(out['tags']).toEqual(['a']);
    expect(out['nested']).toEqual({ n: 1 });
  });

  it('does not modify the metadata it is given', async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', { maxSteps: 1 });
    await s.checkStepLimit('plan', 0);
    const input = { owner: 'ops', nested: { n: 1 } };
    const out = await s.toMetadata('plan', input);
    expect(out).not.toBe(input);
    expect(input).toStrictEqual({ owner: 'ops', nested: { n: 1 } });
  });

  it('replaces an autonomy_guardrails key already in the metadata', async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', { maxSteps: 7 });
    const out = await s.toMetadata('plan', { autonomy_guardrails: 'stale' });
    expect((out[METADATA_KEY] as { guardrails: Json }).guardrails['max_steps']).toBe(7);
  });

  it('returns a copy of the metadata without the key for a plan that is not configured', async () => {
    const { service: s } = service();
    const input = { owner: 'ops' };
    const out = await s.toMetadata('plan', input);
    expect(out).toStrictEqual({ owner: 'ops' });
    expect(out).not.toBe(input);
  });

  it("keeps a caller's __proto__ key as an own property without touching the prototype", async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', {});
    const input = JSON.parse('{"__proto__": {"polluted": true}, "owner": "ops"}') as Json;
    const out = await s.toMetadata('plan', input);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('writes a value that JSON.stringify keeps unchanged', async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', { toolBudget: 0.3, requiredConfirmations: ['deploy'] });
    await s.checkToolBudget('plan', 0.1);
    await s.checkConfirmation('plan', 'deploy');
    const out = await s.toMetadata('plan');
    expect(JSON.parse(JSON.stringify(out))).toStrictEqual(out);
  });
});

describe('loadFromMetadata of valid metadata', () => {
  it('loads the guardrails', async () => {
    const { service: s } = service();
    const g = await s.loadFromMetadata('plan', wire());
    expect(g.toJSON()).toStrictEqual(wire().autonomy_guardrails.guardrails);
    expect((await s.getGuardrails('plan'))?.toJSON()).toStrictEqual(g.toJSON());
  });

  it('loads the audit trail with its capacity, counts and entries, timestamps as epoch milliseconds', async () => {
    const { service: s } = service();
    await s.loadFromMetadata('plan', wire());
    const t = await s.getAuditTrail('plan');
    expect(t?.maxEntries).toBe(10);
    expect(t?.allowedCount).toBe(2);
    expect(t?.deniedCount).toBe(2);
    expect(t?.entries.map((e) => e.eventType)).toEqual([
      'step_allowed',
      'budget_allowed',
      'confirmation_required',
      'step_blocked',
    ]);
    expect(t?.entries.map((e) => e.timestamp)).toEqual([1, 2, 3, 4].map((s) => T0 + s * 1000));
    expect(t?.entries[3]?.details).toEqual({ step: 5, limit: 5 });
  });

  it('replaces the guardrails and audit trail a plan had', async () => {
    const { service: s } = service();
    await s.configureGuardrails('plan', { maxSteps: 99 });
    for (let i = 0; i < 6; i++) await s.checkStepLimit('plan', i);
    await s.loadFromMetadata('plan', wire());
    expect((await s.getGuardrails('plan'))?.maxSteps).toBe(5);
    expect((await s.getAuditTrail('plan'))?.size).toBe(4);
  });

  it('writes back what it read', async () => {
    const { service: s } = service();
    const input = wire();
    await s.loadFromMetadata('plan', input);
    expect(await s.toMetadata('plan')).toStrictEqual(wire());
  });

  it('continues the loaded counters', async () => {
    const { service: s } = service();
    await s.loadFromMetadata('plan', wire());
    expect((await s.checkToolBudget('plan', 7.5)).allowed).toBe(true);
    expect((await s.checkToolBudget('plan', 0.000001)).allowed).toBe(false);
    await s.takeStep('plan');
    expect((await s.getGuardrails('plan'))?.stepCount).toBe(2);
  });

  it('restores in another plan, and another service, what toMetadata wrote', async () => {
    const a = service();
    await a.service.configureGuardrails('plan', { maxSteps: 2, toolBudget: 1, requiredConfirmations: ['x'] });
    await a.service.markStarted('plan');
    await a.service.takeStep('plan');
    await a.service.checkToolBudget('plan', 0.25);
    await a.service.checkConfirmation('plan', 'X');
    const written = await a.service.toMetadata('plan', { owner: 'ops' });
    const b = service();
    await b.service.loadFromMetadata('copy', JSON.parse(JSON.stringify(written)));
    expect(await b.service.toMetadata('copy', { owner: 'ops' })).toStrictEqual(written);
  });

  it('ignores other keys of the metadata, __proto__ included', async () => {
    const m = JSON.parse(
      `{"__proto__": {"polluted": true}, "owner": "ops", "autonomy_guardrails": ${JSON.stringify(
        wire().autonomy_guardrails,
      )}}`,
    ) as unknown;
    const { service: s } = service();
    await s.loadFromMetadata('plan', m);
    expect((await s.getGuardrails('plan'))?.maxSteps).toBe(5);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it.each(['__proto__', 'constructor'])(
    'keeps a %s key of entry details as plain data that never reaches a prototype',
    async (key) => {
      const m = mutated((w) => {
        entry3(w)['details'] = JSON.parse(`{"${key}": {"polluted": true}, "step": 5}`) as Json;
      });
      const { service: s } = service();
      await s.loadFromMetadata('plan', JSON.parse(JSON.stringify(m)));
      const details = (await s.getAuditTrail('plan'))?.entries[3]?.details as Json;
      expect(Object.getPrototypeOf(details)).toBe(Object.prototype);
      expect(Object.keys(details)).toEqual([key, 'step']);
      expect((details as { polluted?: unknown }).polluted).toBeUndefined();
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      const out = (await s.toMetadata('plan')) as Wire;
      expect(JSON.stringify(entry3(out)['details'])).toBe(`{"${key}":{"polluted":true},"step":5}`);
    },
  );
});

describe('loadFromMetadata of malformed metadata', () => {
  const cases: [string, () => unknown, string][] = [
    // the outer object
    ['metadata that is null', () => null, 'metadata'],
    [
      'an entry timestamp whose UTC form falls before the year 0000',
      () => mutated((m) => (entry3(m)['timestamp'] = '0000-01-01T00:00:00.000+01:00')),
      `${E3}.timestamp`,
    ],

    ['metadata that is an array', () => [wire()], 'metadata'],
    ['metadata that is a string', () => JSON.stringify(wire()), 'metadata'],
    ['metadata without autonomy_guardrails', () => ({ owner: 'ops' }), 'autonomy_guardrails'],
    ['autonomy_guardrails that is not an object', () => ({ autonomy_guardrails: [] }), 'autonomy_guardrails'],
    // schema version
    [
      'an unknown schema_version',
      () => mutated((m) => (root(m)['schema_version'] = 2)),
      `autonomy_guardrails.schema_version`,
    ],
    [
      'a schema_version as a string',
      () => mutated((m) => (root(m)['schema_version'] = '1')),
      `autonomy_guardrails.schema_version`,
    ],
    [
      'a missing schema_version',
      () => mutated((m) => delete root(m)['schema_version']),
      `autonomy_guardrails.schema_version`,
    ],
    // missing and unknown keys
    ['a missing guardrails', () => mutated((m) => delete root(m)['guardrails']), G],
    ['a missing audit_trail', () => mutated((m) => delete root(m)['audit_trail']), A],
    ['an unknown top-level key', () => mutated((m) => (root(m)['extra'] = 1)), 'autonomy_guardrails.extra'],
    ['an unknown guardrails key', () => mutated((m) => (guardrails(m)['maxSteps'] = 5)), `${G}.maxSteps`],
    [
      'an unknown actor_limits key',
      () => mutated((m) => (actorLimits(m)['extra'] = 1)),
      `${G}.actor_limits.extra`,
    ],
    ['an unknown audit_trail key', () => mutated((m) => (trail(m)['extra'] = 1)), `${A}.extra`],
    ['an unknown entry key', () => mutated((m) => (entry3(m)['extra'] = 1)), `${E3}.extra`],
    ...[
      'max_steps',
      'tool_budget',
      'required_confirmations',
      'max_wall_clock_seconds',
      'start_time',
      'actor_limits',
      'step_count',
      'budget_spent',
    ].map((k): [string, () => unknown, string] => [
      `a missing guardrails.${k}`,
      () => mutated((m) => delete guardrails(m)[k]),
      `${G}.${k}`,
    ]),
    ...['max_tool_calls_per_invocation', 'max_retries_per_failure'].map(
      (k): [string, () => unknown, string] => [
        `a missing actor_limits.${k}`,
        () => mutated((m) => delete actorLimits(m)[k]),
        `${G}.actor_limits.${k}`,
      ],
    ),
    ...['max_entries', 'allowed_count', 'denied_count', 'entries'].map(
      (k): [string, () => unknown, string] => [
        `a missing audit_trail.${k}`,
        () => mutated((m) => delete trail(m)[k]),
        `${A}.${k}`,
      ],
    ),
    ...['event_type', 'guard_name', 'result', 'timestamp'].map((k): [string, () => unknown, string] => [
      `a missing entry ${k}`,
      () => mutated((m) => delete entry3(m)[k]),
      `${E3}.${k}`,
    ]),
    // wrong types
    ['guardrails that are an array', () => mutated((m) => (root(m)['guardrails'] = [])), G],
    ['max_steps as a string', () => mutated((m) => (guardrails(m)['max_steps'] = '5')), `${G}.max_steps`],
    [
      'tool_budget as a string',
      () => mutated((m) => (guardrails(m)['tool_budget'] = '10')),
      `${G}.tool_budget`,
    ],
    [
      'required_confirmations as a string',
      () => mutated((m) => (guardrails(m)['required_confirmations'] = 'deploy')),
      `${G}.required_confirmations`,
    ],
    [
      'a required confirmation that is a number',
      () => mutated((m) => (guardrails(m)['required_confirmations'] = ['a', 7])),
      `${G}.required_confirmations[1]`,
    ],
    [
      'max_wall_clock_seconds as a boolean',
      () => mutated((m) => (guardrails(m)['max_wall_clock_seconds'] = true)),
      `${G}.max_wall_clock_seconds`,
    ],
    ['start_time as a number', () => mutated((m) => (guardrails(m)['start_time'] = T0)), `${G}.start_time`],
    [
      'start_time that is not a date',
      () => mutated((m) => (guardrails(m)['start_time'] = 'yesterday')),
      `${G}.start_time`,
    ],
    [
      'actor_limits as an array',
      () => mutated((m) => (guardrails(m)['actor_limits'] = [])),
      `${G}.actor_limits`,
    ],
    [
      'max_retries_per_failure as a string',
      () => mutated((m) => (actorLimits(m)['max_retries_per_failure'] = '3')),
      `${G}.actor_limits.max_retries_per_failure`,
    ],
    [
      'step_count that is null',
      () => mutated((m) => (guardrails(m)['step_count'] = null)),
      `${G}.step_count`,
    ],
    [
      'budget_spent as a string',
      () => mutated((m) => (guardrails(m)['budget_spent'] = '2.5')),
      `${G}.budget_spent`,
    ],
    ['audit_trail as a string', () => mutated((m) => (root(m)['audit_trail'] = 'none')), A],
    ['entries as an object', () => mutated((m) => (trail(m)['entries'] = {})), `${A}.entries`],
    [
      'an entry that is a string',
      () => mutated((m) => (entries(m)[3] = 'step_blocked' as unknown as Json)),
      E3,
    ],
    ['entry details as an array', () => mutated((m) => (entry3(m)['details'] = [])), `${E3}.details`],
    [
      'entry details holding NaN',
      () => mutated((m) => (entry3(m)['details'] = { step: Number.NaN })),
      `${E3}.details.step`,
    ],
    ['a timestamp that is a number', () => mutated((m) => (entry3(m)['timestamp'] = T0)), `${E3}.timestamp`],
    [
      'a timestamp that is not a date',
      () => mutated((m) => (entry3(m)['timestamp'] = 'soon')),
      `${E3}.timestamp`,
    ],
    [
      'a timestamp without a time zone',
      () => mutated((m) => (entry3(m)['timestamp'] = '2026-11-30T10:00:04')),
      `${E3}.timestamp`,
    ],
    [
      'a timestamp on 30 February',
      () => mutated((m) => (entry3(m)['timestamp'] = '2026-02-30T10:00:00Z')),
      `${E3}.timestamp`,
    ],
    // out of range numbers
    ['a negative step_count', () => mutated((m) => (guardrails(m)['step_count'] = -1)), `${G}.step_count`],
    ['a fractional step_count', () => mutated((m) => (guardrails(m)['step_count'] = 1.5)), `${G}.step_count`],
    ['a NaN step_count', () => mutated((m) => (guardrails(m)['step_count'] = Number.NaN)), `${G}.step_count`],
    [
      'a negative budget_spent',
      () => mutated((m) => (guardrails(m)['budget_spent'] = -0.5)),
      `${G}.budget_spent`,
    ],
    [
      'a NaN budget_spent',
      () => mutated((m) => (guardrails(m)['budget_spent'] = Number.NaN)),
      `${G}.budget_spent`,
    ],
    ['a max_steps of 0', () => mutated((m) => (guardrails(m)['max_steps'] = 0)), `${G}.max_steps`],
    ['a fractional max_steps', () => mutated((m) => (guardrails(m)['max_steps'] = 2.5)), `${G}.max_steps`],
    ['a NaN max_steps', () => mutated((m) => (guardrails(m)['max_steps'] = Number.NaN)), `${G}.max_steps`],
    ['a negative tool_budget', () => mutated((m) => (guardrails(m)['tool_budget'] = -1)), `${G}.tool_budget`],
    [
      'an infinite tool_budget',
      () => mutated((m) => (guardrails(m)['tool_budget'] = Number.POSITIVE_INFINITY)),
      `${G}.tool_budget`,
    ],
    [
      'a max_wall_clock_seconds of 0',
      () => mutated((m) => (guardrails(m)['max_wall_clock_seconds'] = 0)),
      `${G}.max_wall_clock_seconds`,
    ],
    [
      'a NaN max_wall_clock_seconds',
      () => mutated((m) => (guardrails(m)['max_wall_clock_seconds'] = Number.NaN)),
      `${G}.max_wall_clock_seconds`,
    ],
    [
      'a max_tool_calls_per_invocation of 0',
      () => mutated((m) => (actorLimits(m)['max_tool_calls_per_invocation'] = 0)),
      `${G}.actor_limits.max_tool_calls_per_invocation`,
    ],
    [
      'a negative max_retries_per_failure',
      () => mutated((m) => (actorLimits(m)['max_retries_per_failure'] = -1)),
      `${G}.actor_limits.max_retries_per_failure`,
    ],
    [
      'a negative allowed_count',
      () => mutated((m) => (trail(m)['allowed_count'] = -1)),
      `${A}.allowed_count`,
    ],
    [
      'a fractional denied_count',
      () => mutated((m) => (trail(m)['denied_count'] = 1.5)),
      `${A}.denied_count`,
    ],
    [
      'a NaN allowed_count',
      () => mutated((m) => (trail(m)['allowed_count'] = Number.NaN)),
      `${A}.allowed_count`,
    ],
    ['a max_entries of 0', () => mutated((m) => (trail(m)['max_entries'] = 0)), `${A}.max_entries`],
    ['a fractional max_entries', () => mutated((m) => (trail(m)['max_entries'] = 4.5)), `${A}.max_entries`],
    // entries that contradict themselves
    [
      'an unknown event_type',
      () => mutated((m) => (entry3(m)['event_type'] = 'step_skipped')),
      `${E3}.event_type`,
    ],
    [
      'a result that contradicts the event type',
      () => mutated((m) => (entry3(m)['result'] = 'allowed')),
      `${E3}.result`,
    ],
    [
      'a result that is neither allowed nor denied',
      () => mutated((m) => (entry3(m)['result'] = 'maybe')),
      `${E3}.result`,
    ],
    [
      'a guard_name that is not the guard of the event type',
      () => mutated((m) => (entry3(m)['guard_name'] = 'tool_budget')),
      `${E3}.guard_name`,
    ],
    // counts that disagree with the entries
    [
      'an allowed_count above the allowed entries',
      () => mutated((m) => (trail(m)['allowed_count'] = 3)),
      `${A}.allowed_count`,
    ],
    [
      'a denied_count below the denied entries',
      () => mutated((m) => (trail(m)['denied_count'] = 1)),
      `${A}.denied_count`,
    ],
    // limits
    ['more entries than max_entries', () => mutated((m) => (trail(m)['max_entries'] = 3)), `${A}.entries`],
    [
      'a max_entries above metadataLimits.maxAuditEntries',
      () => mutated((m) => (trail(m)['max_entries'] = 11)),
      `${A}.max_entries`,
    ],
    [
      'more required confirmations than allowed',
      () => mutated((m) => (guardrails(m)['required_confirmations'] = ['a', 'b', 'c', 'd'])),
      `${G}.required_confirmations`,
    ],
    [
      'an operation name over the length limit',
      () => mutated((m) => (guardrails(m)['required_confirmations'] = ['ok', 'x'.repeat(17)])),
      `${G}.required_confirmations[1]`,
    ],
    [
      'an operation name with an invisible character',
      () => mutated((m) => (guardrails(m)['required_confirmations'] = ['de\u200bploy'])),
      `${G}.required_confirmations[0]`,
    ],
    [
      'an operation name holding a lone surrogate',
      () => mutated((m) => (guardrails(m)['required_confirmations'] = ['dep\udc00loy'])),
      `${G}.required_confirmations[0]`,
    ],
    [
      'entry details holding a lone surrogate',
      () => mutated((m) => (entry3(m)['details'] = { note: ['ok', '\ud800'] })),
      `${E3}.details.note[1]`,
    ],
    [
      'an entry details key holding a lone surrogate',
      () => mutated((m) => (entry3(m)['details'] = { ['\udfff']: 1 })),
      `${E3}.details`,
    ],
    [
      'entry details over maxDetailsBytes',
      () => mutated((m) => (entry3(m)['details'] = { pad: 'x'.repeat(256) })),
      `${E3}.details`,
    ],
    [
      'entry details nested deeper than MAX_JSON_DEPTH levels',
      () => mutated((m) => (entry3(m)['details'] = nested(MAX_JSON_DEPTH + 5) as Json)),
      `${E3}.details${'.d'.repeat(MAX_JSON_DEPTH + 1)}`,
    ],
    // prototype keys are refused where the schema names the keys
    [
      'a __proto__ key in autonomy_guardrails',
      () => withRawKey(root, '__proto__'),
      'autonomy_guardrails.__proto__',
    ],
    ['a __proto__ key in guardrails', () => withRawKey(guardrails, '__proto__'), `${G}.__proto__`],
    ['a constructor key in audit_trail', () => withRawKey(trail, 'constructor'), `${A}.constructor`],
    ['a constructor key in an entry', () => withRawKey(entry3, 'constructor'), `${E3}.constructor`],
  ];

  it.each(cases)('refuses %s, naming the path', async (_label, make, field) => {
    expect(await loadError(make())).toBe(field);
  });

  it('refuses a whole value one byte over maxTotalBytes', async () => {
    const bytes = Buffer.byteLength(JSON.stringify(wire().autonomy_guardrails), 'utf8');
    expect(await loadError(wire(), { ...LIMITS, maxTotalBytes: bytes - 1 })).toBe('autonomy_guardrails');
  });

  it('accepts a whole value of exactly maxTotalBytes', async () => {
    const bytes = Buffer.byteLength(JSON.stringify(wire().autonomy_guardrails), 'utf8');
    const { service: s } = service({ ...LIMITS, maxTotalBytes: bytes });
    await s.loadFromMetadata('plan', wire());
    expect((await s.getAuditTrail('plan'))?.size).toBe(4);
  });

  it('counts maxTotalBytes in UTF-8 bytes, not characters', async () => {
    const m = mutated((w) => (entry3(w)['details'] = { note: 'é'.repeat(40) }));
    const chars = JSON.stringify(m.autonomy_guardrails).length;
    expect(await loadError(m, { ...LIMITS, maxTotalBytes: chars })).toBe('autonomy_guardrails');
  });

  it('refuses max_entries above the default limit of 10,000 entries', async () => {
    const m = mutated((w) => (trail(w)['max_entries'] = 10_001));
    expect(await loadError(m, {})).toBe(`${A}.max_entries`);
  });

  it('leaves Object.prototype untouched after refusing __proto__ keys', async () => {
    await loadError(withRawKey(root, '__proto__'));
    await loadError(withRawKey(guardrails, '__proto__'));
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it.each([
    ['an early error', () => mutated((m) => (root(m)['schema_version'] = 2))],
    ['an error in the guardrails', () => mutated((m) => (guardrails(m)['max_steps'] = 0))],
    ['an error in the last entry', () => mutated((m) => (entry3(m)['result'] = 'allowed'))],
    ['an error in the counts', () => mutated((m) => (trail(m)['denied_count'] = 9))],
  ])("leaves the plan's previous state untouched after %s", async (_label, make) => {
    const { service: s } = service();
    await s.configureGuardrails('plan', { maxSteps: 3, toolBudget: 1 });
    await s.takeStep('plan');
    await s.checkToolBudget('plan', 0.5);
    const before = await s.toMetadata('plan');
    await expect(s.loadFromMetadata('plan', make())).rejects.toBeInstanceOf(GuardrailValidationError);
    expect(await s.toMetadata('plan')).toStrictEqual(before);
  });

  it('stores nothing for a plan when its first load is refused', async () => {
    const { service: s } = service();
    const m = mutated((w) => (entry3(w)['result'] = 'allowed'));
    await expect(s.loadFromMetadata('plan', m)).rejects.toBeInstanceOf(GuardrailValidationError);
    expect(await s.getGuardrails('plan')).toBeNull();
  });
});

function nested(depth: number): unknown {
  let v: unknown = 0;
  for (let i = 0; i < depth; i++) v = { d: v };
  return v;
}

/** The valid wire value with `key` added to one of its objects, as JSON.parse makes it (an own property). */
function withRawKey(pick: (m: Wire) => Json, key: string): unknown {
  const m = wire();
  pick(m)['__marker__'] = { polluted: true };
  return JSON.parse(JSON.stringify(m).replace('"__marker__"', JSON.stringify(key)));
}
