import type { AuditTrail } from '../audit/AuditTrail.js';
import { describeValue, GuardrailError, GuardrailValidationError } from '../errors.js';
import { AutonomyGuardrails, type GuardrailsInit } from '../guardrails/AutonomyGuardrails.js';
import { validatePlanId } from '../ids.js';
import { isPlainObject } from '../json.js';
import { rejecting, type ServiceCore } from './core.js';
import { METADATA_KEY, parseState, serializeState } from './metadata.js';

// A plan's guardrails as a whole: configured, read, carried in plan metadata, removed.

/** See {@link AutonomyGuardrailService.configureGuardrails}. */
export async function configureGuardrails(
  core: ServiceCore,
  planId: string,
  init?: GuardrailsInit,
): Promise<AutonomyGuardrails> {
  validatePlanId(planId);
  const fresh = AutonomyGuardrails.parse(init, '', false, core.limits);
  const { store } = core;
  for (let tries = 1; ; tries++) {
    const replaced = await reconfigured(core, planId, init ?? {});
    if (replaced) return replaced.clone();
    if (store.create === undefined) {
      await store.put(planId, fresh);
      return fresh.clone();
    }
    // Created only if still absent: a plan another caller configured meanwhile, and may have spent on
    // already, is configured again through an update, keeping what it used.
    if (await store.create(planId, fresh)) return fresh.clone();
    if (tries === MAX_CONFIGURE_TRIES) {
      throw new GuardrailError(
        'STORE_CONTRACT',
        `configuring plan ${describeValue(planId)}: the store's create found it configured and its ` +
          `update found it not, ${tries} times`,
      );
    }
  }
}

/** How often a configure that lost the race to create a plan starts over (see configureGuardrails). */
const MAX_CONFIGURE_TRIES = 3;

/**
 * The plan configured again with `given`, in one update, or null when it is not configured. A configured
 * plan keeps what it has used: new limits must not hand out a fresh budget. Counters given explicitly
 * replace the kept ones.
 */
function reconfigured(
  core: ServiceCore,
  planId: string,
  given: GuardrailsInit,
): Promise<AutonomyGuardrails | null> {
  return core.update(planId, (g) => {
    if (!g) return { result: null };
    const merged = AutonomyGuardrails.parse(
      {
        ...given,
        stepCount: given.stepCount ?? g.stepCount,
        budgetSpent: given.budgetSpent ?? g.budgetSpent,
        startTime: given.startTime === undefined ? g.startTime : given.startTime,
      },
      '',
      false,
      core.limits,
    );
    merged.replaceRuntime(g.runtime); // open reservations, tool calls and waits go on
    return { result: merged, replace: merged };
  });
}

/** See {@link AutonomyGuardrailService.getGuardrails}. */
export function getGuardrails(core: ServiceCore, planId: string): Promise<AutonomyGuardrails | null> {
  return rejecting(() => {
    validatePlanId(planId);
    const store = core.store;
    // Asked before every call an agent framework may stop for: no async frame of its own.
    if (store.getGuardrails) return store.getGuardrails(planId);
    return store.get(planId).then((record) => record?.guardrails ?? null);
  });
}

/** See {@link AutonomyGuardrailService.getAuditTrail}. */
export async function getAuditTrail(core: ServiceCore, planId: string): Promise<AuditTrail | null> {
  validatePlanId(planId);
  return (await core.store.get(planId))?.audit ?? null;
}

/** See {@link AutonomyGuardrailService.toMetadata}. */
export async function toMetadata(
  core: ServiceCore,
  planId: string,
  metadata: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  validatePlanId(planId);
  if (!isPlainObject(metadata)) {
    throw new GuardrailValidationError(
      'metadata',
      `metadata must be an object, got ${describeValue(metadata)}`,
    );
  }
  const record = await core.store.get(planId);
  const out: Record<string, unknown> = { ...metadata };
  if (record) {
    Object.defineProperty(out, METADATA_KEY, {
      value: serializeState(record.guardrails, record.audit),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** See {@link AutonomyGuardrailService.loadFromMetadata}. */
export async function loadFromMetadata(
  core: ServiceCore,
  planId: string,
  metadata: unknown,
): Promise<AutonomyGuardrails> {
  validatePlanId(planId);
  const { guardrails, trail } = parseState(metadata, core.limits);
  await core.store.put(planId, guardrails, trail);
  return guardrails.clone();
}
