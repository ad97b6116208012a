import type { Tool, ToolExecutionOptions, ToolSet } from 'ai';
import { z } from 'zod';
import type { Denied, RunGuard, ToolCallContext } from '../../agent/RunGuard.js';
import { invalid } from '../../errors.js';
import { withMissingKeys } from '../../objects.js';
import { eitherAborts } from '../../signals.js';
import { GUARD_OPTION, type GuardOption } from '../../agent/guardOption.js';
import { functionOption, optionField, parseOptions } from '../../validation.js';

export interface GuardToolsOptions extends GuardOption {
  /** Cost to reserve for one call, by tool and input; it can raise a tool's `costPerCall`, never lower it. */
  readonly estimate?: (toolName: string, input: unknown) => number | undefined;
}

const GUARD_TOOLS_OPTIONS = z.object({
  ...GUARD_OPTION,
  estimate: functionOption<NonNullable<GuardToolsOptions['estimate']>>().optional(),
});

/**
 * What a guarded tool returns in place of its output when a guard refused the call: the model reads it
 * as an `execution-denied` result with the reason, and the loop goes on. `approvalId` names the leash
 * approval a person must decide, when one is pending.
 */
export interface LeashDenial {
  readonly type: 'leash-denial';
  /** The check's event type, e.g. `budget_blocked`. */
  readonly check: string;
  readonly reason: string;
  readonly approvalId?: string;
}

/** The denials this module made: a tool's own output shaped like one is not one. */
const DENIALS = new WeakSet<object>();

/**
 * Whether a tool's output is a denial a guard of this process made, rather than what the tool returned
 * (a tool whose output only looks like one, say fetched JSON, is not taken for a denial).
 */
export function isLeashDenial(output: unknown): output is LeashDenial {
  return typeof output === 'object' && output !== null && DENIALS.has(output);
}

function denial(d: Denied): LeashDenial {
  const out = { type: 'leash-denial' as const, check: d.check.eventType, reason: d.reason };
  const made = Object.freeze(d.approval ? { ...out, approvalId: d.approval.id } : out);
  DENIALS.add(made);
  return made;
}

type AnyTool = Tool<unknown, unknown>;

/**
 * The same tool set with every `execute` run through the guard: one call is one step, checked for the
 * wall clock, a person's grant, calls per tool and per run, and the budget, and audited in the plan's log.
 * A denied call returns a {@link LeashDenial} in place of its output (the model reads why). Every tool
 * with an `execute` gets a `needsApproval` that opens a leash approval when the call needs a person (its
 * operation is in `required_confirmations`, its rule or its own `needsApproval` says so) and keeps
 * answering true for that call, so the SDK stops for approval; the call runs later only with the leash
 * grant for that call id and input: an approval forged in the messages, replayed or for changed
 * arguments gets a denial. A tool whose `execute` yields results as it goes is run to its last one.
 * Tools without an `execute` (run by the client or the provider) are passed on unchanged, unless the
 * guard has a rule for one: leash would never see its calls, so that is refused.
 */
export function guardTools<T extends ToolSet>(tools: T, options: GuardToolsOptions): T {
  const { guard, estimate } = parseOptions(GUARD_TOOLS_OPTIONS, options);
  if (typeof tools !== 'object' || tools === null) invalid('tools', 'an object of tools', tools);
  const guarded: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(tools as ToolSet)) {
    if (typeof (tool as AnyTool).execute === 'function') {
      guarded[name] = guardTool(name, tool as AnyTool, guard, estimate);
      continue;
    }
    // Run by the client or the provider: leash never sees the call, so a rule for it cannot hold.
    if (guard.ruleFor(name) !== undefined) {
      invalid(
        optionField(['tools', name]),
        'a tool with an execute, since the guard has a rule for it',
        tool,
      );
    }
    guarded[name] = tool;
  }
  return guarded as T;
}

