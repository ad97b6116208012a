// The cost leash/ai-sdk adds to a tool call: real generateText steps on the AI SDK's mock model, one
// tool call each, bare and guarded, on the memory and SQLite stores; and the same step with 1 ms of
// simulated model latency (the thread held, not a timer), to see the guard's share of a step.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, stepCountIs, tool, type ToolSet } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { guardTools } from '../src/adapters/ai-sdk/index.js';
import {
  AutonomyGuardrailService,
  ManualClock,
  MemoryStore,
  RunGuard,
  SqliteStore,
  type GuardrailStore,
} from '../src/index.js';
import { fail, PLAN_ID, ROOMY_LIMITS, START_MS } from './fixtures.js';
import type { BenchCase, GroupResult } from './harness.js';
import { differenceRatioTarget, differenceTarget, medianOf, type Target } from './report.js';

export const AI_NAMES = {
  bare: 'generateText step, 1 tool call (bare)',
  memory: 'generateText step, 1 tool call (guardTools, MemoryStore)',
  sqlite: 'generateText step, 1 tool call (guardTools, SqliteStore file)',
  bareSlow: 'generateText step, 1 tool call, 1 ms model (bare)',
  memorySlow: 'generateText step, 1 tool call, 1 ms model (guardTools, MemoryStore)',
  runGuardCall: 'RunGuard.toolCall, new guard per call (MemoryStore)',
  toolCalledDirectly: 'guarded tool called as the SDK calls it, no step (guardTools, MemoryStore)',
} as const;

const echo = tool({ inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => n });

/**
 * Holds the thread for `ms`: a model's latency without a timer, whose 1 ms granularity would round a
 * step up to whole milliseconds and hide or exaggerate what the guard adds.
 */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** A mock model whose every call asks for one `echo` call with a new id, after `latencyMs` when set. */
function mockModel(latencyMs: number): MockLanguageModelV3 {
  let n = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      if (latencyMs > 0) busyFor(latencyMs);
      const id = `call-${++n}`;
      return {
        content: [{ type: 'tool-call', toolCallId: id, toolName: 'echo', input: `{"n":${n}}` }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 5, text: 5, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
}

/** One step: a model call and the one tool call it asks for, with the tools `toolsFor` gives. */
function stepCase(name: string, latencyMs: number, toolsFor: () => Promise<() => ToolSet>): BenchCase {
  return {
    name,
    async: true,
    prepare: async () => {
      const model = mockModel(latencyMs);
      const tools = await toolsFor();
      const op = async () => {
        const r = await generateText({ model, tools: tools(), stopWhen: stepCountIs(1), prompt: 'go' });
        if (r.toolResults.length !== 1 || typeof r.toolResults[0]?.output !== 'number')
          fail(`${name}: no result`);
        return r;
      };
      await op();
      return { op };
    },
  };
}

/** Guarded tools on `store`: one RunGuard per generateText call, as an app makes one per run. */
function guarded(store: () => Promise<GuardrailStore>): () => Promise<() => ToolSet> {
  return async () => {
    const service = await plannedOn(await store());
    return () => guardTools({ echo }, { guard: new RunGuard({ service, planId: PLAN_ID }) });
  };
}

/** A service over `store` with the bench plan configured, its limits roomy. */
async function plannedOn(store: GuardrailStore): Promise<AutonomyGuardrailService> {
  const service = new AutonomyGuardrailService({ clock: new ManualClock(START_MS), store });
  await service.configureGuardrails(PLAN_ID, ROOMY_LIMITS);
  return service;
}

const memory = async (): Promise<GuardrailStore> => new MemoryStore({ keepLog: false });
const sqlite = async (): Promise<GuardrailStore> => {
  const store = new SqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'leash-bench-')), 'leash.db') });
  await store.migrate();
  return store;
};
const bare = async () => () => ({ echo });

/** What the SDK calls of a guarded tool, as it calls them. */
interface CalledTool {
  needsApproval(input: unknown, opts: { toolCallId: string; messages: [] }): Promise<boolean>;
  execute(input: unknown, opts: { toolCallId: string; messages: [] }): Promise<unknown>;
  toModelOutput(out: { toolCallId: string; input: unknown; output: unknown }): Promise<unknown>;
}

