// Timing async workers against each other: the loop every store bench row is measured with.

/** `workers` async loops, each awaiting its own calls (given its index) until `ms` have passed. */
export async function drive(
  op: (worker: number) => Promise<unknown>,
  workers: number,
  ms: number,
): Promise<[calls: number, elapsedMs: number]> {
  let ops = 0;
  const start = performance.now();
  const end = start + ms;
  const worker = async (index: number): Promise<void> => {
    while (performance.now() < end) {
      await op(index);
      ops++;
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));
  return [ops, performance.now() - start];
}

export interface Timed<S> {
  readonly subject: S;
  readonly ops: number;
  readonly opsPerSec: number;
}

/**
 * Times `subjects` at `workers`, each for `cellMs` in all, taking turns in `rounds` rounds after a
 * warmup each: the load of a shared machine, which moves from second to second, falls on them alike.
 */
export async function measureTurns<S extends { op: (worker: number) => Promise<unknown>; weight?: number }>(
  subjects: readonly S[],
  workers: number,
  timing: { readonly cellMs: number; readonly rounds: number; readonly warmupMs: number },
): Promise<Timed<S>[]> {
  for (const subject of subjects) await drive(subject.op, workers, timing.warmupMs);
  const calls = subjects.map(() => 0);
  const elapsed = subjects.map(() => 0);
  for (let round = 0; round < timing.rounds; round++) {
    for (const [i, subject] of subjects.entries()) {
      const [c, ms] = await drive(subject.op, workers, timing.cellMs / timing.rounds);
      calls[i] = (calls[i] ?? 0) + c;
      elapsed[i] = (elapsed[i] ?? 0) + ms;
    }
  }
  return subjects.map((subject, i) => {
    const ops = (calls[i] ?? 0) * (subject.weight ?? 1);
    return { subject, ops, opsPerSec: (ops * 1_000) / (elapsed[i] ?? 1) };
  });
}
