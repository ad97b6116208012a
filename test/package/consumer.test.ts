// The package as a consumer installs it (test/support/consumer.ts): its types compiled by a strict `tsc`
// that checks them too (no skipLibCheck), the README's library example run from the installed copy, and
// each framework adapter compiled and run once its framework is installed. It packs the built dist/
// (`npm run build` first, as .ci/run does), so it runs on CI (or with LEASH_PACK_TEST=1) only.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AI7_MODULES, installAi7 } from '../ai7/install.js';
import {
  PACK_TESTS,
  ROOT,
  consumerProject,
  installDependencies,
  packTarball,
  run,
  tsc,
  type Dependency,
} from '../support/consumer.js';

/** The first TypeScript block under the README's "## Example" heading. */
function readmeExample(readme: string): string {
  const section = readme.slice(readme.indexOf('\n## Example\n'));
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  if (match?.[1] === undefined) throw new Error('README has no ts block under "## Example"');
  return match[1];
}

/**
 * An AI SDK loop on the mock model asking for three tool calls, against a budget for two; `mock` is the
 * mock of the models the version's providers make (ai 6: LanguageModelV3, ai 7: LanguageModelV4).
 */
const aiSdkConsumer = (
  mock: 'MockLanguageModelV3' | 'MockLanguageModelV4',
) => `import { generateText, stepCountIs, tool } from 'ai';
import { ${mock} } from 'ai/test';
import { z } from 'zod';
import { AutonomyGuardrailService, RunGuard } from 'leash';
import { guardModel, guardStop, guardTools } from 'leash/ai-sdk';

const service = new AutonomyGuardrailService();
await service.configureGuardrails('agent', { toolBudget: 0.2 });
const guard = new RunGuard({ service, planId: 'agent', tools: { search: { costPerCall: 0.1 } }, unpricedModels: 'allow' });
let runs = 0;
const search = tool({ inputSchema: z.object({ q: z.string() }), execute: async () => ++runs });
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const calls = [1, 2, 3].map((n) => ({ type: 'tool-call' as const, toolCallId: 'c' + n, toolName: 'search', input: '{"q":"x"}' }));
const model = new ${mock}({
  doGenerate: { content: calls, finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] },
});
await generateText({
  model: guardModel(model, { guard }),
  tools: guardTools({ search }, { guard }),
  stopWhen: [stepCountIs(3), guardStop({ guard })],
  prompt: 'search',
});
console.log('ran ' + runs + ' of 3 calls, spent ' + (await service.getGuardrails('agent'))?.budgetSpent);
`;

const LANGCHAIN_CONSUMER = `import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent, tool } from 'langchain';
import { z } from 'zod';
import { AutonomyGuardrailService, RunGuard } from 'leash';
import { leashMiddleware } from 'leash/langchain';

const service = new AutonomyGuardrailService();
await service.configureGuardrails('agent', { maxSteps: 1 });
const guard = new RunGuard({ service, planId: 'agent', unpricedModels: 'allow' });
let runs = 0;
const search = tool(async () => String(++runs), { name: 'search', description: 'search', schema: z.object({ q: z.string() }) });
const asks = (id: string) => new AIMessage({ content: '', tool_calls: [{ id, name: 'search', args: { q: 'x' } }] });
const agent = createAgent({
  model: fakeModel().respond(asks('c1')).respond(asks('c2')).respond(new AIMessage('done')),
  tools: [search],
  middleware: [leashMiddleware({ guard, modelId: 'fake' })],
});
const result = await agent.invoke({ messages: [{ role: 'user', content: 'search' }] });
console.log('ran ' + runs + ' of 2 calls; ' + String(result.messages.at(-1)?.content).split(':')[0]);
`;

/** An Agents SDK run on a scripted model asking for a tool call each turn, against a step limit of one. */
const AGENTS_CONSUMER = `import { Agent, run, setTracingDisabled, Usage, type Model } from '@openai/agents';
import { z } from 'zod';
import { AutonomyGuardrailService, RunGuard } from 'leash';
import { guardedTool, guardModel } from 'leash/openai-agents';

setTracingDisabled(true);
const service = new AutonomyGuardrailService();
await service.configureGuardrails('agent', { maxSteps: 1 });
const guard = new RunGuard({ service, planId: 'agent', unpricedModels: 'allow' });
let runs = 0;
const search = guardedTool(
  { name: 'search', description: 'search', parameters: z.object({ q: z.string() }), execute: async () => String(++runs) },
  { guard },
);
let turn = 0;
const model: Model = {
  async getResponse() {
    turn++;
    const call = { type: 'function_call' as const, callId: 'c' + turn, name: 'search', arguments: '{"q":"x"}', status: 'completed' as const };
    return { usage: new Usage(), output: [call] };
  },
  async *getStreamedResponse() {
    throw new Error('not streamed');
  },
};
const agent = new Agent({ name: 'a', model: guardModel(model, { guard, modelId: 'fake' }), tools: [search] });
const result = await run(agent, 'search');
console.log('ran ' + runs + ' of 2 calls; ' + String(result.finalOutput).split(':')[0]);
`;

