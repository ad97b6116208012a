import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { AutonomyGuardrailService, MemoryStore } from '../../src/index.js';

vi.setConfig({ testTimeout: 120_000 });

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

describe('the default service', () => {
  it('keeps its heap flat over a million checks', () => {
    const child = spawnSync(
      process.execPath,
      ['--expose-gc', '--import', TSX, join(ROOT, 'test/support/heap-child.ts')],
      { encoding: 'utf8', timeout: 110_000 },
    );
    expect(child.stderr).toBe('');
    const { warm, end } = JSON.parse(child.stdout) as { warm: number; end: number };
    // Every entry kept would add about 150 MiB over these 900,000 checks.
    expect((end - warm) / 2 ** 20).toBeLessThan(8);
  });

  it('keeps the whole log one option away: a MemoryStore of its own', async () => {
    const store = new MemoryStore({ auditCapacity: 3 });
    const service = new AutonomyGuardrailService({ store });
    await service.configureGuardrails('p', { maxSteps: 10 });
    for (let step = 0; step < 5; step++) await service.checkStepLimit('p', step);
    expect(await store.readAuditLog('p')).toHaveLength(5);
  });
});