/** A new RunGuard on `service`'s bench plan per call, and one tool call through it: allowed, or `name` fails. */
export function guardedToolCall(service: AutonomyGuardrailService, name: string): () => Promise<unknown> {
  let n = 0;
  return async () => {
    const guard = new RunGuard({ service, planId: PLAN_ID });
    const out = await guard.toolCall({
      toolCallId: `call-${++n}`,
      toolName: 'echo',
      input: { n },
      run: () => n,
    });
    if (!out.allowed) fail(`${name}: ${out.reason}`);
    return out;
  };
}

/**
 * The guard's own work, without the SDK's step around it: a new RunGuard's `toolCall`, and what the SDK
 * calls of a guarded tool (`needsApproval`, `execute`, `toModelOutput`), back to back on MemoryStore.
 * Set beside the step rows, the difference is what the step's code and garbage cost the guard.
 */
export function guardedCallCases(): BenchCase[] {
  let n = 0;
  return [
    {
      name: AI_NAMES.runGuardCall,
      async: true,
      prepare: async () => {
        const op = guardedToolCall(await plannedOn(await memory()), AI_NAMES.runGuardCall);
        await op();
        return { op };
      },
    },
    {
      name: AI_NAMES.toolCalledDirectly,
      async: true,
      prepare: async () => {
        const service = await plannedOn(await memory());
        const op = async () => {
          const tool = guardTools({ echo }, { guard: new RunGuard({ service, planId: PLAN_ID }) })
            .echo as unknown as CalledTool;
          const opts = { toolCallId: `call-${++n}`, messages: [] as [] };
          const input = { n };
          if (await tool.needsApproval(input, opts)) fail('needsApproval said yes');
          const output = await tool.execute(input, opts);
          if (output !== n) fail(`${AI_NAMES.toolCalledDirectly}: no result`);
          return tool.toModelOutput({ toolCallId: opts.toolCallId, input, output });
        };
        await op();
        return { op };
      },
    },
  ];
}

/**
 * Each group timed round by round (runGroup): its first case bare, the others guarded, so a guarded
 * step's extra time is taken against bare steps run beside it.
 */
export function aiSdkGroups(): BenchCase[][] {
  return [
    [
      stepCase(AI_NAMES.bare, 0, bare),
      stepCase(AI_NAMES.memory, 0, guarded(memory)),
      stepCase(AI_NAMES.sqlite, 0, guarded(sqlite)),
    ],
    [stepCase(AI_NAMES.bareSlow, 1, bare), stepCase(AI_NAMES.memorySlow, 1, guarded(memory))],
  ];
}

export function aiSdkTargets(groups: readonly GroupResult[]): Target[] {
  const over = (name: string) =>
    groups.flatMap((g) => g.over).find((o) => o.name === name) ?? fail(`no difference for ${name}`);
  const bareSlow =
    groups.flatMap((g) => g.results).find((r) => r.name === AI_NAMES.bareSlow) ?? fail('no bare 1 ms row');
  return [
    differenceTarget(
      'time guardTools adds per tool call over a bare AI SDK tool call (MemoryStore)',
      over(AI_NAMES.memory),
      50_000,
    ),
    differenceTarget(
      'time guardTools adds per tool call over a bare AI SDK tool call (SqliteStore file)',
      over(AI_NAMES.sqlite),
    ),
    differenceRatioTarget(
      'guarded ÷ bare step with 1 ms of model latency (ns/op)',
      bareSlow,
      over(AI_NAMES.memorySlow),
      1.02,
    ),
    // The medians beside the means the targets read: between runs the means moved several times over.
    differenceTarget(
      'median time guardTools adds per tool call (MemoryStore)',
      medianOf(over(AI_NAMES.memory)),
    ),
    differenceTarget(
      'median time guardTools adds per tool call, 1 ms model (MemoryStore)',
      medianOf(over(AI_NAMES.memorySlow)),
    ),
  ];
}
