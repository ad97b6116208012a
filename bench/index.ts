import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AutonomyGuardrailService,
  ManualClock,
  MemoryStore,
  PlanExecutor,
  systemClock,
  type AuditEntry,
  type AutonomyGuardrails,
  type Plan,
  type Tool,
} from '../src/index.js';
import {
  benchGuardrails,
  benchLimiter,
  benchService,
  fail,
  fullTrail,
  HOT_ENTRIES,
  metadataRoundTrip,
  PLAN_ID,
  serviceWithFullTrail,
  START_MS,
} from './fixtures.js';
import { aiSdkGroups, aiSdkTargets, guardedCallCases } from './ai-sdk.js';
import { mcpGroup, mcpHttpGroup, mcpHttpTargets, mcpTargets } from './mcp.js';
import { telemetryGroups, telemetryTargets } from './telemetry.js';
import { runCases, runGroup, type BenchCase, type CaseResult, type GroupResult } from './harness.js';
import {
  differenceTarget,
  latencyTarget,
  resultMarkdown,
  resultTable,
  targetMarkdown,
  targetTable,
  throughputTarget,
  type Target,
} from './report.js';

const TIME_MS = 1_000;
const WARMUP_MS = 250;
const SAMPLE_MS = 0.25;
const METADATA_ENTRIES = 10_000;
const PLAN_DECISIONS = 100;
const TRAIL_CAPACITIES = [10, 1_000, 1_000_000] as const;

const NAMES = {
  rateLimiter: 'RateLimiterMemory.consume',
  serviceBudget: 'service.checkToolBudget',
  serviceStep: 'service.checkStepLimit',
  serviceBudgetSystemClock: 'service.checkToolBudget (systemClock)',
  serviceBudgetFullLog: 'service.checkToolBudget (keepLog: every entry kept)',
  executor: `PlanExecutor.execute (${PLAN_DECISIONS} no-op decisions)`,
  plainLoop: `plain loop (${PLAN_DECISIONS} no-op tool calls)`,
  metadata: `metadata round trip (${METADATA_ENTRIES.toLocaleString('en-US')} entries)`,
  trailAdd: (capacity: number) => `AuditTrail.add @ ${capacity.toLocaleString('en-US')} (full)`,
  trailAddCold: (capacity: number) =>
    `AuditTrail.add @ ${capacity.toLocaleString('en-US')} (full, cold evictions)`,
} as const;

function syncCheck(name: string, op: (g: AutonomyGuardrails) => unknown): BenchCase {
  return {
    name: `AutonomyGuardrails.${name}`,
    async: false,
    prepare: () => {
      const g = benchGuardrails();
      const first = op(g) as { allowed?: unknown };
      if (typeof first.allowed !== 'boolean') fail(`${name} did not return a GuardCheck`);
      return { op: () => op(g) };
    },
  };
}

const syncCases: BenchCase[] = [
  syncCheck('checkStepLimit', (g) => g.checkStepLimit(41)),
  syncCheck('checkToolBudget', (g) => g.checkToolBudget(0.25)),
  syncCheck('checkConfirmation', (g) => g.checkConfirmation('read_file')),
  syncCheck('checkWallClock', (g) => g.checkWallClock(START_MS + 1_234_567)),
  syncCheck('checkActorToolCalls', (g) => g.checkActorToolCalls(7)),
  syncCheck('checkRetries', (g) => g.checkRetries(2)),
];

const rateLimiterCase: BenchCase = {
  name: NAMES.rateLimiter,
  async: true,
  prepare: async () => {
    const limiter = await benchLimiter();
    return { op: () => limiter.consume(PLAN_ID, 1) };
  },
};

const serviceCases: BenchCase[] = [
  {
    name: NAMES.serviceBudget,
    async: true,
    prepare: async () => {
      const { service } = await benchService(new ManualClock(START_MS));
      if (!(await service.checkToolBudget(PLAN_ID, 0.01)).allowed) fail('checkToolBudget denied');
      return { op: () => service.checkToolBudget(PLAN_ID, 0.01) };
    },
  },
  {
    name: NAMES.serviceStep,
    async: true,
    prepare: async () => {
      const { service } = await benchService(new ManualClock(START_MS));
      if (!(await service.checkStepLimit(PLAN_ID, 41)).allowed) fail('checkStepLimit denied');
      return { op: () => service.checkStepLimit(PLAN_ID, 41) };
    },
  },
  {
    name: NAMES.serviceBudgetSystemClock,
    async: true,
    prepare: async () => {
      const { service } = await benchService(systemClock);
      if (!(await service.checkToolBudget(PLAN_ID, 0.01)).allowed) fail('checkToolBudget denied');
      return { op: () => service.checkToolBudget(PLAN_ID, 0.01) };
    },
  },
];