/** A store's test file on leash/testing with a runner of its own: the contract loads without vitest. */
const CONTRACT_CONSUMER = `import { MemoryStore } from 'leash';
import { runStoreContract, type TestFunctions } from 'leash/testing';

const names: string[] = [];
const path: string[] = [];
const test: TestFunctions = {
  describe: (name, body) => {
    path.push(name);
    body();
    path.pop();
  },
  it: (name) => void names.push([...path, name].join(' > ')),
  beforeEach: () => undefined,
  afterEach: () => undefined,
  expect: () => {
    throw new Error('not run');
  },
};
runStoreContract('MemoryStore', { test, newStore: () => new MemoryStore() });
console.log(names.length > 100 ? 'registered ' + names[0] : 'too few: ' + names.length);
`;

let dir: string;
/** The consumer project of ai 7, beside `dir` so that nothing of the first one can be found from it. */
let dir7: string | undefined;
let tarball: string;

/**
 * Installs `frameworks` (which the package must not have brought), then compiles `source` as
 * `<name>.ts` with the consumer's strict settings and runs it in `project`: resolves with what it printed.
 */
function compileAndRun(
  name: string,
  source: string,
  frameworks: readonly Dependency[],
  project = dir,
): string {
  const names = frameworks.map((f) => (typeof f === 'string' ? f : f[0]));
  for (const f of names) expect(readdirSync(join(project, 'node_modules'))).not.toContain(f.split('/')[0]);
  installDependencies(project, frameworks);
  writeFileSync(join(project, `${name}.ts`), source);
  writeFileSync(
    join(project, `tsconfig.${name}.json`),
    JSON.stringify({ extends: './tsconfig.json', files: [`${name}.ts`] }),
  );
  const compiled = tsc(project, `tsconfig.${name}.json`);
  expect(compiled.stdout + compiled.stderr).toBe('');
  const node = run(process.execPath, [`out/${name}.js`], project);
  expect(node.stderr).toBe('');
  return node.stdout.trim();
}

describe.runIf(PACK_TESTS)(
  'the package installed from its tarball (packs: runs on CI or with LEASH_PACK_TEST=1)',
  () => {
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'leash-consumer-'));
      tarball = packTarball(dir);
      consumerProject(dir, tarball, ['example.ts']);
      writeFileSync(join(dir, 'example.ts'), readmeExample(readFileSync(join(ROOT, 'README.md'), 'utf8')));
    }, 60_000);

    afterAll(() => {
      for (const d of [dir, dir7]) if (d !== undefined) rmSync(d, { recursive: true, force: true });
    });

    it('compiles against the published types with tsc --strict and no skipLibCheck', () => {
      const compiled = tsc(dir);
      expect(compiled.stdout + compiled.stderr).toBe('');
      expect(compiled.status).toBe(0);
    }, 120_000);

    it("runs the README's library example from the installed package, printing what it decided", () => {
      const node = run(process.execPath, ['out/example.js'], dir);
      expect(node.stderr).toBe('');
      expect(node.stdout).toMatch(/^budget check: allowed/m);
      expect(node.stdout).toMatch(/^plan research-1: completed, 1 decision done \(s1\)/m);
    }, 120_000);

    it('compiles and runs a leash/ai-sdk consumer once it installs ai, which leash does not install', () => {
      expect(compileAndRun('agent', aiSdkConsumer('MockLanguageModelV3'), ['ai'])).toBe(
        'ran 2 of 3 calls, spent 0.2',
      );
    }, 120_000);

    it('compiles and runs the leash/ai-sdk consumer on ai 7, whose providers make LanguageModelV4 models', () => {
      installAi7();
      dir7 = mkdtempSync(join(tmpdir(), 'leash-consumer-ai7-'));
      consumerProject(dir7, tarball, []);
      const ai7 = compileAndRun(
        'agent',
        aiSdkConsumer('MockLanguageModelV4'),
        [['ai', join(AI7_MODULES, 'ai')]],
        dir7,
      );
      expect(ai7).toBe('ran 2 of 3 calls, spent 0.2');
    }, 240_000);

    it('compiles and runs a leash/langchain consumer once it installs langchain, which leash does not install', () => {
      const frameworks = ['langchain', '@langchain/core', '@langchain/langgraph'];
      expect(compileAndRun('lc', LANGCHAIN_CONSUMER, frameworks)).toBe(
        'ran 1 of 2 calls; leash ended the run (step_blocked)',
      );
    }, 120_000);

    it('compiles and runs a leash/openai-agents consumer once it installs @openai/agents, which leash does not install', () => {
      expect(compileAndRun('oa', AGENTS_CONSUMER, ['@openai/agents'])).toBe(
        'ran 1 of 2 calls; leash ended the run (step_blocked)',
      );
    }, 120_000);

    it('registers the store contract of leash/testing with a runner of its own, no vitest installed', () => {
      expect(readdirSync(join(dir, 'node_modules'))).not.toContain('vitest');
      expect(compileAndRun('contract', CONTRACT_CONSUMER, [])).toBe(
        'registered GuardrailStore contract: MemoryStore > put, get and delete > returns null for a plan that was never stored',
      );
    }, 120_000);

    it('loads from CommonJS with await import', () => {
      writeFileSync(
        join(dir, 'load.cjs'),
        "import('leash').then((m) => console.log(typeof m.AutonomyGuardrailService, typeof m.SqliteStore));",
      );
      const node = run(process.execPath, ['load.cjs'], dir);
      expect(node.stdout.trim()).toBe('function function');
    }, 60_000);
  },
);
