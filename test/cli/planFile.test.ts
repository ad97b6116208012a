import { describe, expect, it } from 'vitest';
import {
  parsePlanFile,
  planFileGuardrails,
  planFileToPlan,
  validatePlanFile,
  validateToolInput,
  type PlanFile,
} from '../../src/runner/planFile.js';
import { MAX_YAML_ALIAS_COUNT, policyToGuardrailsInit } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

const EXAMPLE_YAML = `version: 1
id: release
description: Build, test, deploy and announce a release
guardrails:
  max_steps: 10
  tool_budget: 5
  required_confirmations: [deploy]
  max_wall_clock_seconds: 900
tools:
  shell: { env: [PATH, HOME], timeout_seconds: 300 }
  http: { cost_per_call: 0.01, timeout_seconds: 30 }
decisions:
  - id: build
    tool: shell
    input: { argv: [node, -e, "console.log('built')"], cwd: ., timeout_seconds: 60, env: { CI: "1" } }
    cost: 0.5
    operation: deploy
  - id: notify
    tool: echo
    input: { message: released }
`;

const EXAMPLE: PlanFile = {
  version: 1,
  id: 'release',
  description: 'Build, test, deploy and announce a release',
  guardrails: {
    max_steps: 10,
    tool_budget: 5,
    required_confirmations: ['deploy'],
    max_wall_clock_seconds: 900,
  },
  tools: {
    shell: { env: ['PATH', 'HOME'], timeout_seconds: 300 },
    http: { cost_per_call: 0.01, timeout_seconds: 30 },
  },
  decisions: [
    {
      id: 'build',
      tool: 'shell',
      input: {
        argv: ['node', '-e', "console.log('built')"],
        cwd: '.',
        timeout_seconds: 60,
        env: { CI: '1' },
      },
      cost: 0.5,
      operation: 'deploy',
    },
    { id: 'notify', tool: 'echo', input: { message: 'released' } },
  ],
};

/** A plan file whose only decision is `decision` (YAML flow mapping text). */
function withDecision(decision: string): string {
  return `version: 1\ndecisions:\n  - ${decision}\n`;
}

/** The field and message of the GuardrailValidationError that `fn` throws. */
function refusal(fn: () => unknown): { field: string | undefined; message: string } {
  const e = thrown(fn);
  return { field: e.field, message: e.message };
}

/** A "billion laughs" document: nine levels, each alias nine times the one below. */
function aliasBomb(): string {
  const lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
  for (let level = 1; level < 9; level++) {
    const below = String.fromCharCode(97 + level - 1);
    const name = String.fromCharCode(97 + level);
    lines.push(`${name}: &${name} [${Array.from({ length: 9 }, () => `*${below}`).join(', ')}]`);
  }
  return lines.join('\n');
}