/**
 * Keeps every entry, so its memory and garbage collection grow with the run: timed on its own, not
 * beside the rows it would slow down.
 */
const fullLogCase: BenchCase = {
  name: NAMES.serviceBudgetFullLog,
  async: true,
  prepare: async () => {
    const { service } = await benchService(new ManualClock(START_MS), undefined, true);
    if (!(await service.checkToolBudget(PLAN_ID, 0.01)).allowed) fail('checkToolBudget denied');
    return { op: () => service.checkToolBudget(PLAN_ID, 0.01) };
  },
};

let metadataJsonLength = 0;

const metadataCase: BenchCase = {
  name: NAMES.metadata,
  async: true,
  prepare: async () => {
    const service = await serviceWithFullTrail(METADATA_ENTRIES);
    const before = JSON.stringify(await service.toMetadata(PLAN_ID));
    metadataJsonLength = await metadataRoundTrip(service);
    if (JSON.stringify(await service.toMetadata(PLAN_ID)) !== before) fail('round trip changed the state');
    return { op: () => metadataRoundTrip(service) };
  },
};

/** Appends to a full trail; `cold` re-appends the fill entries, so each evicted entry is a cold one. */
function trailCase(capacity: number, cold: boolean): BenchCase {
  return {
    name: cold ? NAMES.trailAddCold(capacity) : NAMES.trailAdd(capacity),
    async: false,
    prepare: () => {
      const { trail, filledWith, hot } = fullTrail(capacity);
      // Re-appending `filledWith[k]` evicts that very entry, last touched `capacity` adds earlier.
      const cycle = cold ? filledWith : hot;
      let k = 0;
      return {
        op: () => {
          trail.add(cycle[k] as AuditEntry);
          if (++k === cycle.length) k = 0;
        },
        release: () => {
          if (trail.size !== capacity) fail(`trail of capacity ${capacity} holds ${trail.size}`);
        },
      };
    },
  };
}

/**
 * The same tool called in a plain loop, then a plan of its no-op decisions: a group whose difference is
 * what the executor adds.
 */
function executorCases(): BenchCase[] {
  const noop: Tool = { name: 'noop', description: 'does nothing', run: (input) => input };
  const decisions = Array.from({ length: PLAN_DECISIONS }, (_, i) => ({
    id: `d${i}`,
    tool: 'noop',
    input: i,
  }));
  return [
    {
      name: NAMES.plainLoop,
      async: true,
      prepare: () => ({
        op: async () => {
          const outputs: unknown[] = [];
          for (const d of decisions) outputs.push(await noop.run(d.input, undefined as never));
          return outputs;
        },
      }),
    },
    {
      name: NAMES.executor,
      async: true,
      prepare: async () => {
        const store = new MemoryStore({ keepLog: false });
        const service = new AutonomyGuardrailService({ clock: new ManualClock(START_MS), store });
        await service.configureGuardrails(PLAN_ID, { toolBudget: 1e9, requiredConfirmations: ['deploy'] });
        const executor = new PlanExecutor({ service, tools: [noop] });
        const run = async () => {
          const plan: Plan = { id: PLAN_ID, phase: 'execute', decisions, metadata: {} };
          const result = await executor.execute(plan);
          if (result.status !== 'completed' || result.completed.length !== PLAN_DECISIONS) {
            fail(`executor run ended ${result.status}`);
          }
          return result;
        };
        await run();
        return { op: run };
      },
    },
  ];
}

const trailCases: BenchCase[] = [
  ...TRAIL_CAPACITIES.map((capacity) => trailCase(capacity, false)),
  trailCase(1_000_000, true),
];

function find(results: readonly CaseResult[], name: string): CaseResult {
  return results.find((r) => r.name === name) ?? fail(`no result for ${name}`);
}

/** The service's checks against the rate limiter, from the rows of the limiter group. */
function limiterTargets(results: readonly CaseResult[]): Target[] {
  const limiter = find(results, NAMES.rateLimiter);
  return [NAMES.serviceBudget, NAMES.serviceBudgetSystemClock, NAMES.serviceStep].map((name) =>
    throughputTarget(`${name} ÷ ${NAMES.rateLimiter} (ops/s)`, find(results, name), limiter, 1.0),
  );
}

