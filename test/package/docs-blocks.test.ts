// Every ```ts block of README.md and docs/*.md is code a user copies: each compiles as a module of its
// own under `tsc --strict` in a consumer project that installs the packed package and the frameworks
// (test/support/consumer.ts), leash's types and theirs checked too (no skipLibCheck), and the README's
// blocks run there, with no network and no keys. A block may continue the ts block above it only where
// the page marks it so (`<!-- continues -->` before its fence: test/support/docBlocks.ts); it is compiled
// after the code of the block it continues. A failing block is reported with its page, line and tsc's
// error. It packs the built dist/ (`npm run build` first), so it runs on CI or with LEASH_PACK_TEST=1 only.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSUMER_COMPILER_OPTIONS,
  PACK_TESTS,
  ROOT,
  consumerProject,
  installWithDependencies,
  packTarball,
  run,
  tsc,
} from '../support/consumer.js';
import { diagnosticsByModule, docModules, tsBlocks, type DocModule } from '../support/docBlocks.js';
import { PAGES } from '../support/pages.js';

/**
 * What the pages' blocks import beside leash, each with what it needs installed (not what this checkout
 * happens to have): the frameworks, and the type packages the README says they need under strict.
 */
const FRAMEWORKS = [
  'ai',
  '@types/json-schema',
  'langchain',
  '@langchain/core',
  '@langchain/langgraph',
  '@openai/agents',
  '@opentelemetry/api',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/sdk-trace-base',
  'vitest',
];

const MODULES = PAGES.flatMap((page) => docModules(tsBlocks(page, readFileSync(join(ROOT, page), 'utf8'))));
const README = MODULES.filter((m) => m.block.page === 'README.md');
const BLOCKS = 'blocks';

/** Whether a block is a vitest test file: run by vitest, and compiled apart (see {@link PROGRAMS}). */
const isVitestFile = (m: DocModule) => /from 'vitest'/.test(m.source);

/** Where a block is kept in the consumer project, as tsc names it (a test file as vitest finds one). */
const fileOf = (m: DocModule) => `${BLOCKS}/${m.name}${isVitestFile(m) ? '.test' : ''}.ts`;
const FILES = new Map(MODULES.map((m) => [fileOf(m), m]));

/**
 * The programs the blocks are compiled in, each by one tsc. A test file is compiled apart from the
 * agents: `langchain`'s types load @langchain/core's augmentation of vitest's `Assertion`, which vitest
 * 4's declaration refuses (TS2428), as it would in a project holding both.
 */
const PROGRAMS = { blocks: (m: DocModule) => !isVitestFile(m), tests: isVitestFile };

let dir: string;
const diagnostics = new Map<string, string[]>();

/** A README block run from the consumer project: a vitest test file by vitest, anything else by node. */
function runBlock(module: DocModule) {
  // No keys, and nothing of the vitest running this test, reach the block.
  const env = { PATH: process.env['PATH'], HOME: process.env['HOME'] };
  const args = isVitestFile(module)
    ? ['node_modules/vitest/vitest.mjs', 'run', fileOf(module)]
    : [`out/${module.name}.js`];
  return run(process.execPath, args, dir, { env });
}

describe.runIf(PACK_TESTS)(
  'the ts blocks of README.md and docs/, in a consumer project (packs: runs on CI or with LEASH_PACK_TEST=1)',
  () => {
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'leash-docs-'));
      const linked = consumerProject(dir, packTarball(dir), []);
      installWithDependencies(dir, [...linked, ...FRAMEWORKS]);
      mkdirSync(join(dir, BLOCKS));
      for (const [file, m] of FILES) writeFileSync(join(dir, file), `${m.source}\n`);
      for (const [program, holds] of Object.entries(PROGRAMS)) {
        writeFileSync(
          join(dir, `tsconfig.${program}.json`),
          JSON.stringify({
            compilerOptions: {
              ...CONSUMER_COMPILER_OPTIONS,
              // Every block is a module, with or without an import: top-level await is allowed in each.
              moduleDetection: 'force',
              rootDir: BLOCKS,
              // Packages are found where the install put them, not where this checkout keeps them.
              preserveSymlinks: true,
            },
            files: MODULES.filter(holds).map(fileOf),
          }),
        );
        // Checking the frameworks' declarations takes most of a minute, and longer on a busy machine.
        const compiled = tsc(dir, `tsconfig.${program}.json`, 300_000);
        const stopped = compiled.signal === null ? '' : `\ntsc was stopped (${compiled.signal})`;
        const found = diagnosticsByModule(compiled.stdout + compiled.stderr + stopped, FILES);
        for (const [name, messages] of found)
          diagnostics.set(name, [...(diagnostics.get(name) ?? []), ...messages]);
      }
    }, 660_000);

    afterAll(() => {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('finds the ts blocks of the README and of docs/', () => {
      expect(README.length).toBeGreaterThan(0);
      expect(MODULES.length).toBeGreaterThan(README.length);
    });

    it.each(MODULES.map((m) => [m.where, m] as const))('%s compiles under tsc --strict', (_, module) => {
      expect(diagnostics.get(module.name) ?? []).toEqual([]);
    });

    it('compiles with no error outside the blocks (the installed packages, the settings)', () => {
      expect(diagnostics.get('') ?? []).toEqual([]);
    });

    it.each(README.map((m) => [m.where, m] as const))(
      '%s runs with no network and no keys',
      (_, module) => {
        const ran = runBlock(module);
        expect(ran.error).toBeUndefined();
        expect({ status: ran.status, stderr: ran.stderr }).toEqual({ status: 0, stderr: '' });
      },
      120_000,
    );
  },
);
