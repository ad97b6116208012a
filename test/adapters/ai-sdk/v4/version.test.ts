// The vitest project 'ai 7' runs on ai 7, the version test/ai7 pins, never on the project's ai 6.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { AI7_DIR } from '../../../ai7/install.js';

it('imports ai at the version test/ai7 pins, a 7', async () => {
  const { default: imported } = await import('ai/package.json', { with: { type: 'json' } });
  const lock = JSON.parse(readFileSync(join(AI7_DIR, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string }>;
  };

  expect(imported.version).toBe(lock.packages['node_modules/ai']?.version);
  expect(imported.version).toMatch(/^7\./);
});
