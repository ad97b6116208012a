import type { Denied } from '../agent/RunGuard.js';
import { decideCommand, type CommandStyle } from '../runner/commandLine.js';
import type { Approval } from '../store/GuardrailStore.js';

/** A `tools/call` result the client's model reads: text, flagged as an error. */
export interface ErrorResult {
  readonly content: readonly { readonly type: 'text'; readonly text: string }[];
  readonly isError: true;
  readonly [key: string]: unknown;
}

export function errorResult(text: string): ErrorResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** How a person lets the refused call through, by the check that refused it. */
function howToRaise(d: Denied, toolName: string): string {
  switch (d.check.eventType) {
    case 'step_blocked':
      return 'Every step of this session is used: raise guardrails.max_steps in the policy, or start a new session.';
    case 'budget_blocked':
    case 'budget_overrun':
      return 'The budget cannot cover this call: raise guardrails.tool_budget in the policy, or lower the tool’s cost_per_call.';
    case 'budget_cap_blocked':
      // The reason before this names the cap, its labels, its window and when it resets.
      return 'A spend cap shared by several plans is used up: see `leash budgets`, raise budgets[].limit in the policy, or wait for its window to reset.';
    case 'wall_clock_blocked':
      return 'This session’s time is up: raise guardrails.max_wall_clock_seconds in the policy, or start a new session.';
    case 'actor_tool_calls_blocked':
      return 'This session made all the tool calls it may: raise guardrails.actor_limits.max_tool_calls_per_invocation in the policy.';
    case 'tool_calls_blocked':
      return d.check.limit === 0
        ? `The tool is hidden: change mcp.allow / mcp.deny in the policy to let "${toolName}" through.`
        : `This tool made all its calls: raise tools.${toolName}.max_calls_per_plan in the policy.`;
    case 'retry_blocked':
      return 'This failure was retried as often as allowed: raise guardrails.actor_limits.max_retries_per_failure in the policy.';
    case 'confirmation_denied':
      return 'A person did not let it run (see why above). Ask the user before trying again.';
    default:
      return 'Calling the tool again asks a person again.';
  }
}

/** The text of a refused call: which limit said no, why, and how to raise it. */
export function denialText(d: Denied, toolName: string): string {
  return `leash refused this call of "${toolName}" (${d.check.eventType}): ${d.reason}. ${howToRaise(d, toolName)}`;
}

/**
 * Who decides an approval once people sign in to decide: anyone with a personal token the rule names,
 * how many of them, and not the person who asked unless the rule allows it.
 */
function whoDecides(approval: Approval): string {
  const rule = approval.rule;
  const votes = approval.votes?.length ?? 0;
  const quorum =
    rule === undefined || rule.quorum === 1
      ? ''
      : ` It needs ${rule.quorum} different people under rule "${rule.name}" (${votes} approved so far).`;
  const requester = approval.requester;
  const self =
    requester === undefined || rule?.selfApproval === true
      ? ''
      : ` "${requester}", who asked, may not approve it.`;
  return `A person approves it with their personal token (leash tokens create; LEASH_TOKEN holds it).${quorum}${self}`;
}

/**
 * The text of a call waiting for a person who cannot be asked in the client: the approval's id, the
 * exact command that approves it (started and given the store as `style` says), and that the same call
 * with the same arguments then runs once. With `people` (the store knows people, or a rule decides the
 * approval) the command decides with a personal token, and who may decide is said.
 */
export function approvalText(
  approval: Approval,
  toolName: string,
  style: CommandStyle,
  people = false,
): string {
  const command = decideCommand(style, 'approve', approval.id, 'checked', people ? 'token' : 'name');
  return [
    `leash needs a person to approve this call of "${toolName}" (approval ${approval.id}, expires ${approval.expiresAt}).`,
    ...(people ? [whoDecides(approval)] : []),
    `Approve it with: ${command}`,
    `(or in the leash dashboard), then call the tool again with the same arguments: it runs once. Other arguments ask again.`,
  ].join('\n');
}
