import {
  tool,
  type FunctionTool,
  type RunContext,
  type RunState,
  type RunToolApprovalItem,
  type ToolOptions,
} from '@openai/agents';
import { guardOf, type GuardOption } from '../../agent/guardOption.js';
import { deniedText } from '../../agent/denied.js';
import { invalid } from '../../errors.js';
import { parseIsoMs } from '../../iso.js';
import { eitherAborts } from '../../signals.js';
import { withMissingKeys } from '../../objects.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- the SDK's tool types are generic over any */
type Options = ToolOptions<any, any, any>;
type Details = Parameters<FunctionTool<any, any, any>['invoke']>[2];
type Execute = (input: unknown, context?: RunContext<any>, details?: Details) => unknown;
type NeedsApproval = (context: RunContext<any>, input: unknown, callId?: string) => Promise<boolean>;
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * The SDK's `tool(options)`, with its `needsApproval` and `execute` run through the guard; the SDK still
 * parses the arguments with the tool's schema, so both see them as the schema reads them. A call that
 * needs a person (its operation in `required_confirmations`, its rule, or the tool's own
 * `needsApproval`) opens a leash approval under the model's call id, so the run stops with an
 * interruption; the guarded `execute` runs a call only with the unused leash grant for that call id and
 * arguments, whatever the run state says: a serialized state approved once and run twice, an approval
 * made only in the SDK (`state.approve`), or the SDK's sticky `alwaysApprove` runs nothing without a
 * grant. Every call is one step, checked for calls per tool and per run and the budget, and audited. A
 * refused call answers the model with why. The arguments must be JSON (the grant is bound to their
 * canonical hash).
 */
export function guardedTool<T extends Options>(options: T, guarding: GuardOption): ReturnType<typeof tool> {
  const made = guardTool(options, guarding);
  GUARDED.add(made);
  return made;
}

/** The tools {@link guardedTool} made. */
const GUARDED = new WeakSet<object>();

/** Whether the interruption is a call of a tool {@link guardedTool} made. */
export function isGuarded(item: RunToolApprovalItem): boolean {
  const tools = (item.agent as { tools?: unknown } | undefined)?.tools;
  return (
    Array.isArray(tools) && tools.some((t: { name?: unknown }) => t.name === item.name && GUARDED.has(t))
  );
}

function guardTool<T extends Options>(options: T, guarding: GuardOption): ReturnType<typeof tool> {
  const guard = guardOf(guarding);
  const o = options as unknown as { name?: unknown; needsApproval?: unknown; execute?: unknown };
  const name = o.name;
  if (typeof name !== 'string' || name.length === 0) invalid('name', 'the tool’s name', name);
  const execute = o.execute;
  if (typeof execute !== 'function') invalid('execute', 'a function', execute);
  const own = async (context: RunContext, input: unknown, callId?: string): Promise<boolean> =>
    typeof o.needsApproval === 'function'
      ? (await (o.needsApproval as NeedsApproval)(context, input, callId)) === true
      : o.needsApproval === true;
  return tool({
    ...options,
    needsApproval: async (context: RunContext, input: unknown, callId?: string) => {
      const asked = await own(context, input, callId);
      // Without the call's id no grant can be bound to it: a person must approve, and the call is refused.
      if (callId === undefined) return true;
      const call = { toolCallId: callId, toolName: name, input, requiresConfirmation: asked };
      return (await guard.approvalFor(call)) !== null;
    },
    execute: async (input: unknown, context?: RunContext, details?: Details) => {
      const callId = details?.toolCall?.callId;
      if (callId === undefined || context === undefined) {
        return `leash denied this call of "${name}": the run gave no call id to bind a grant to`;
      }
      const outcome = await guard.toolCall({
        toolCallId: callId,
        toolName: name,
        input,
        // Asked again here: the SDK's sticky alwaysApprove skips needsApproval, never this.
        requiresConfirmation: await own(context, input, callId),
        signal: details?.signal,
        run: async (ctx) => {
          const [signal, done] = eitherAborts(details?.signal, ctx.signal);
          try {
            return await (execute as Execute)(ctx.input, context, withMissingKeys({ signal }, details ?? {}));
          } finally {
            done();
          }
        },
      });
      return outcome.allowed ? outcome.output : deniedText(outcome.check);
    },
  } as T);
}

/**
 * Carries the decisions people made in leash (`leash approve`, the dashboard, `service.approve/deny`)
 * into a paused run's state: an interruption whose leash approval was approved is approved; one that was
 * denied or used already is rejected, and so is one of a guarded tool that no person can approve in
 * leash (its approval expired, or none was opened: the SDK stops on a call whose arguments are not JSON
 * before asking the tool); one a person may still decide stays, as does one of a tool leash does not
 * guard. Resolves with the interruptions still waiting.
 */
export async function applyLeashDecisions(
  state: RunState<any, any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  options: GuardOption,
): Promise<RunToolApprovalItem[]> {
  const guard = guardOf(options);
  const waiting: RunToolApprovalItem[] = [];
  const now = guard.service.clock.now();
  for (const item of state.getInterruptions()) {
    const callId = (item.rawItem as { callId?: unknown }).callId;
    const approval =
      typeof callId === 'string' ? await guard.service.findApproval(guard.planId, callId) : null;
    if (approval?.status === 'approved') state.approve(item);
    else if (approval?.status === 'pending' && parseIsoMs(approval.expiresAt) >= now) waiting.push(item);
    else if (approval !== null || isGuarded(item)) state.reject(item);
    else waiting.push(item);
  }
  return waiting;
}
