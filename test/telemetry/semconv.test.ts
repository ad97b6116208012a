// Every gen_ai.* attribute leash writes, in its source and on the spans of its tests, is one the GenAI
// semantic conventions define (the incubating names of @opentelemetry/semantic-conventions), and every
// operation name one of theirs: no draft or made-up names.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as semconv from '@opentelemetry/semantic-conventions/incubating';
import ts from 'typescript';
import { expect, it } from 'vitest';
import { MemoryStore, RunGuard, AutonomyGuardrailService, ManualClock } from '../../src/index.js';
import { searchLoop, useTracing } from './spans-support.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

const defined = (prefix: string): Set<string> =>
  new Set(
    Object.entries(semconv)
      .filter(([name, value]) => name.startsWith(prefix) && typeof value === 'string')
      .map(([, value]) => value as string),
  );
const ATTRIBUTES = defined('ATTR_GEN_AI_');
const OPERATIONS = defined('GEN_AI_OPERATION_NAME_VALUE_');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The string literals of src/ (template heads included) that begin with `gen_ai.`, by file. */
function genAiLiterals(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('gen_ai.')) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if ((ts.isStringLiteralLike(node) || ts.isTemplateHead(node)) && node.text.startsWith('gen_ai.')) {
        found.set(node.text, [...(found.get(node.text) ?? []), file.slice(SRC.length + 1)]);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

it('writes only gen_ai.* keys the semantic conventions define, wherever src/ names one', () => {
  const literals = genAiLiterals();
  expect(literals.size).toBeGreaterThan(0);
  const undefinedKeys = [...literals].filter(([key]) => !ATTRIBUTES.has(key));
  expect(undefinedKeys).toEqual([]);
});

const tracing = useTracing();

/** Spans of leash's calls: the AI SDK's with telemetry on and off, a model call and a refused call. */
async function spansOfEveryKind() {
  await searchLoop(tracing, true, true);
  await tracing.inRoot(() => searchLoop(tracing, false, true));
  const service = new AutonomyGuardrailService({
    clock: new ManualClock(0),
    store: new MemoryStore(),
    telemetry: { tracer: tracing.tracer, recordContent: true },
  });
  await service.configureGuardrails('plan', { toolBudget: 1 });
  const guard = new RunGuard({ service, planId: 'plan', models: { m: { input: 1, output: 1 } } });
  await guard.modelCall({
    modelId: 'm',
    estimate: { inputTokens: 10, maxOutputTokens: 10 },
    run: () => ({ output: 1, usage: { inputTokens: 10, outputTokens: 1, cachedInputTokens: 5 } }),
  });
  await guard.refuse({ toolName: 'rm', input: {} }, 'hidden');
  return tracing.spans();
}

it('sets only gen_ai.* attributes the semantic conventions define, on every span of its calls', async () => {
  const spans = await spansOfEveryKind();

  const keys = new Set(
    spans.flatMap((s) => Object.keys(s.attributes)).filter((k) => k.startsWith('gen_ai.')),
  );
  expect(keys).toContain('gen_ai.tool.call.arguments');
  expect(keys).toContain('gen_ai.usage.cache_read.input_tokens');
  expect([...keys].filter((k) => !ATTRIBUTES.has(k))).toEqual([]);
});

it('names only operations the semantic conventions define, and its spans after them', async () => {
  const spans = await spansOfEveryKind();

  const operations = new Set(spans.map((s) => s.attributes['gen_ai.operation.name']).filter(Boolean));
  expect(operations).toEqual(new Set(['execute_tool', 'chat']));
  for (const op of operations) expect(OPERATIONS).toContain(op);
  const own = spans.filter((s) => !s.name.startsWith('ai.') && s.name !== 'root');
  for (const span of own) expect(span.name.split(' ')[0]).toBe(span.attributes['gen_ai.operation.name']);
});

it('emits no draft guardrail conventions', async () => {
  const spans = await spansOfEveryKind();

  const keys = [...new Set(spans.flatMap((s) => Object.keys(s.attributes)))];
  expect(keys.filter((k) => /guardrail|gen_ai\.security/i.test(k))).toEqual([]);
  expect([...genAiLiterals().keys()].filter((k) => /guardrail|security/i.test(k))).toEqual([]);
});
