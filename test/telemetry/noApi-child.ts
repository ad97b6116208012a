// A guarded agent run through RunGuard in a process where `@opentelemetry/api` cannot be found (see
// noApi-preload.mjs): prints what it came to, the service's telemetry, and what it loaded, as JSON.
import { createRequire } from 'node:module';
import { AutonomyGuardrailService, ManualClock, MemoryStore, RunGuard } from '../../src/index.js';

const require = createRequire(import.meta.url);

async function agent(): Promise<unknown[]> {
  const service = new AutonomyGuardrailService({ clock: new ManualClock(0), store: new MemoryStore() });
  await service.configureGuardrails('plan', { toolBudget: 1, maxSteps: 3 });
  const guard = new RunGuard({ service, planId: 'plan', models: { m: { input: 100, output: 200 } } });
  const outcomes: unknown[] = [];
  for (let i = 1; i <= 4; i++) {
    const model = await guard.modelCall({
      modelId: 'm',
      estimate: { inputTokens: 100, maxOutputTokens: 10 },
      run: () => ({ output: `call ${i}`, usage: { inputTokens: 100, outputTokens: 10 } }),
    });
    const tool = await guard.toolCall({ toolCallId: `c${i}`, toolName: 'search', run: () => `found ${i}` });
    outcomes.push(model.allowed, tool.allowed ? tool.output : tool.check.eventType);
  }
  return [service.telemetry, outcomes, (await service.getGuardrails('plan'))?.budgetSpent];
}

/** Whether `load` fails as for a package that is not installed. */
async function missing(load: () => unknown): Promise<boolean> {
  try {
    await load();
    return false;
  } catch (error) {
    return /MODULE_NOT_FOUND/.test(String((error as { code?: unknown }).code));
  }
}

const [telemetry, outcomes, spent] = await agent();
const hidden = [...((globalThis as { hiddenOtel?: string[] }).hiddenOtel ?? [])];
const loaded = Object.keys(require.cache).filter((file) => file.includes('@opentelemetry'));
process.stdout.write(
  JSON.stringify({
    telemetryIsNull: telemetry === null,
    outcomes,
    spent,
    hidden,
    loaded,
    requireMissing: await missing(() => require('@opentelemetry/api')),
    importMissing: await missing(() => import('@opentelemetry/api')),
  }),
);