/** What the executor adds per decision over the plain loop, from the executor group's difference. */
function executorTarget(run: GroupResult): Target {
  const over = run.over[0] ?? fail('no difference for the executor');
  return differenceTarget(
    'time PlanExecutor adds per decision over the plain loop',
    { diffNs: over.diffNs / PLAN_DECISIONS, marginNs: over.marginNs / PLAN_DECISIONS },
    3_000,
  );
}

/** The slowest pure check against the rate limiter, from the sync rows and the limiter group. */
function slowestSyncTarget(syncRun: readonly CaseResult[], limiterRun: GroupResult): Target {
  const slowest = syncRun.reduce((a, b) => (b.opsPerSec < a.opsPerSec ? b : a));
  return throughputTarget(
    `slowest sync check (${slowest.name.replace('AutonomyGuardrails.', '')}) ÷ ${NAMES.rateLimiter} (ops/s)`,
    slowest,
    find(limiterRun.results, NAMES.rateLimiter),
    2.0,
  );
}

/** How a full audit trail's add grows with its capacity, hot and with cold evictions. */
function trailTargets(results: readonly CaseResult[]): Target[] {
  const small = find(results, NAMES.trailAdd(10));
  return [
    latencyTarget(
      `${NAMES.trailAdd(1_000_000)} ÷ ${NAMES.trailAdd(10)} (ns/op)`,
      find(results, NAMES.trailAdd(1_000_000)),
      small,
      1.5,
    ),
    latencyTarget(
      `${NAMES.trailAddCold(1_000_000)} ÷ ${NAMES.trailAdd(10)} (ns/op)`,
      find(results, NAMES.trailAddCold(1_000_000)),
      small,
    ),
  ];
}

