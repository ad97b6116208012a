import type { FunctionTool, RunContext, RunState, RunToolApprovalItem, Tool } from '@openai/agents';
import { guardOptions, type GuardOption } from '../../agent/guardOption.js';
import type { Denied, RunGuard } from '../../agent/RunGuard.js';
import { invalid } from '../../errors.js';

type AnyFunctionTool = FunctionTool<any, any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Details = Parameters<AnyFunctionTool['invoke']>[2];

function denialText(d: Denied): string {
  return `leash denied this call (${d.check.eventType}): ${d.reason}`;
}

/** The call's arguments as the grant is bound to them: the JSON the model gave, parsed. */
function parsed(input: string): unknown {
  try {
    return JSON.parse(input) as unknown;
  } catch {
    return input; // the tool reports its own error for it
  }
}

/**
 * The same tools with every function tool's `needsApproval` and `invoke` run through the guard. A call
 * that needs a person (its operation in `required_confirmations`, its rule, or the tool's own
 * `needsApproval`) opens a leash approval under the model's call id, so the run stops with an
 * interruption; the guarded `invoke` runs a call only with the unused leash grant for that call id and
 * arguments, whatever the run state says: a serialized state approved once and run twice, an approval
 * made only in the SDK (`state.approve`), or the SDK's sticky `alwaysApprove` runs nothing without a
 * grant. Every call is one step, checked for calls per tool and per run and the budget, and audited. A
 * refused call answers the model with why. Hosted and other non-function tools are passed on unchanged.
 */
export function guardAgentTools<T extends readonly Tool[]>(tools: T, options: GuardOption): T {
  const guard = guardOptions(options, [])['guard'] as RunGuard;
  if (!Array.isArray(tools)) invalid('tools', 'an array of tools', tools);
  return tools.map((t) =>
    t.type === 'function' ? guardTool(t as AnyFunctionTool, guard) : t,
  ) as unknown as T;
}

function guardTool(tool: AnyFunctionTool, guard: RunGuard): AnyFunctionTool {
  const toolName = tool.name;
  return {
    ...tool,
    needsApproval: async (runContext: RunContext, input: unknown, callId?: string) => {
      const own = await tool.needsApproval(runContext, input, callId);
      // Without the call's id no grant can be bound to it: a person must approve, and the call is refused.
      if (callId === undefined) return true;
      const approval = await guard.approvalFor({
        toolCallId: callId,
        toolName,
        input,
        requiresConfirmation: own,
      });
      return approval !== null;
    },
    invoke: async (runContext: RunContext, input: string, details?: Details) => {
      const callId = details?.toolCall?.callId;
      if (callId === undefined)
        return `leash denied this call of "${toolName}": the run gave no call id to bind a grant to`;
      const outcome = await guard.toolCall({
        toolCallId: callId,
        toolName,
        input: parsed(input),
        run: (ctx) => tool.invoke(runContext, JSON.stringify(ctx.input), details),
      });
      return outcome.allowed ? outcome.output : denialText(outcome);
    },
  };
}

/**
 * Carries the decisions people made in leash (`leash approve`, the dashboard, `service.approve/deny`)
 * into a paused run's state: an interruption whose leash approval was approved is approved, one that was
 * denied is rejected, one nobody decided stays. Resolves with the interruptions still waiting.
 */
export async function applyLeashDecisions(
  state: RunState<any, any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  options: GuardOption,
): Promise<RunToolApprovalItem[]> {
  const guard = guardOptions(options, [])['guard'] as RunGuard;
  const waiting: RunToolApprovalItem[] = [];
  for (const item of state.getInterruptions()) {
    const callId = (item.rawItem as { callId?: unknown }).callId;
    const approval =
      typeof callId === 'string' ? await guard.service.findApproval(guard.planId, callId) : null;
    if (approval?.status === 'approved') state.approve(item);
    else if (approval?.status === 'denied') state.reject(item);
    else waiting.push(item);
  }
  return waiting;
}
