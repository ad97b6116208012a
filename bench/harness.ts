import v8 from 'node:v8';
import vm from 'node:vm';
import { Bench, type FnReturnedObject, type HookMode } from 'tinybench';

/** What a case hands the harness once its fixture is built: the operation to time, and how to drop it. */
export interface Prepared {
  readonly op: () => unknown;
  /** Frees the fixture once the case has run, so a large one cannot slow the cases after it. */
  readonly release?: () => void;
}

/** One benchmark: a name, whether its operation returns a promise, and a lazily built fixture. */
export interface BenchCase {
  readonly name: string;
  readonly async: boolean;
  readonly prepare: () => Prepared | Promise<Prepared>;
}

export interface CaseResult {
  readonly name: string;
  /** 1e9 / meanNs: the reciprocal of the mean, so ratios of ops/s and of ns/op agree. */
  readonly opsPerSec: number;
  readonly meanNs: number;
  /** Relative margin of error of the mean, 95% confidence, in percent. */
  readonly rmePercent: number;
  /** Timed samples; each sample is the mean of `batch` back-to-back calls. */
  readonly samples: number;
  readonly batch: number;
}

export interface RunOptions {
  /** Time budget of each case's timed phase, in ms. */
  readonly timeMs: number;
  /** Time budget of each case's warmup phase, in ms. */
  readonly warmupMs: number;
  /** Wall time one sample should take; calls are batched up to this. */
  readonly sampleMs: number;
  readonly onResult?: (result: CaseResult) => void;
}

const MAX_BATCH = 100_000;

/** Written by every timed call so the optimizer cannot drop a call whose result is unused. */
export let sink: unknown;

/**
 * A full collection between cases, so garbage one case left behind is not collected on another's time.
 * `--expose-gc` can be set at run time; the `gc` it installs is reachable from a fresh context.
 */
const collectGarbage: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  const gc: unknown = vm.runInNewContext('gc');
  return typeof gc === 'function' ? (gc as () => void) : () => undefined;
})();

interface CaseState {
  op: () => unknown;
  batch: number;
  release: (() => void) | undefined;
}

function notPrepared(): never {
  throw new Error('benchmark case ran before its fixture was prepared');
}

/**
 * Picks how many calls one sample holds so that a sample lasts about `sampleMs`. Sub-microsecond calls
 * timed one by one would mostly measure the timer (performance.now() costs tens of ns). The per-call
 * cost is the best of a few rounds, so one garbage collection or compilation cannot shrink the batch.
 */
async function chooseBatch(state: CaseState, isAsync: boolean, sampleMs: number): Promise<number> {
  const time = async (calls: number): Promise<number> => {
    const t0 = performance.now();
    if (isAsync) for (let i = 0; i < calls; i++) sink = await state.op();
    else for (let i = 0; i < calls; i++) sink = state.op();
    return performance.now() - t0;
  };
  let calls = 1;
  while (calls < MAX_BATCH && (await time(calls)) < 1) calls *= 2;
  let best = Infinity;
  for (let round = 0; round < 5; round++) best = Math.min(best, (await time(calls)) / calls);
  return Math.max(1, Math.min(MAX_BATCH, Math.floor(sampleMs / Math.max(best, 1e-6))));
}

/**
 * Runs every case in order, each one warmed up and then timed before the next starts (tinybench's
 * `Bench.run` would warm them all up first and keep every fixture alive throughout).
 */
