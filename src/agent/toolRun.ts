import { runtimeKeyOf } from '../guardrails/runtime.js';
import { errorTail, isGuardrailError, isGuardrailViolationError } from '../errors.js';
import type { GuardCheck } from '../GuardCheck.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { BudgetReservation } from '../service/BudgetReservation.js';
import { openCall } from './calls.js';
import { LazyAbort, remainingMs, watchWallClock, type Timers } from './deadline.js';
import { backoffMs, errorName, nextRetry, type RetryPolicy, type Sleep } from './retries.js';
import { type AgentToolRule, type ToolCallContext, type ValidRequest } from './requests.js';
import { isRetryable, unwrap, type Outcome } from './toolResult.js';
import type { JsonValue } from '../json.js';
import { denied, type ToolCallOutcome } from './outcomes.js';

// A guarded tool call's run: its tries, each with its reservation settled, and the wall clock's cut.

const CUT_SHORT =
  'the wall clock ran out while the call ran: the reserved estimate is charged, since the tool may still be running';
const CLOCK_UNREAD =
  'the wall clock could not be read while the call ran: the reserved estimate is charged, since the tool may still be running';

/** What running a tool call needs of its guard. */
export interface ToolRun {
  readonly service: AutonomyGuardrailService;
  readonly planId: string;
  readonly rule: AgentToolRule | undefined;
  /** What each try sets aside. */
  readonly estimate: number;
  /** What each try's reservation id is made of, with `#<try>` after it. */
  readonly reservationBase: string;
  readonly retry: RetryPolicy;
  readonly sleep: Sleep;
  readonly timers: Timers;
}

/**
 * Runs the call, retried per failure, each try with its reservation (`first`, the first try's, when
 * made already) and a signal aborted when the wall clock runs out.
 */
export async function runToolCall<T>(
  run: ToolRun,
  call: ValidRequest<T>,
  firstWall: GuardCheck,
  first?: BudgetReservation,
): Promise<ToolCallOutcome<T>> {
  const { service, planId, rule, estimate } = run;
  let failures: Map<string, number> | undefined; // made at the first failure: most calls have none
  let wall = firstWall;
  for (let attempt = 1; ; attempt++) {
    let reservation: BudgetReservation;
    if (attempt === 1 && first !== undefined) reservation = first;
    else {
      // Another try checks the wall clock again, with the rest of its checks.
      const opened = await openCall(service, planId, {
        toolName: call.toolName,
        maxCallsPerPlan: rule?.maxCallsPerPlan ?? null,
        estimate,
        reservationId: runtimeKeyOf(run.reservationBase, `#${attempt}`),
        wallClock: attempt > 1,
      });
      if ('denied' in opened) return denied(opened.denied);
      reservation = opened.reservation;
      wall = opened.wall ?? wall;
    }
    let outcome: Outcome;
    const controller = new LazyAbort();
    try {
      outcome = await invoke(run, call, attempt, remainingMs(wall), controller);
    } catch (error) {
      if (controller.aborted && error === controller.reason) {
        // Cut short by the wall clock: the tool may still be running, so its estimate is spent.
        if (isGuardrailViolationError(error)) {
          await reservation.commit(estimate, { note: CUT_SHORT });
          return denied(error.check);
        }
        // Or by a store that could not say what the clock reads: charged as far as the store lets it be
        // (else the reservation holds the estimate until it lapses), and the store's error passed on.
        await reservation.commit(estimate, { note: CLOCK_UNREAD }).catch(() => undefined);
        throw error;
      }
      // The call's own failure, kept and audited; a guard's error says it all itself.
      const toolError = isGuardrailError(error) ? undefined : errorTail(error);
      await reservation.release(toolError === undefined ? {} : { error: toolError });
      if (isGuardrailViolationError(error)) return denied(error.check);
      // A call its caller gave up on is not tried again: the tool would run for nobody.
      if (toolError === undefined || !isRetryable(error) || call.signal?.aborted) throw error;
      const fingerprint = `${call.toolCallId}:${errorName(error)}`;
      failures ??= new Map();
      const retries = await nextRetry(service, planId, failures, fingerprint, toolError, run.retry);
      if (retries === null) throw error;
      await run.sleep(backoffMs(run.retry, retries), call.signal);
      if (call.signal?.aborted) throw error;
      continue;
    }
    const settled = await reservation.commit(outcome.actual);
    // A result that misreported its cost was charged its estimate; its output is not handed on.
    if (outcome.problem) throw outcome.problem;
    const done = { allowed: true as const, output: outcome.output as T, cost: outcome.actual };
    return Object.freeze(settled.eventType === 'budget_overrun' ? { ...done, overrun: settled } : done);
  }
}

/**
 * What one try is handed: frozen, its signal made only when asked for. A class, not a literal with a
 * getter: V8 gives every such literal a map of its own, which costs more than the rest of the try.
 */
class TryContext implements ToolCallContext {
  readonly #abort: LazyAbort;

  constructor(
    readonly toolCallId: string,
    readonly attempt: number,
    readonly input: JsonValue | undefined,
    abort: LazyAbort,
  ) {
    this.#abort = abort;
    Object.freeze(this);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }
}

/**
 * Runs the call, `controller` aborted (with the wall-clock violation, which it then rejects with) and its
 * result no longer waited for once the wall clock ran out, or once the clock could not be read (with the
 * store's error).
 */
function invoke<T>(
  run: ToolRun,
  call: ValidRequest<T>,
  attempt: number,
  limit: number | null,
  controller: LazyAbort,
): Promise<Outcome> {
  const ctx = new TryContext(call.toolCallId, attempt, call.input, controller);
  let running: Promise<unknown>;
  try {
    running = Promise.resolve(call.run(ctx));
  } catch (error) {
    running = Promise.reject(error);
  }
  const { estimate } = run;
  if (limit === null) return running.then((raw) => unwrap(raw, estimate));
  // One promise settled by whichever comes first, the call or the wall clock: the cheapest race.
  return new Promise<Outcome>((resolve, reject) => {
    // Ended by the wall clock running out, or by a store that cannot say whether it did: either way the
    // call is no longer waited for, and told to stop.
    const cut = (reason: unknown): void => {
      controller.abort(reason);
      reject(reason);
    };
    const stop = watchWallClock(run.service, run.planId, limit, run.timers, cut, cut);
    running.then(
      (raw) => {
        stop();
        resolve(unwrap(raw, estimate));
      },
      (error: unknown) => {
        stop();
        reject(error);
      },
    );
  });
}