describe('parsePlanFile', () => {
  describe('reading', () => {
    it('reads a YAML plan file', () => {
      expect(parsePlanFile(EXAMPLE_YAML)).toEqual(EXAMPLE);
    });

    it('reads JSON text as YAML by default', () => {
      expect(parsePlanFile(JSON.stringify(EXAMPLE))).toEqual(EXAMPLE);
    });

    it('reads strict JSON when the format is json', () => {
      expect(parsePlanFile(JSON.stringify(EXAMPLE), { format: 'json' })).toEqual(EXAMPLE);
    });

    it('refuses YAML when the format is json', () => {
      expect(refusal(() => parsePlanFile(EXAMPLE_YAML, { format: 'json' })).message).toMatch(
        /^plan is not valid JSON: /,
      );
    });

    it('skips a byte order mark', () => {
      expect(parsePlanFile(`\ufeff${EXAMPLE_YAML}`)).toEqual(EXAMPLE);
    });

    it('refuses a YAML key given twice', () => {
      expect(refusal(() => parsePlanFile('version: 1\nversion: 1\ndecisions: []'))).toEqual({
        field: 'plan',
        message: 'plan is not valid YAML: Map keys must be unique (line 2, column 1)',
      });
    });

    it('refuses a JSON key given twice', () => {
      const text = '{"version": 1, "version": 1, "decisions": []}';
      expect(refusal(() => parsePlanFile(text, { format: 'json' })).message).toBe(
        'plan is not valid JSON: key "version" appears twice in one object (line 1, column 16)',
      );
    });

    it('refuses several documents', () => {
      expect(refusal(() => parsePlanFile(`${EXAMPLE_YAML}---\n${EXAMPLE_YAML}`)).message).toMatch(
        /^plan is not valid YAML: a plan file must hold exactly one document/,
      );
    });

    it('refuses a custom tag', () => {
      const text = withDecision('{ id: a, tool: echo, input: !!js/function "x" }');
      expect(refusal(() => parsePlanFile(text)).message).toMatch(/^plan is not valid YAML: Unresolved tag/);
    });

    it('refuses an alias bomb', () => {
      expect(refusal(() => parsePlanFile(aliasBomb())).message).toBe(
        `plan is refused: its YAML aliases expand beyond the limit of ${MAX_YAML_ALIAS_COUNT} (a defence against alias bombs)`,
      );
    });

    it('refuses an empty file', () => {
      expect(refusal(() => parsePlanFile('# nothing\n'))).toEqual({
        field: 'plan',
        message: 'plan is empty',
      });
    });

    it('starts messages with the source when one is given', () => {
      const text = withDecision('{ id: a, tool: shell, input: { argv: [] } }');
      expect(refusal(() => parsePlanFile(text, { source: 'release.plan.yaml' })).message).toBe(
        'release.plan.yaml: decisions[0].input.argv must be a non-empty array of strings, got an array of 0',
      );
    });

    it('names the source as the field of an error about the whole file', () => {
      expect(refusal(() => parsePlanFile('- 1\n- 2\n', { source: 'release.plan.yaml' }))).toEqual({
        field: 'release.plan.yaml',
        message: 'release.plan.yaml must be an object, got an array of 2',
      });
    });

    it('refuses an unknown option', () => {
      expect(refusal(() => parsePlanFile(EXAMPLE_YAML, { sorce: 'x' } as never)).field).toBe('options.sorce');
    });

    it('refuses an unknown format', () => {
      expect(refusal(() => parsePlanFile(EXAMPLE_YAML, { format: 'toml' as never })).field).toBe('format');
    });

    it('returns a deeply frozen plan file', () => {
      const file = parsePlanFile(EXAMPLE_YAML);
      const build = file.decisions[0];
      expect(Object.isFrozen(file)).toBe(true);
      expect(Object.isFrozen(file.decisions)).toBe(true);
      expect(build?.tool === 'shell' && Object.isFrozen(build.input.argv)).toBe(true);
    });
  });

  describe('the file itself', () => {
    it('needs the version', () => {
      expect(refusal(() => parsePlanFile('decisions: []'))).toEqual({
        field: 'version',
        message: 'version is missing',
      });
    });

    it('refuses another version', () => {
      expect(refusal(() => parsePlanFile('version: 2\ndecisions: []')).message).toBe(
        'version must be 1 (the version this release reads), got 2',
      );
    });

    it('refuses a plan without decisions', () => {
      expect(refusal(() => parsePlanFile('version: 1\ndecisions: []')).message).toBe(
        'decisions must be a non-empty array of decisions, got an array of 0',
      );
    });

    it('refuses a plan id the service would refuse', () => {
      const text = `version: 1\nid: "a\\tb"\ndecisions: [{ id: a, tool: echo }]`;
      expect(refusal(() => parsePlanFile(text)).message).toMatch(
        /^id must be a non-empty string of at most 256/,
      );
    });

    it.each([
      ['the file', 'version: 1\nname: x\ndecisions: [{ id: a, tool: echo }]', 'name'],
      ['a decision', withDecision('{ id: a, tool: echo, input: 1, retries: 2 }'), 'decisions[0].retries'],
      [
        'an input',
        withDecision('{ id: a, tool: shell, input: { argv: [ls], timeout: 5 } }'),
        'decisions[0].input.timeout',
      ],
      [
        'the guardrails',
        'version: 1\nguardrails: { max_step: 1 }\ndecisions: [{ id: a, tool: echo }]',
        'guardrails.max_step',
      ],
      [
        'the tool settings',
        'version: 1\ntools: { sleep: {} }\ndecisions: [{ id: a, tool: echo }]',
        'tools.sleep',
      ],
      [
        'a tool’s settings',
        'version: 1\ntools: { http: { cost: 1 } }\ndecisions: [{ id: a, tool: echo }]',
        'tools.http.cost',
      ],
    ])('refuses an unknown key in %s', (_, text, field) => {
      expect(refusal(() => parsePlanFile(text))).toEqual({
        field,
        message: expect.stringMatching(
          new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} is not a known field \\(known: `),
        ),
      });
    });
  });

  describe('decisions', () => {
    it('refuses an unknown tool, naming the built-in ones', () => {
      expect(refusal(() => parsePlanFile(withDecision('{ id: a, tool: bash, input: {} }')))).toEqual({
        field: 'decisions[0].tool',
        message: 'decisions[0].tool must be one of shell, http, sleep, echo, got "bash"',
      });
    });

    it('refuses a decision without a tool', () => {
      expect(refusal(() => parsePlanFile(withDecision('{ id: a }'))).message).toBe(
        'decisions[0].tool is missing',
      );
    });

    it('refuses two decisions with one id', () => {
      const text = 'version: 1\ndecisions: [{ id: a, tool: echo }, { id: a, tool: echo }]';
      expect(refusal(() => parsePlanFile(text))).toEqual({
        field: 'decisions[1].id',
        message: 'decisions[1].id must be unique within the plan, got "a"',
      });
    });

    it('refuses an empty decision id', () => {
      expect(refusal(() => parsePlanFile(withDecision('{ id: "", tool: echo }'))).field).toBe(
        'decisions[0].id',
      );
    });

    it('refuses a negative cost', () => {
      expect(refusal(() => parsePlanFile(withDecision('{ id: a, tool: echo, cost: -1 }'))).message).toBe(
        'decisions[0].cost must be a finite number >= 0, got -1',
      );
    });

    it('refuses a blank operation name', () => {
      expect(
        refusal(() => parsePlanFile(withDecision('{ id: a, tool: echo, operation: "  " }'))).message,
      ).toBe('decisions[0].operation must not be empty, got "  "');
    });

    it('refuses an operation name with an invisible character', () => {
      const text = withDecision('{ id: a, tool: echo, operation: "de\\u200bploy" }');
      expect(refusal(() => parsePlanFile(text)).message).toMatch(
        /^decisions\[0\]\.operation must not contain control or invisible format characters/,
      );
    });

    it('refuses an operation name holding a lone surrogate', () => {
      const text = withDecision('{ id: a, tool: echo, operation: "dep\\udc00loy" }');
      expect(refusal(() => parsePlanFile(text))).toEqual({
        field: 'decisions[0].operation',
        message: expect.stringMatching(/^decisions\[0\]\.operation must be well-formed Unicode/),
      });
    });

    it('refuses an input nested deeper than the executor accepts', () => {
      const deep = `${'['.repeat(34)}${']'.repeat(34)}`;
      expect(
        refusal(() => parsePlanFile(withDecision(`{ id: a, tool: echo, input: ${deep} }`))).message,
      ).toMatch(/nests deeper than 35 levels$/);
    });

    it('accepts an input nested as deep as the executor accepts', () => {
      const deep = `${'['.repeat(33)}${']'.repeat(33)}`;
      expect(parsePlanFile(withDecision(`{ id: a, tool: echo, input: ${deep} }`)).decisions).toHaveLength(1);
    });
  });

  describe('inputs of the built-in tools', () => {
    it.each([
      ['shell without input', '{ id: a, tool: shell }', 'decisions[0].input is missing'],
      [
        'shell with an empty argv',
        '{ id: a, tool: shell, input: { argv: [] } }',
        'decisions[0].input.argv must be a non-empty array of strings, got an array of 0',
      ],
      [
        'shell with a number argument',
        '{ id: a, tool: shell, input: { argv: [ls, 5] } }',
        'decisions[0].input.argv[1] must be a string without NUL characters, got 5',
      ],
      [
        'shell with an empty program name',
        '{ id: a, tool: shell, input: { argv: [""] } }',
        'decisions[0].input.argv[0] must be a program name or path, not empty, got ""',
      ],
      [
        'shell with an env name holding "="',
        '{ id: a, tool: shell, input: { argv: [ls], env: { "A=B": x } } }',
        'decisions[0].input.env key must be an environment variable name (not empty, without "=" or NUL characters), got "A=B"',
      ],
      [
        'shell with a number as an env value',
        '{ id: a, tool: shell, input: { argv: [ls], env: { CI: 1 } } }',
        'decisions[0].input.env.CI must be a string without NUL characters, got 1',
      ],
      [
        'shell with a zero timeout',
        '{ id: a, tool: shell, input: { argv: [ls], timeout_seconds: 0 } }',
        'decisions[0].input.timeout_seconds must be a finite number > 0, got 0',
      ],
      [
        'http with an ftp URL',
        '{ id: a, tool: http, input: { url: "ftp://example.com/x" } }',
        'decisions[0].input.url must be an http:// or https:// URL written in ASCII (spaces and other characters percent-encoded, hostnames in punycode), got "ftp://example.com/x"',
      ],
      [
        'http with a space in its URL',
        '{ id: a, tool: http, input: { url: "http://127.0.0.1:9/a b" } }',
        'decisions[0].input.url must be an http:// or https:// URL written in ASCII (spaces and other characters percent-encoded, hostnames in punycode), got "http://127.0.0.1:9/a b"',
      ],
      [
        'http with a port past 65535',
        '{ id: a, tool: http, input: { url: "http://127.0.0.1:65536/" } }',
        'decisions[0].input.url must be a URL with a valid host and port, got "http://127.0.0.1:65536/"',
      ],
      [
        'http with a lower-case method',
        '{ id: a, tool: http, input: { url: "https://example.com", method: post } }',
        'decisions[0].input.method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, got "post"',
      ],
      [
        'http with a header name holding a space',
        '{ id: a, tool: http, input: { url: "https://example.com", headers: { "x y": z } } }',
        'decisions[0].input.headers key must be an HTTP header name, got "x y"',
      ],
      [
        'http with a line break in a header value',
        '{ id: a, tool: http, input: { url: "https://example.com", headers: { x: "a\\r\\nb: c" } } }',
        'decisions[0].input.headers.x must be a string without CR, LF or NUL characters, got "a\\r\\nb: c"',
      ],
      [
        'http with a body on a GET',
        '{ id: a, tool: http, input: { url: "https://example.com", body: hi } }',
        'decisions[0].input.body must be absent for a GET or HEAD request, got "hi"',
      ],
      [
        'sleep of more than a day',
        '{ id: a, tool: sleep, input: { seconds: 86401 } }',
        'decisions[0].input.seconds must be at most 86400, got 86401',
      ],
      [
        'sleep of a negative time',
        '{ id: a, tool: sleep, input: { seconds: -1 } }',
        'decisions[0].input.seconds must be a finite number >= 0, got -1',
      ],
      [
        'echo with a misspelt message',
        '{ id: a, tool: echo, input: { mesage: hi } }',
        'decisions[0].input.mesage is not a known field (known: message)',
      ],
      [
        'echo with an infinite message',
        '{ id: a, tool: echo, input: { message: .inf } }',
        'decisions[0].input.message must be a JSON value, got Infinity',
      ],
    ])('refuses %s', (_, decision, message) => {
      expect(refusal(() => parsePlanFile(withDecision(decision))).message).toBe(message);
    });

    it.each([
      ['a string', 'hello'],
      ['a number', 42],
      ['an array', [1, 'two']],
      ['null', null],
      ['an object with a message', { message: { version: '1.2.0' } }],
    ])('accepts %s as the input of echo', (_, input) => {
      const file = parsePlanFile(
        JSON.stringify({ version: 1, decisions: [{ id: 'a', tool: 'echo', input }] }),
      );
      expect(file.decisions[0]?.input).toEqual(input);
    });

    it('accepts a JSON body on a POST', () => {
      const decision =
        '{ id: a, tool: http, input: { method: POST, url: "https://example.com", body: { a: [1] } } }';
      expect(parsePlanFile(withDecision(decision)).decisions[0]?.input).toEqual({
        method: 'POST',
        url: 'https://example.com',
        body: { a: [1] },
      });
    });
  });

  describe('guardrails', () => {
    it('checks them as a policy file’s guardrails are checked', () => {
      const text =
        'version: 1\nguardrails: { required_confirmations: ["de\\u200bploy"] }\ndecisions: [{ id: a, tool: echo }]';
      expect(refusal(() => parsePlanFile(text, { source: 'p.yaml' }))).toEqual({
        field: 'guardrails.required_confirmations[0]',
        message: expect.stringMatching(
          /^p\.yaml: guardrails\.required_confirmations\[0\] must not contain control or invisible format characters/,
        ),
      });
    });

    it('refuses the runtime state of the wire format', () => {
      const text = 'version: 1\nguardrails: { step_count: 3 }\ndecisions: [{ id: a, tool: echo }]';
      expect(refusal(() => parsePlanFile(text)).field).toBe('guardrails.step_count');
    });
  });
});

describe('validatePlanFile', () => {
  it('reads back a plan file stored as JSON', () => {
    const file = parsePlanFile(EXAMPLE_YAML);
    expect(validatePlanFile(JSON.parse(JSON.stringify(file)))).toEqual(file);
  });

  it('refuses a value that is not plain data', () => {
    const value = { version: 1, decisions: [{ id: 'a', tool: 'echo', input: new Date(0) }] };
    expect(refusal(() => validatePlanFile(value, { source: 'stored' }))).toEqual({
      field: 'decisions[0].input',
      message:
        'stored: decisions[0].input must be plain data (an object, array, string, number, boolean or null), got a Date',
    });
  });

  it('shares nothing with the value it was given', () => {
    const value = { version: 1, decisions: [{ id: 'a', tool: 'echo', input: { message: ['x'] } }] };
    const file = validatePlanFile(value);
    value.decisions[0]?.input.message.push('changed');
    expect(file.decisions[0]?.input).toEqual({ message: ['x'] });
  });
});

describe('validateToolInput', () => {
  it('names the field under input', () => {
    expect(refusal(() => validateToolInput('sleep', { seconds: 'soon' }))).toEqual({
      field: 'input.seconds',
      message: 'input.seconds must be a finite number >= 0, got "soon"',
    });
  });

  it('names input itself when the input is not an object', () => {
    expect(refusal(() => validateToolInput('shell', 'ls -l')).message).toBe(
      'input must be an object, got "ls -l"',
    );
  });
});

describe('planFileToPlan', () => {
  it('makes a plan in phase execute with empty metadata under the given id', () => {
    const plan = planFileToPlan(parsePlanFile(EXAMPLE_YAML), 'release-2');
    expect(plan).toEqual({
      id: 'release-2',
      phase: 'execute',
      metadata: {},
      decisions: [
        {
          id: 'build',
          tool: 'shell',
          input: {
            argv: ['node', '-e', "console.log('built')"],
            cwd: '.',
            timeout_seconds: 60,
            env: { CI: '1' },
          },
          cost: 0.5,
          operation: 'deploy',
        },
        { id: 'notify', tool: 'echo', input: { message: 'released' } },
      ],
    });
  });

  it('leaves out what a decision does not say', () => {
    const plan = planFileToPlan(parsePlanFile(withDecision('{ id: a, tool: echo }')), 'p');
    expect(Object.keys(plan.decisions[0] ?? {})).toEqual(['id', 'tool']);
  });

  it('refuses an id the service would refuse', () => {
    expect(refusal(() => planFileToPlan(parsePlanFile(EXAMPLE_YAML), '')).field).toBe('plan_id');
  });
});

describe('planFileGuardrails', () => {
  it('gives the guardrails a policy file with the same guardrails gives', () => {
    const file = parsePlanFile(EXAMPLE_YAML);
    expect(planFileGuardrails(file)).toEqual(
      policyToGuardrailsInit({ version: 1, guardrails: file.guardrails ?? {} }),
    );
  });

  it('gives the camelCase init', () => {
    expect(planFileGuardrails(parsePlanFile(EXAMPLE_YAML))).toEqual({
      maxSteps: 10,
      toolBudget: 5,
      requiredConfirmations: ['deploy'],
      maxWallClockSeconds: 900,
    });
  });

  it('gives no limits for a plan file without guardrails', () => {
    expect(planFileGuardrails(parsePlanFile(withDecision('{ id: a, tool: echo }')))).toEqual({});
  });
});
