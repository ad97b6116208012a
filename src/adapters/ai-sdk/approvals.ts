import type { ModelMessage, ToolApprovalRequest, ToolApprovalResponse } from 'ai';
import { invalid } from '../../errors.js';
import type { Approval } from '../../store/GuardrailStore.js';
import { guardOf, type GuardOption } from '../../agent/guardOption.js';

/**
 * The leash approval behind an SDK `tool-approval-request` part: the one asked for under its tool call
 * id (the SDK makes its own approval id), or null. Show it to a person, who decides it with
 * `service.approve` / `deny`, `leash approve <id>`, or the dashboard.
 */
export async function approvalOf(
  request: Pick<ToolApprovalRequest, 'toolCallId'>,
  options: GuardOption,
): Promise<Approval | null> {
  const guard = guardOf(options);
  const toolCallId = (request as { toolCallId?: unknown } | null)?.toolCallId;
  if (typeof toolCallId !== 'string') invalid('request.toolCallId', 'a string', toolCallId);
  return guard.service.findApproval(guard.planId, toolCallId);
}

/**
 * The SDK's `tool-approval-response` parts for the approval requests in `messages` that a person has
 * decided in leash (approved or denied, with the reason), to append as a `tool` message before the loop
 * resumes. Requests still pending, and those the messages answer already, are left out. An approved
 * response only lets the SDK call the tool: the guarded tool runs it once, with the leash grant.
 */
export async function approvalResponses(
  messages: readonly ModelMessage[],
  options: GuardOption,
): Promise<ToolApprovalResponse[]> {
  if (!Array.isArray(messages)) invalid('messages', 'an array of messages', messages);
  const guard = guardOf(options);
  const answered = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      answered.add(part.type === 'tool-approval-response' ? part.approvalId : `call:${part.toolCallId}`);
    }
  }
  const responses: ToolApprovalResponse[] = [];
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-approval-request') continue;
      if (answered.has(part.approvalId) || answered.has(`call:${part.toolCallId}`)) continue;
      const approval = await guard.service.findApproval(guard.planId, part.toolCallId);
      const response = approval && responseTo(part, approval, guard.service.clock.now());
      if (response) responses.push(response);
    }
  }
  return responses;
}

function responseTo(
  part: ToolApprovalRequest,
  approval: Approval,
  nowMs: number,
): ToolApprovalResponse | null {
  const response = (approved: boolean, reason?: string): ToolApprovalResponse => ({
    type: 'tool-approval-response',
    approvalId: part.approvalId,
    approved,
    ...(reason === undefined ? {} : { reason }),
  });
  switch (approval.status) {
    case 'approved':
      return response(true, approval.reason);
    case 'denied':
      return response(false, approval.reason);
    case 'pending':
      // Nobody decided in time: the call is answered no, or the run would wait for ever.
      return Date.parse(approval.expiresAt) < nowMs
        ? response(false, `approval ${approval.id} expired at ${approval.expiresAt} with nobody deciding`)
        : null;
    default:
      // Used already (by a call that ran, perhaps of another conversation with this id), or expired:
      // nothing a person said lets this request go on.
      return response(false, `approval ${approval.id} is ${approval.status}`);
  }
}
