// schema/plan.schema.json, checked by an independent JSON Schema validator, against `leash run`'s own
// check of plan files (validatePlanFile): for each file below both accept it, or both refuse it.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { validatePlanFile } from '../../src/runner/planFile.js';

const CHECKED_IN = new URL('../../schema/plan.schema.json', import.meta.url);

const ajv = new Ajv2020({ strict: true, allErrors: true });
formats.default(ajv);
const schemaAccepts = ajv.compile(JSON.parse(readFileSync(CHECKED_IN, 'utf8')) as object);

function runnerAccepts(file: unknown): boolean {
  try {
    validatePlanFile(file);
    return true;
  } catch {
    return false;
  }
}

/** A plan file with one decision. */
function planWith(decision: Record<string, unknown>, more: Record<string, unknown> = {}): unknown {
  return { version: 1, ...more, decisions: [{ id: 'd1', ...decision }] };
}

function request(url: string): unknown {
  return planWith({ tool: 'http', input: { url } });
}

const accepted: [string, unknown][] = [
  ['an echo', planWith({ tool: 'echo', input: { message: 'hi' } })],
  ['an echo without input', planWith({ tool: 'echo' })],
  ['an echo of a list', planWith({ tool: 'echo', input: [1, 'a', null, { b: true }] })],
  [
    'a shell command with every option',
    planWith({
      tool: 'shell',
      input: { argv: ['npm', 'test'], cwd: 'app', env: { CI: '1' }, timeout_seconds: 60 },
      cost: 0.5,
      operation: 'build',
    }),
  ],
  ['a sleep of a day', planWith({ tool: 'sleep', input: { seconds: 86_400 } })],
  [
    'guardrails and tool settings',
    planWith(
      { tool: 'echo' },
      {
        id: 'release',
        description: 'ship it',
        guardrails: {
          max_steps: 10,
          tool_budget: 5,
          required_confirmations: ['deploy'],
          max_wall_clock_seconds: 600,
          actor_limits: { max_tool_calls_per_invocation: 3, max_retries_per_failure: 2 },
        },
        tools: { shell: { env: ['PATH'], timeout_seconds: 300 }, http: { cost_per_call: 0.01 } },
      },
    ),
  ],
  [
    'a POST with headers and a JSON body',
    planWith({
      tool: 'http',
      input: { method: 'POST', url: 'https://example.com/hook', headers: { 'X-Key': 'k' }, body: { a: [1] } },
    }),
  ],
  ['a URL with a port, a query and a fragment', request('https://example.com:8443/a/b?c=d&e=/f?#g/h?')],
  ['a URL with a percent-encoded space', request('http://127.0.0.1:9/a%20b')],
  ['a URL with a percent-encoded ü', request('http://127.0.0.1:9/%C3%BC')],
  ['a URL with a punycode hostname', request('http://xn--bcher-kva.invalid:9/')],
  ['a URL with an IPv6 host', request('http://[::1]:9/')],
  ['a URL with a user and password', request('https://user:pw@example.com/')],
  ['a URL with an upper-case scheme', request('HTTPS://EXAMPLE.COM/')],
  ['a URL without a path', request('http://example.com')],
  ['a URL with sub-delimiters in its path', request("http://example.com/a;b=c,d!$&'()*+")],
  ['labels', planWith({ tool: 'echo' }, { labels: { team: 'ml', user: 'Zoë 🚀', cost_center: 'c-42' } })],
  [
    '16 labels',
    planWith(
      { tool: 'echo' },
      { labels: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`l${i}`, 'x'])) },
    ),
  ],
];

const refused: [string, unknown][] = [
  ['a file without decisions', { version: 1, decisions: [] }],
  ['another version', { version: 2, decisions: [{ id: 'd1', tool: 'echo' }] }],
  ['an unknown key', planWith({ tool: 'echo' }, { extra: 1 })],
  ['an unknown tool', planWith({ tool: 'bash', input: {} })],
  ['an empty argv', planWith({ tool: 'shell', input: { argv: [] } })],
  ['a sleep longer than a day', planWith({ tool: 'sleep', input: { seconds: 86_401 } })],
  ['a negative cost', planWith({ tool: 'echo', cost: -1 })],
  ['a URL with a space', request('http://127.0.0.1:9/a b')],
  ['a URL with an ü in its path', request('http://127.0.0.1:9/ü')],
  ['a URL with an international hostname', request('http://bücher.invalid:9/')],
  ['a URL with a space before it', request(' http://example.com/')],
  ['a URL with a tab in it', request('http://exam\tple.com/')],
  ['a URL with backslashes', request('http:\\\\example.com\\a')],
  ['a URL without slashes', request('http:example.com')],
  ['a URL without a host', request('http://')],
  ['a URL with a bad percent-encoding', request('http://example.com/%zz')],
  ['a URL with brackets in its path', request('http://example.com/[a]')],
  ['a URL with a second #', request('http://example.com/#a#b')],
  ['an ftp URL', request('ftp://example.com/x')],
  ['a relative URL', request('/a')],
  ['a URL that is not a string', request(42 as unknown as string)],
  ['an upper-case label name', planWith({ tool: 'echo' }, { labels: { Team: 'ml' } })],
  ['a label name starting with a digit', planWith({ tool: 'echo' }, { labels: { '1team': 'ml' } })],
  ['an empty label value', planWith({ tool: 'echo' }, { labels: { team: '' } })],
  ['a label value of 201 characters', planWith({ tool: 'echo' }, { labels: { team: 'x'.repeat(201) } })],
  ['a label value with a newline', planWith({ tool: 'echo' }, { labels: { team: 'a\nb' } })],
  ['a label value that is a number', planWith({ tool: 'echo' }, { labels: { team: 7 } })],
  [
    '17 labels',
    planWith(
      { tool: 'echo' },
      { labels: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, 'x'])) },
    ),
  ],
];

/** Files the schema cannot refuse: rules JSON Schema does not express, which only the runner checks. */
const refusedByTheRunnerOnly: [string, unknown][] = [
  ['a GET with a body', planWith({ tool: 'http', input: { url: 'http://example.com', body: 'x' } })],
  ['a URL with a port past 65535', request('http://example.com:65536/')],
  ['a URL with an IPv4 host past 255', request('http://256.1.1.1/')],
  ['a label value with a lone surrogate', planWith({ tool: 'echo' }, { labels: { team: '\ud800' } })],
  [
    'two decisions with one id',
    {
      version: 1,
      decisions: [
        { id: 'a', tool: 'echo' },
        { id: 'a', tool: 'echo' },
      ],
    },
  ],
];

describe('schema/plan.schema.json and leash run', () => {
  it.each(accepted)('both accept %s', (_label, file) => {
    expect({ schema: schemaAccepts(file), runner: runnerAccepts(file) }).toEqual({
      schema: true,
      runner: true,
    });
  });

  it.each(refused)('both refuse %s', (_label, file) => {
    expect({ schema: schemaAccepts(file), runner: runnerAccepts(file) }).toEqual({
      schema: false,
      runner: false,
    });
  });

  it.each(refusedByTheRunnerOnly)('leave %s to the runner, which refuses it', (_label, file) => {
    expect({ schema: schemaAccepts(file), runner: runnerAccepts(file) }).toEqual({
      schema: true,
      runner: false,
    });
  });
});