async function main(): Promise<void> {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `leash bench — Node ${process.version}, ${cpu}, ${os.availableParallelism()} cores; ` +
      `tinybench: ${TIME_MS} ms per task after ${WARMUP_MS} ms warmup, samples of ~${SAMPLE_MS} ms batches; ` +
      `code under test: ${path.relative(process.cwd(), fileURLToPath(import.meta.resolve('../src/index.js')))}\n`,
  );

  const restCases = [fullLogCase, metadataCase, ...trailCases, ...guardedCallCases()];
  // The rows compared with each other are timed round by round (runGroup): timed one after the other,
  // the machine's drift moved them by more than the differences they are read for.
  const limiterGroup = [rateLimiterCase, ...serviceCases];
  const executorGroup = executorCases();
  const aiGroups = aiSdkGroups();
  const mcp = mcpGroup();
  const mcpHttp = mcpHttpGroup();
  const traced = telemetryGroups();
  const groups = [...aiGroups, mcp, mcpHttp, ...traced];
  // `npm run bench -- <text>` times only the cases whose name holds the text, each group of which one
  // does as a whole, and the targets of what it ran.
  const only = process.argv[2];
  const wanted = (c: BenchCase): boolean => only === undefined || c.name.includes(only);
  const holds = (g: readonly BenchCase[]): boolean => g.some(wanted);
  const options = {
    timeMs: TIME_MS,
    warmupMs: WARMUP_MS,
    sampleMs: SAMPLE_MS,
    onResult: (r: CaseResult) =>
      console.log(`  ${r.name}: ${Math.round(r.opsPerSec).toLocaleString('en-US')} ops/s (batch ${r.batch})`),
  };
  // In the order of the table.
  const syncRun = await runCases(syncCases.filter(wanted), options);
  const limiterRun = holds(limiterGroup) ? await runGroup(limiterGroup, options) : undefined;
  const executorRun = holds(executorGroup) ? await runGroup(executorGroup, options) : undefined;
  const restRun = await runCases(restCases.filter(wanted), options);
  const grouped = new Map<readonly BenchCase[], GroupResult>();
  for (const g of groups) if (holds(g)) grouped.set(g, await runGroup(g, options));
  const results = [
    ...syncRun,
    ...(limiterRun?.results ?? []),
    ...(executorRun?.results ?? []),
    ...restRun,
    ...[...grouped.values()].flatMap((g) => g.results),
  ];

  const ran = (...names: string[]): boolean => names.every((n) => results.some((r) => r.name === n));
  const namesOf = (gs: readonly (readonly BenchCase[])[]): string[] => gs.flat().map((c) => c.name);
  const targets = [
    ...(limiterRun === undefined ? [] : limiterTargets(limiterRun.results)),
    ...(limiterRun === undefined || syncRun.length === 0 ? [] : [slowestSyncTarget(syncRun, limiterRun)]),
    ...(executorRun === undefined ? [] : [executorTarget(executorRun)]),
    ...(ran(NAMES.trailAdd(1_000_000), NAMES.trailAddCold(1_000_000), NAMES.trailAdd(10))
      ? trailTargets(results)
      : []),
    // A kind's targets, when every case of its groups ran: the AI SDK's, then the MCP proxy's.
    ...(ran(...namesOf(aiGroups)) ? aiSdkTargets([...grouped.values()]) : []),
    ...(ran(...namesOf([mcp])) ? mcpTargets(grouped.get(mcp) as GroupResult) : []),
    ...(ran(...namesOf([mcpHttp])) ? mcpHttpTargets(grouped.get(mcpHttp) as GroupResult) : []),
    ...(ran(...namesOf(traced)) ? telemetryTargets(traced.map((g) => grouped.get(g) as GroupResult)) : []),
  ];
  if (only !== undefined) {
    console.log(`\n${resultTable(results)}`);
    if (targets.length > 0) console.log(`\n${targetTable(targets)}`);
    return;
  }

  const notes = [
    'ops/s = 1e9 / mean ns/op; ± is the 95% margin of error of the mean; each sample is the mean of a batch of back-to-back calls (async calls awaited one by one).',
    `Service and executor rows use the service's default store, keeping the window only (keepLog: false; audit capacity 1,000, full, so every check also evicts) and a ManualClock, except the systemClock row; the keepLog row keeps every entry, so its memory and garbage collection grow with the run. RateLimiterMemory has Number.MAX_SAFE_INTEGER points over 3,600 s and reads Date.now() on every call. The limiter and service rows are timed in alternating batches, as are the plain loop and the executor (whose target is the mean of the round-by-round differences, per decision).`,
    `Metadata round trip: toMetadata → JSON.stringify → JSON.parse → loadFromMetadata of ${(metadataJsonLength / 1024).toLocaleString('en-US', { maximumFractionDigits: 0 })} KiB of JSON.`,
    `AuditTrail.add: each trail is pre-filled to capacity with distinct entries, so every add evicts one; the appended entries cycle through ${HOT_ENTRIES.toLocaleString('en-US')} ready-made ones that stay in cache, as a freshly built entry would. The "cold evictions" row appends the fill entries again instead, so each add evicts an entry last touched ${(1_000_000).toLocaleString('en-US')} adds earlier and pays a cache miss: it prices memory, not the ring, and has no target.`,
    "AI SDK rows: real generateText calls of one step (stopWhen: stepCountIs(1)) on the AI SDK mock model, which asks for one tool call with a new id each time; guarded rows give the step guardTools with a new RunGuard (one per run, as an app makes) on a plan with roomy limits (a step, the wall clock, the per-invocation count, a reservation and its commit per call, each audited). The 1 ms rows hold the thread for 1 ms in the model call (a timer would round the step to whole milliseconds). The bare and guarded rows of each kind are timed in alternating batches, the order rotated every round, and their targets are the mean of the round-by-round differences: timed apart, the machine's drift between two runs of a few hundred µs is larger than the difference.",
    "Traced rows: RunGuard.toolCall with a new guard per call on a MemoryStore plan with roomy limits, each telemetry setting timed round by round against telemetry false: the API with no SDK (its no-op tracer, no context manager registered), and the SDK's BasicTracerProvider tracer passed in the telemetry option, a SimpleSpanProcessor to an InMemorySpanExporter (emptied every 10,000 spans) under the SDK's AsyncLocalStorage context manager, registered for that group only.",
    "The two guard rows without a step (RunGuard.toolCall; a guarded tool called as the SDK calls it: needsApproval, execute and toModelOutput) make a new RunGuard, and the tool set, per call on a MemoryStore plan with roomy limits, and are timed back to back: the guard's own cost, which the step rows' difference exceeds by what running inside a step adds (its code and garbage push the guard's out of the caches).",
  ];

  console.log(`\n${resultTable(results)}\n`);
  console.log(`${targetTable(targets)}\n`);
  for (const note of notes) console.log(`- ${note}`);
  console.log('\nMarkdown:\n');
  console.log(`${resultMarkdown(results)}\n`);
  console.log(`${targetMarkdown(targets)}\n`);
  for (const note of notes) console.log(`- ${note}`);
}

await main();