function guardTool(
  toolName: string,
  tool: AnyTool,
  guard: RunGuard,
  estimateOf: GuardToolsOptions['estimate'],
): AnyTool {
  const execute = tool.execute as NonNullable<AnyTool['execute']>;
  const own = tool.needsApproval;
  const toModelOutput = tool.toModelOutput;
  // The guard's functions first, then the tool's other keys: as a spread with keys of its own, every
  // guarded tool would get a hidden class of its own (see withMissingKeys).
  const guarded = {
    needsApproval: async (input, opts) => {
      const requiresConfirmation = typeof own === 'function' ? await asked(own, input, opts) : own === true;
      const call = { toolCallId: opts.toolCallId, toolName, input, requiresConfirmation };
      return (await guard.approvalFor(call)) !== null;
    },
    execute: async (input: unknown, opts: ToolExecutionOptions) => {
      const given = estimateOf?.(toolName, input); // checked by the guard, as any request's
      const outcome = await guard.toolCall({
        toolCallId: opts.toolCallId,
        toolName,
        input,
        requiresConfirmation: typeof own === 'function' ? await asked(own, input, opts) : own === true,
        ...(given === undefined ? {} : { estimate: given }),
        signal: opts.abortSignal,
        run: async (ctx) => {
          const signals = new Signals(opts.abortSignal, ctx);
          const options = optionsWith(opts, signals);
          try {
            const result: unknown = await execute(ctx.input, options);
            return isAsyncIterable(result) ? await lastOf(result) : result;
          } finally {
            signals.stop();
          }
        },
      });
      return outcome.allowed ? outcome.output : denial(outcome);
    },
    toModelOutput: async (out) => {
      if (isLeashDenial(out.output)) return { type: 'execution-denied', reason: out.output.reason };
      if (toModelOutput) return toModelOutput(out);
      const value = out.output;
      return typeof value === 'string' ? { type: 'text', value } : { type: 'json', value: value ?? null };
    },
  } as Partial<AnyTool>;
  return withMissingKeys(guarded, tool) as AnyTool;
}

const SIGNALS = Symbol('leash.signals');

/** The SDK's signal and the guard's, merged when the tool asks for its `abortSignal`: most never do. */
class Signals {
  #merged: [AbortSignal, () => void] | undefined;

  constructor(
    readonly sdk: AbortSignal | undefined,
    readonly guard: ToolCallContext,
  ) {}

  get signal(): AbortSignal {
    return (this.#merged ??= eitherAborts(this.sdk, this.guard.signal))[0];
  }

  stop(): void {
    this.#merged?.[1]();
  }
}

/**
 * A tool's `abortSignal`, read from the {@link Signals} its options carry: one getter for every call, so
 * V8 shares one shape for them all (a getter made per call gives each options object a shape of its own).
 */
const ABORT_SIGNAL: PropertyDescriptor = Object.freeze({
  enumerable: true,
  configurable: true,
  get(this: { readonly [SIGNALS]: Signals }): AbortSignal {
    return this[SIGNALS].signal;
  },
});

/**
 * The SDK's options for the tool, with an `abortSignal` that also aborts when the guard's does. Built
 * key by key without the SDK's own `abortSignal`: turning a data property into a getter would leave the
 * object a shape of its own.
 */
function optionsWith(opts: ToolExecutionOptions, signals: Signals): ToolExecutionOptions {
  const options: Record<string | symbol, unknown> = {};
  for (const key of Object.keys(opts)) {
    if (key !== 'abortSignal') options[key] = opts[key as keyof ToolExecutionOptions];
  }
  options[SIGNALS] = signals;
  Object.defineProperty(options, 'abortSignal', ABORT_SIGNAL);
  return options as unknown as ToolExecutionOptions;
}

/**
 * The answer of the tool's own `needsApproval` function to whether a person must approve the call: it
 * needs one then, whatever the policy. (A `needsApproval` that is no function is read where it is used,
 * without the tick an async call costs.)
 */
async function asked(
  own: Extract<AnyTool['needsApproval'], (...args: never[]) => unknown>,
  input: unknown,
  opts: ToolExecutionOptions,
): Promise<boolean> {
  const { toolCallId, messages, experimental_context } = opts;
  return (await own(input, { toolCallId, messages, experimental_context })) === true;
}

function isAsyncIterable(result: unknown): result is AsyncIterable<unknown> {
  return typeof result === 'object' && result !== null && Symbol.asyncIterator in result;
}

/** The result of an `execute` that yields as it goes, as the SDK takes it: the last value. */
async function lastOf(result: AsyncIterable<unknown>): Promise<unknown> {
  let last: unknown;
  for await (const value of result) last = value;
  return last;
}
