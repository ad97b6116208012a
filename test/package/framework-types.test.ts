// The README says which type packages each framework needs beside it under `tsc --strict` without
// skipLibCheck: `@types/json-schema` for the AI SDK, none for LangChain.js and the OpenAI Agents SDK.
// Each framework is installed alone with leash (test/support/consumer.ts, as npm would install it) and
// an import of it and of its adapter compiled; the AI SDK also without `@types/json-schema`, which fails.
// It packs the built dist/ (`npm run build` first), so it runs on CI or with LEASH_PACK_TEST=1 only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSUMER_COMPILER_OPTIONS,
  PACK_TESTS,
  consumerProject,
  installWithDependencies,
  packTarball,
  tsc,
} from '../support/consumer.js';

interface Framework {
  readonly packages: readonly string[];
  /** The type packages the README says it needs under strict. */
  readonly types: readonly string[];
  readonly source: string;
}

const FRAMEWORKS: Record<string, Framework> = {
  'the AI SDK': {
    packages: ['ai'],
    types: ['@types/json-schema'],
    source: "export { generateText } from 'ai';\nexport { guardTools } from 'leash/ai-sdk';\n",
  },
  'LangChain.js': {
    packages: ['langchain', '@langchain/core', '@langchain/langgraph'],
    types: [],
    source: "export { createAgent } from 'langchain';\nexport { leashMiddleware } from 'leash/langchain';\n",
  },
  'the OpenAI Agents SDK': {
    packages: ['@openai/agents'],
    types: [],
    source: "export { Agent } from '@openai/agents';\nexport { guardedTool } from 'leash/openai-agents';\n",
  },
};

const made: string[] = [];
let tarball: string;

/** What tsc says of `framework`'s import in a new project holding leash, the framework and `types`. */
function compile(framework: Framework, types: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'leash-types-'));
  made.push(dir);
  const linked = consumerProject(dir, tarball, []);
  installWithDependencies(dir, [...linked, ...framework.packages, ...types]);
  writeFileSync(join(dir, 'uses.ts'), framework.source);
  writeFileSync(
    join(dir, 'tsconfig.uses.json'),
    JSON.stringify({
      compilerOptions: { ...CONSUMER_COMPILER_OPTIONS, noEmit: true, preserveSymlinks: true },
      files: ['uses.ts'],
    }),
  );
  const compiled = tsc(dir, 'tsconfig.uses.json', 300_000);
  return (
    compiled.stdout + compiled.stderr + (compiled.signal === null ? '' : `tsc stopped (${compiled.signal})`)
  );
}

describe.runIf(PACK_TESTS)(
  'the type packages each framework needs under strict, as the README says (packs: CI or LEASH_PACK_TEST=1)',
  () => {
    beforeAll(() => {
      const dir = mkdtempSync(join(tmpdir(), 'leash-types-pack-'));
      made.push(dir);
      tarball = packTarball(dir);
    }, 60_000);

    afterAll(() => {
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
    });

    it.each(Object.entries(FRAMEWORKS))(
      '%s compiles with the type packages the README names',
      (_, f) => {
        expect(compile(f, f.types)).toBe('');
      },
      320_000,
    );

    it('the AI SDK does not compile without @types/json-schema', () => {
      expect(compile(FRAMEWORKS['the AI SDK']!, [])).toMatch(/TS7016: .*'json-schema'/);
    }, 320_000);
  },
);