export async function runCases(cases: readonly BenchCase[], options: RunOptions): Promise<CaseResult[]> {
  const bench = new Bench({
    time: options.timeMs,
    warmup: true,
    warmupTime: options.warmupMs,
    // Samples are batches, so even a slow case gets enough of them within `time`; this only bounds the
    // minimum for cases whose single call is tens of milliseconds.
    iterations: 16,
    warmupIterations: 4,
    throws: true,
  });
  const now = bench.now;
  const states = new Map<string, CaseState>();

  for (const c of cases) {
    const state: CaseState = { op: notPrepared, batch: 1, release: undefined };
    states.set(c.name, state);
    const beforeAll = async (mode?: HookMode): Promise<void> => {
      if (mode === 'warmup') {
        const prepared = await c.prepare();
        state.op = prepared.op;
        state.release = prepared.release;
      }
      state.batch = await chooseBatch(state, c.async, options.sampleMs);
      // Settle the heap (a large fixture, or the warmup's garbage) before the clock starts.
      collectGarbage();
    };
    const afterAll = (mode?: HookMode): void => {
      if (mode !== 'run') return;
      state.release?.();
      state.op = notPrepared;
      state.release = undefined;
    };
    const syncFn = (): FnReturnedObject => {
      const op = state.op;
      const batch = state.batch;
      const t0 = now();
      for (let i = 0; i < batch; i++) sink = op();
      const elapsed = now() - t0;
      return { overriddenDuration: elapsed / batch, overriddenIterationCost: elapsed };
    };
    const asyncFn = async (): Promise<FnReturnedObject> => {
      const op = state.op;
      const batch = state.batch;
      const t0 = now();
      for (let i = 0; i < batch; i++) sink = await op();
      const elapsed = now() - t0;
      return { overriddenDuration: elapsed / batch, overriddenIterationCost: elapsed };
    };
    bench.add(c.name, c.async ? asyncFn : syncFn, { async: c.async, beforeAll, afterAll });
  }

  const results: CaseResult[] = [];
  for (const task of bench.tasks) {
    collectGarbage();
    await task.warmup();
    await task.run();
    const r = task.result;
    if (r.state !== 'completed') {
      throw new Error(`${task.name}: ${r.state === 'errored' ? r.error.message : r.state}`);
    }
    const state = states.get(task.name);
    const meanNs = r.latency.mean * 1e6;
    const result: CaseResult = {
      name: task.name,
      opsPerSec: 1e9 / meanNs,
      meanNs,
      rmePercent: r.latency.rme,
      samples: r.latency.samplesCount,
      batch: state?.batch ?? 1,
    };
    results.push(result);
    options.onResult?.(result);
  }
  collectGarbage();
  return results;
}

/** What each of a group's later cases adds over its first, timed in alternation. */
export interface GroupResult {
  /** Each case's own figures: the means of its batches. */
  readonly results: readonly CaseResult[];
  /** Per later case: the mean over rounds of (case − first) ns per call, and its 95% margin in ns. */
  readonly over: readonly {
    readonly name: string;
    readonly diffNs: number;
    readonly marginNs: number;
    /** The median of the round-by-round differences. */
    readonly medianNs: number;
  }[];
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function meanAndMargin(values: readonly number[]): { mean: number; margin: number } {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const variance = n < 2 ? 0 : values.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1);
  return { mean, margin: 1.96 * Math.sqrt(variance / n) };
}

/**
 * Times a group of cases round by round, one batch of the same number of calls of each per round, the
 * order rotated every round, so that whatever slows the machine for a while (another process, a
 * frequency change, the other core) slows them all alike; what a case adds over the first is taken round
 * by round. A small difference between two slow operations is lost in the noise of timing them apart.
 */
export async function runGroup(cases: readonly BenchCase[], options: RunOptions): Promise<GroupResult> {
  const prepared: Prepared[] = [];
  for (const c of cases) prepared.push(await c.prepare());
  const isAsync = cases.some((c) => c.async);
  const timeBatch = async (op: () => unknown, calls: number): Promise<number> => {
    const t0 = performance.now();
    if (isAsync) for (let i = 0; i < calls; i++) sink = await op();
    else for (let i = 0; i < calls; i++) sink = op();
    return ((performance.now() - t0) * 1e6) / calls;
  };
  let calls = MAX_BATCH;
  for (const p of prepared) {
    calls = Math.min(
      calls,
      await chooseBatch({ op: p.op, batch: 1, release: undefined }, isAsync, options.sampleMs),
    );
  }
  const rounds = async (ms: number, least: number): Promise<number[][]> => {
    const times = prepared.map(() => [] as number[]);
    const until = performance.now() + ms;
    for (let round = 0; performance.now() < until || round < least; round++) {
      for (let k = 0; k < prepared.length; k++) {
        const i = (round + k) % prepared.length;
        times[i]?.push(await timeBatch((prepared[i] as Prepared).op, calls));
      }
    }
    return times;
  };
  await rounds(cases.length * options.warmupMs, 0);
  collectGarbage();
  const times = await rounds(cases.length * options.timeMs, 16);
  for (const p of prepared) p.release?.();
  collectGarbage();
  const results = cases.map((c, i): CaseResult => {
    const s = meanAndMargin(times[i] ?? []);
    return {
      name: c.name,
      opsPerSec: 1e9 / s.mean,
      meanNs: s.mean,
      rmePercent: (100 * s.margin) / s.mean,
      samples: times[i]?.length ?? 0,
      batch: calls,
    };
  });
  for (const r of results) options.onResult?.(r);
  const first = times[0] ?? [];
  const over = cases.slice(1).map((c, i) => {
    const diffs = (times[i + 1] ?? []).map((v, j) => v - (first[j] ?? 0));
    const d = meanAndMargin(diffs);
    return { name: c.name, diffNs: d.mean, marginNs: d.margin, medianNs: median(diffs) };
  });
  return { results, over };
}
