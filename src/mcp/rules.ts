import type { Policy } from '../policy/schema.js';

/** What `leash mcp` shows its client and which calls it has a person confirm: a policy's `mcp` block. */
export interface McpRules {
  /** Tool-name globs shown; null = every tool. */
  readonly allow: readonly string[] | null;
  /** Tool-name globs hidden; deny wins over allow. */
  readonly deny: readonly string[];
  /** Every call of a destructive tool (by the MCP annotation defaults) needs a person. */
  readonly confirmDestructive: boolean;
}

/** The policy's `mcp` block with its defaults: every tool shown, none confirmed for being destructive. */
export function mcpRules(policy: Policy | null): McpRules {
  const m = policy?.mcp ?? {};
  return Object.freeze({
    allow: m.allow === undefined ? null : Object.freeze([...m.allow]),
    deny: Object.freeze([...(m.deny ?? [])]),
    confirmDestructive: m.confirm_destructive ?? false,
  });
}

/** A glob as a whole-name pattern: `*` any run of characters (none too), `?` exactly one. */
export function globPattern(glob: string): RegExp {
  let source = '';
  for (const ch of glob) {
    source += ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'su');
}

/**
 * Why a tool is hidden from the client, naming the glob and the policy key, or null when it is shown.
 * Deny wins over allow.
 */
export function hiddenBy(rules: McpRules, toolName: string): string | null {
  const denied = rules.deny.find((g) => globPattern(g).test(toolName));
  if (denied !== undefined) return `the policy's mcp.deny hides it ("${denied}")`;
  if (rules.allow !== null && !rules.allow.some((g) => globPattern(g).test(toolName))) {
    return "the policy's mcp.allow does not name it";
  }
  return null;
}

/** A tool's annotations as `tools/list` gives them. */
export interface ToolAnnotations {
  readonly readOnlyHint?: unknown;
  readonly destructiveHint?: unknown;
}

/**
 * Whether the MCP spec's annotation defaults call a tool destructive: every tool but one whose
 * `readOnlyHint` is true or whose `destructiveHint` is false. A tool without annotations is destructive.
 */
export function isDestructive(annotations: ToolAnnotations | undefined | null): boolean {
  if (annotations === undefined || annotations === null) return true;
  return annotations.readOnlyHint !== true && annotations.destructiveHint !== false;
}

/**
 * The decision id a confirmed call's approval is asked under: the tool, the canonical hash of its input,
 * and which ask of that same call this is (one approval runs the call once; the same call again asks
 * again). A call with other arguments has another id, so it never finds this one's approval.
 */
export function confirmedCallId(toolName: string, hash: string, ask: number): string {
  return `mcp:${toolName}:${hash.slice(0, 32)}:${ask}`;
}
