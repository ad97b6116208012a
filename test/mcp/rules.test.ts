import { describe, expect, it } from 'vitest';
import { isGuardrailValidationError, parsePolicy } from '../../src/index.js';
import { confirmedCallId, globPattern, hiddenBy, isDestructive, mcpRules } from '../../src/mcp/rules.js';

const rules = (mcp: Record<string, unknown>) => mcpRules(parsePolicy(JSON.stringify({ version: 1, mcp })));

describe('mcp tool globs', () => {
  it('matches * with any run of characters and ? with one, over the whole name', () => {
    expect(globPattern('read_*').test('read_text_file')).toBe(true);
    expect(globPattern('read_*').test('xread_text')).toBe(false);
    expect(globPattern('get_???').test('get_env')).toBe(true);
    expect(globPattern('get_???').test('get_envs')).toBe(false);
  });

  it('takes regular-expression characters in a glob literally', () => {
    expect(globPattern('a.b').test('a.b')).toBe(true);
    expect(globPattern('a.b').test('axb')).toBe(false);
  });

  it('shows every tool when the policy has no mcp block', () => {
    expect(hiddenBy(mcpRules(null), 'anything')).toBeNull();
  });

  it('hides a tool allow does not name', () => {
    expect(hiddenBy(rules({ allow: ['read_*'] }), 'write_file')).toContain('mcp.allow');
    expect(hiddenBy(rules({ allow: ['read_*'] }), 'read_file')).toBeNull();
  });

  it('lets deny win over allow, naming the glob', () => {
    expect(hiddenBy(rules({ allow: ['*'], deny: ['*_file'] }), 'write_file')).toContain('"*_file"');
  });
});

describe('destructive by the MCP annotation defaults', () => {
  it('calls a tool without annotations destructive', () => {
    expect(isDestructive(undefined)).toBe(true);
    expect(isDestructive({})).toBe(true);
  });

  it('calls a read-only tool or one marked not destructive safe', () => {
    expect(isDestructive({ readOnlyHint: true })).toBe(false);
    expect(isDestructive({ destructiveHint: false })).toBe(false);
    expect(isDestructive({ readOnlyHint: false, destructiveHint: true })).toBe(true);
  });
});

describe('the mcp block of a policy file', () => {
  it('reads allow, deny and confirm_destructive', () => {
    expect(rules({ allow: ['a*'], deny: ['ab'], confirm_destructive: true })).toEqual({
      allow: ['a*'],
      deny: ['ab'],
      confirmDestructive: true,
    });
  });

  it('refuses an unknown key, naming it', () => {
    let error: unknown;
    try {
      rules({ confirm_destructiv: true });
    } catch (e) {
      error = e;
    }
    expect(isGuardrailValidationError(error) && error.message).toMatch(/mcp.*confirm_destructive/);
  });

  it('refuses an empty glob, naming its path', () => {
    expect(() => rules({ deny: [''] })).toThrow(/mcp\.deny\[0\] must be a tool-name glob/);
  });
});

describe('the decision id of a confirmed call', () => {
  it('differs by ask and by input hash', () => {
    const a = confirmedCallId('write_file', 'ab'.repeat(32), 1);
    expect(confirmedCallId('write_file', 'ab'.repeat(32), 2)).not.toBe(a);
    expect(confirmedCallId('write_file', 'cd'.repeat(32), 1)).not.toBe(a);
  });
});
