import type { StopCondition, ToolSet } from 'ai';
import { bytesToTokens } from '../../agent/prices.js';
import { endsTheRun } from '../../agent/denied.js';
import { guardOf, type GuardOption } from '../../agent/guardOption.js';
import { isLeashDenial } from './tools.js';

/**
 * A stop condition for `stopWhen` that ends the loop gracefully, with the text and tool results so far,
 * once the guard's limits leave it nothing to do: a tool call of the last step refused for the budget,
 * the steps, the wall clock or the calls of this run; or, read from the plan, the wall clock run out,
 * every step taken, or a budget left smaller than the next model call may cost (the last one's estimate
 * with what the last step added to the prompt). The SDK asks it after
 * each step with tool results, so use it with a step count:
 * `stopWhen: [stepCountIs(20), guardStop({ guard })]`. Which limit it was, once the loop ended:
 * `guard.lastLimit` (the check) and `guard.lastLimitText` (a line to show).
 */
export function guardStop<TOOLS extends ToolSet = ToolSet>(options: GuardOption): StopCondition<TOOLS> {
  const guard = guardOf(options);
  return async ({ steps }) => {
    const last = steps.at(-1);
    const ended = last?.toolResults.some(
      (r) => isLeashDenial(r.output) && endsTheRun({ eventType: r.output.check }),
    );
    return ended === true || (await guard.limitReached({ moreInputTokens: addedTokens(last) })) !== null;
  };
}

/** What a step adds to the next prompt (its text, calls and results), estimated as prompts are. */
function addedTokens(step: { readonly content: unknown } | undefined): number {
  if (step === undefined) return 0;
  try {
    return bytesToTokens(Buffer.byteLength(JSON.stringify(step.content) ?? ''));
  } catch {
    return 0; // not JSON (a cycle, a bigint): the next model call is still checked before it is made
  }
}
