import { RunState, type Agent } from '@openai/agents';
import { guardOf, type GuardOption } from '../../agent/guardOption.js';
import { GuardrailError, invalid, isGuardrailError } from '../../errors.js';
import { formatIso } from '../../iso.js';
import type { JsonObject } from '../../json.js';
import { MAX_PLAN_DOCUMENT_BYTES } from '../../store/planDocuments.js';
import type { PlanDocument } from '../../store/GuardrailStore.js';
import { applyLeashDecisions, isGuarded } from './tools.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- the SDK's run state is generic over any agent */
type AnyRunState = RunState<any, any>;
type AnyAgent = Agent<any, any>;
/* eslint-enable @typescript-eslint/no-explicit-any */

/** The `format` of a plan document holding an Agents SDK run's state. */
export const RUN_STATE_FORMAT = 'leash.openai-agents.run-state';
const VERSION = 1;
/** The phase of a saved run with interruptions, of one that has none, and of one a process resumed. */
const AWAITING = 'awaiting_confirmation';
const SAVED = 'saved';
const RESUMED = 'resumed';

/**
 * Saves the run's state (the SDK's own serialization, without tracing keys) as the plan's document, so
 * that another process can show the plan, a person can decide its approvals (`leash approve`, the
 * dashboard) and any process can resume it with {@link resumeRunState}. Its phase is
 * `awaiting_confirmation` while the run waits on interruptions, else `saved`. The state counts against
 * the plan-document size limit (8 MiB of JSON): a run that outgrew it is refused with a
 * GuardrailValidationError naming `state` and its size, and nothing is saved. A plan whose document
 * another program wrote (a plan the leash runner runs) is not overwritten (`PLAN_DOCUMENT_CONFLICT`).
 */
export async function saveRunState(state: AnyRunState, options: GuardOption): Promise<PlanDocument> {
  const guard = guardOf(options);
  if (!(state instanceof RunState)) invalid('state', 'the RunState of an Agents SDK run', state);
  const body = {
    format: RUN_STATE_FORMAT,
    version: VERSION,
    state: JSON.parse(state.toString()) as JsonObject,
  };
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > MAX_PLAN_DOCUMENT_BYTES) {
    invalid(
      'state',
      `a run state within the plan-document limit of ${MAX_PLAN_DOCUMENT_BYTES} bytes of JSON (this run outgrew it: start a new run with what it needs to know)`,
      `${bytes} bytes`,
    );
  }
  const store = guard.service.store;
  const saved = await store.getPlanDocument(guard.planId);
  if (saved !== null && saved.body['format'] !== RUN_STATE_FORMAT) {
    throw new GuardrailError(
      'PLAN_DOCUMENT_CONFLICT',
      `plan "${guard.planId}" has a document another program saved (format ${JSON.stringify(saved.body['format'] ?? null)}): use another plan id for this run`,
    );
  }
  return store.savePlanDocument(
    {
      planId: guard.planId,
      phase: state.getInterruptions().length > 0 ? AWAITING : SAVED,
      body,
      updatedAt: formatIso(guard.service.clock.now()),
    },
    { expectedRevision: saved?.revision ?? null },
  );
}

/**
 * The run saved by {@link saveRunState} for the guard's plan, ready to go on with `run(agent, state)`:
 * its interruptions approved or rejected as people decided them in leash ({@link applyLeashDecisions}),
 * and the plan claimed (its phase `resumed`) so that no other process resumes it too. Interruptions of
 * tools leash does not guard are left for the app to decide on the state (`state.getInterruptions()`,
 * `state.approve`, `state.reject`). Null when there is nothing to resume: no run saved, a run not
 * waiting on interruptions, one whose guarded calls a person has not all decided yet (it stays saved),
 * or one another process claimed first. A claimed run keeps its state in the document until it is saved
 * again, so a process that died after claiming it leaves it readable. `agent` is the run's starting
 * agent, as `RunState.fromString` needs it.
 */
export async function resumeRunState(agent: AnyAgent, options: GuardOption): Promise<AnyRunState | null> {
  const guard = guardOf(options);
  const store = guard.service.store;
  const saved = await store.getPlanDocument(guard.planId);
  if (saved === null || saved.body['format'] !== RUN_STATE_FORMAT || saved.phase !== AWAITING) return null;
  if (saved.body['version'] !== VERSION) {
    throw new GuardrailError(
      'PLAN_NOT_RUNNABLE',
      `plan "${guard.planId}" holds a run state of version ${JSON.stringify(saved.body['version'])}, not ${VERSION}`,
    );
  }
  const state = await RunState.fromString(agent, JSON.stringify(saved.body['state']));
  if ((await applyLeashDecisions(state, { guard })).some(isGuarded)) return null;
  try {
    await store.savePlanDocument(
      {
        planId: saved.planId,
        phase: RESUMED,
        body: saved.body,
        updatedAt: formatIso(guard.service.clock.now()),
      },
      { expectedRevision: saved.revision },
    );
  } catch (error) {
    if (isGuardrailError(error) && error.code === 'PLAN_DOCUMENT_CONFLICT') return null;
    throw error;
  }
  return state;
}
