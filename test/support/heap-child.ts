// Run as its own process with --expose-gc: a million checks on a default service, printing the heap
// after a warm-up and at the end, each read after a full garbage collection.
import { AutonomyGuardrailService } from '../../src/index.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const service = new AutonomyGuardrailService();
await service.configureGuardrails('long-lived', { maxSteps: 10_000_000, toolBudget: 1_000_000 });

async function checks(n: number): Promise<void> {
  for (let i = 0; i < n; i += 2) {
    await service.checkStepLimit('long-lived', i % 1000);
    await service.checkToolBudget('long-lived', 0.000001);
  }
}

function heap(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

await checks(100_000);
const warm = heap();
await checks(900_000);
const end = heap();
process.stdout.write(JSON.stringify({ warm, end }));
