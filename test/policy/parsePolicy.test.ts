import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../../src/errors.js';
import { MAX_YAML_ALIAS_COUNT, parsePolicy, type Policy } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

const EXAMPLE_YAML = `version: 1
guardrails:            # all optional
  max_steps: 20
  tool_budget: 5.0
  required_confirmations: [deploy]
  max_wall_clock_seconds: 600
  actor_limits:
    max_tool_calls_per_invocation: 10
    max_retries_per_failure: 2
approvals:
  ttl_seconds: 3600
tools:
  shell:
    max_calls_per_plan: 5
    cost_per_call: 0.01
    requires_confirmation: true
`;

const EXAMPLE: Policy = {
  version: 1,
  guardrails: {
    max_steps: 20,
    tool_budget: 5,
    required_confirmations: ['deploy'],
    max_wall_clock_seconds: 600,
    actor_limits: { max_tool_calls_per_invocation: 10, max_retries_per_failure: 2 },
  },
  approvals: { ttl_seconds: 3600 },
  tools: { shell: { max_calls_per_plan: 5, cost_per_call: 0.01, requires_confirmation: true } },
};

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

describe('parsePolicy', () => {
  describe('reading', () => {
    it('reads a YAML policy', () => {
      expect(parsePolicy(EXAMPLE_YAML)).toEqual(EXAMPLE);
    });

    it('reads JSON text as YAML by default', () => {
      expect(parsePolicy(JSON.stringify(EXAMPLE))).toEqual(EXAMPLE);
    });

    it('reads a JSON policy with format json', () => {
      expect(parsePolicy(JSON.stringify(EXAMPLE, null, 2), { format: 'json' })).toEqual(EXAMPLE);
    });

    it('reads a policy holding only its version', () => {
      expect(parsePolicy('version: 1\n')).toEqual({ version: 1 });
    });

    it('ignores a leading byte order mark', () => {
      expect(parsePolicy('\ufeffversion: 1\n')).toEqual({ version: 1 });
    });

    it('reads keys that look like numbers or booleans as names', () => {
      const policy = parsePolicy('version: 1\ntools:\n  1.0: {}\n  true: {}\n');
      expect(Object.keys(policy.tools ?? {}).sort()).toEqual(['1.0', 'true']);
    });

    it('expands a few aliases, so tools can share rules', () => {
      const policy = parsePolicy(
        'version: 1\ntools:\n  a: &cheap {cost_per_call: 0.01}\n  b: *cheap\n  c: *cheap\n',
      );
      expect(policy.tools).toEqual({
        a: { cost_per_call: 0.01 },
        b: { cost_per_call: 0.01 },
        c: { cost_per_call: 0.01 },
      });
    });
  });

  describe('refusing unreadable text', () => {
    it('refuses a YAML syntax error with its line and column', () => {
      expect(refusal(() => parsePolicy('version: 1\ntools: {a: {}}}\n'))).toEqual({
        field: 'policy',
        message:
          'policy is not valid YAML: Unexpected flow-map-end token in YAML stream: "}" (line 2, column 15)',
      });
    });

    it('names the source in a syntax error', () => {
      expect(refusal(() => parsePolicy('a: [', { source: 'leash.yaml' }))).toEqual({
        field: 'leash.yaml',
        message: expect.stringMatching(/^leash\.yaml is not valid YAML: .*\(line \d+, column \d+\)$/),
      });
    });

    it('refuses a YAML key given twice', () => {
      expect(refusal(() => parsePolicy('version: 1\nversion: 1\n'))).toEqual({
        field: 'policy',
        message: 'policy is not valid YAML: Map keys must be unique (line 2, column 1)',
      });
    });

    it('refuses more than one YAML document', () => {
      expect(refusal(() => parsePolicy('version: 1\n---\nversion: 1\n'))).toEqual({
        field: 'policy',
        message: 'policy is not valid YAML: a policy file must hold exactly one document (line 2, column 1)',
      });
    });

    it('refuses a YAML alias bomb quickly', () => {
      expect(refusal(() => parsePolicy(aliasBomb()))).toEqual({
        field: 'policy',
        message: `policy is refused: its YAML aliases expand beyond the limit of ${MAX_YAML_ALIAS_COUNT} (a defence against alias bombs)`,
      });
    });

    it('refuses an alias to an anchor that does not exist', () => {
      expect(refusal(() => parsePolicy('version: 1\ntools: *missing\n'))).toEqual({
        field: 'policy',
        message: expect.stringMatching(/^policy is not valid YAML: .*missing/),
      });
    });

    it('refuses a custom tag', () => {
      expect(refusal(() => parsePolicy('version: 1\ntools:\n  shell: !js/function "x"\n'))).toEqual({
        field: 'policy',
        message: expect.stringMatching(/^policy is not valid YAML: Unresolved tag: !js\/function \(line 3/),
      });
    });

    it('refuses a collection used as a key', () => {
      expect(thrown(() => parsePolicy('version: 1\n? [a, b]\n: 1\n')).field).toBe('policy');
    });

    it('refuses an empty file', () => {
      expect(refusal(() => parsePolicy('# nothing here\n'))).toEqual({
        field: 'policy',
        message: 'policy is empty',
      });
    });

    it('refuses nesting too deep to parse', () => {
      expect(thrown(() => parsePolicy('['.repeat(100_000))).field).toBe('policy');
    });

    it('refuses YAML under format json', () => {
      expect(refusal(() => parsePolicy('version: 1\n', { format: 'json' }))).toEqual({
        field: 'policy',
        message: expect.stringMatching(/^policy is not valid JSON: /),
      });
    });

    it('refuses a JSON key given twice, with its line and column', () => {
      const text = '{\n  "version": 1,\n  "guardrails": { "max_steps": 1, "max_steps": 500 }\n}';
      expect(refusal(() => parsePolicy(text, { format: 'json' }))).toEqual({
        field: 'policy',
        message: 'policy is not valid JSON: key "max_steps" appears twice in one object (line 3, column 35)',
      });
    });

    it('refuses text that is not a string', () => {
      expect(refusal(() => parsePolicy(Buffer.from('version: 1') as unknown as string))).toEqual({
        field: 'policy',
        message: 'policy must be text (a string), got an object',
      });
    });
  });

  describe('YAML 1.2 only', () => {
    it('reads yes as a string, not a boolean', () => {
      expect(
        refusal(() => parsePolicy('version: 1\ntools:\n  shell: {requires_confirmation: yes}\n')),
      ).toEqual({
        field: 'tools.shell.requires_confirmation',
        message: 'tools.shell.requires_confirmation must be a boolean, got "yes"',
      });
    });

    it('treats a merge key as an unknown key', () => {
      const text = 'version: 1\ntools:\n  a: &rule {cost_per_call: 1}\n  b: {<<: *rule}\n';
      expect(thrown(() => parsePolicy(text)).field).toBe('tools.b["<<"]');
    });
  });

  describe('validating', () => {
    it('names the path of a bad value', () => {
      const text = 'version: 1\ntools:\n  shell:\n    cost_per_call: -1\n';
      expect(refusal(() => parsePolicy(text))).toEqual({
        field: 'tools.shell.cost_per_call',
        message: 'tools.shell.cost_per_call must be a finite number >= 0, got -1',
      });
    });

    it('starts the message with the source when one is given', () => {
      const text = 'version: 1\ntools:\n  shell:\n    cost_per_call: -1\n';
      expect(refusal(() => parsePolicy(text, { source: 'leash.yaml' }))).toEqual({
        field: 'tools.shell.cost_per_call',
        message: 'leash.yaml: tools.shell.cost_per_call must be a finite number >= 0, got -1',
      });
    });

    it('names the source as the field of an error about the whole file', () => {
      expect(refusal(() => parsePolicy('[1, 2]\n', { source: 'leash.yaml' }))).toEqual({
        field: 'leash.yaml',
        message: 'leash.yaml must be an object, got an array of 2',
      });
    });

    it('quotes a tool name that is not a plain word in the path', () => {
      const text = 'version: 1\ntools:\n  "my.tool": {nope: 1}\n';
      expect(thrown(() => parsePolicy(text)).field).toBe('tools["my.tool"].nope');
    });
  });

  describe('options', () => {
    it('refuses an unknown format', () => {
      expect(refusal(() => parsePolicy('version: 1', { format: 'toml' as 'json' }))).toEqual({
        field: 'format',
        message: 'format must be "yaml" or "json", got "toml"',
      });
    });

    it('refuses an unknown option', () => {
      expect(thrown(() => parsePolicy('version: 1', { formt: 'json' } as never)).field).toBe('options.formt');
    });

    it('refuses a source holding a control character', () => {
      expect(thrown(() => parsePolicy('version: 1', { source: 'a\nb' })).field).toBe('source');
    });
  });

  it('throws GuardrailValidationError, keeping the parser error as the cause', () => {
    const e = thrown(() => parsePolicy('a: ['));
    expect(e).toBeInstanceOf(GuardrailValidationError);
    expect(e.cause).toBeInstanceOf(Error);
  });
});
