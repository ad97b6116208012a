import { html } from 'hono/html';
import { parseIsoMs } from '../../iso.js';
import { APPROVAL_STATUSES, type Approval, type ApprovalStatus } from '../../store/GuardrailStore.js';
import { badge, planPath, time, type Html } from '../views.js';

import { pageLayout, type Flash, type PageContext } from './context.js';

// The approvals inbox: each approval, what it asks for, and the form that decides it.

export const APPROVAL_FILTERS: readonly ApprovalStatus[] = APPROVAL_STATUSES;

export function approvalsPage(
  ctx: PageContext,
  list: readonly Approval[],
  status: ApprovalStatus | null,
  flash: Flash | null,
): Html {
  const body = html`<h1>Approvals</h1>
    ${flash === null ? '' : html`<p class="flash" role="alert">${flash.message}</p>`}
    <p class="small">
      Show:
      ${[null, ...APPROVAL_FILTERS].map(
        (s, i) =>
          html`${i > 0 ? ' · ' : ''}${
            s === status
              ? html`<strong>${s ?? 'all'}</strong>`
              : html`<a href="${s === null ? '/approvals' : `/approvals?status=${s}`}">${s ?? 'all'}</a>`
          }`,
      )}
    </p>
    ${
      list.length === 0
        ? html`<p class="muted">No ${status ?? ''} confirmation requests.</p>`
        : approvalsTable(ctx, list, flash, true)
    }`;
  return pageLayout(ctx, { title: 'Approvals', body });
}

export function approvalsTable(
  ctx: PageContext,
  list: readonly Approval[],
  flash: Flash | null,
  showPlan: boolean,
): Html {
  return html`<table>
    <thead>
      <tr>
        ${showPlan ? html`<th>Plan</th>` : ''}
        <th>Decision</th>
        <th>Operation</th>
        <th>Requested</th>
        <th>Status</th>
        <th>Decision by a person</th>
      </tr>
    </thead>
    <tbody>
      ${list.map((a) => approvalRow(ctx, a, flash?.approvalId === a.id ? flash : null, showPlan))}
    </tbody>
  </table>`;
}

function approvalRow(ctx: PageContext, a: Approval, typed: Flash | null, showPlan: boolean): Html {
  const expired = a.status === 'pending' && ctx.now > parseIsoMs(a.expiresAt);
  // Each cell names its field: on a phone, where the row is a card without the table's header, the
  // label is shown before it.
  return html`<tr>
    ${showPlan ? html`<td class="nowrap" data-label="Plan"><a href="${planPath(a.planId)}">${a.planId}</a></td>` : ''}
    <td class="nowrap" data-label="Decision"><code>${a.decisionId}</code></td>
    <td data-label="Operation"><code>${a.operation}</code>${askedFor(a)}</td>
    <td class="small nowrap" data-label="Requested">
      ${time(parseIsoMs(a.requestedAt))}<br /><span class="${expired ? 'bad' : 'muted'}"
        >${expired ? 'expired' : 'expires'} ${time(parseIsoMs(a.expiresAt))}</span
      >
    </td>
    <td data-label="Status">${badge(a.status)}${progress(a)}</td>
    ${
      a.status !== 'pending'
        ? html`<td data-label="Decided by">${decidedBy(a)}</td>`
        : (ctx.mayDecide?.(a) ?? true)
          ? html`<td class="action" data-label="Decide">${decideForm(ctx, a, typed)}</td>`
          : html`<td class="small" data-label="Decide">${awaiting(a)}</td>`
    }
  </tr>`;
}

/** How far a quorum has come, and who approved so far: for a rule asking more than one person. */
function progress(a: Approval): Html | '' {
  const quorum = a.rule?.quorum ?? 1;
  const votes = a.votes ?? [];
  if (quorum <= 1 && votes.length === 0) return '';
  const names = votes.map((v) => v.by.name).join(', ');
  return html`<span class="progress small"
    >${Math.min(votes.length, quorum)} of ${quorum} approvals${names === '' ? '' : html`: ${names}`}</span
  >`;
}

/** Who an approval waits for, where the signed-in person may not decide it (or did already). */
function awaiting(a: Approval): Html {
  const approvers = a.rule?.approvers ?? [];
  return html`<span class="muted"
    >Awaiting ${approvers.length === 0 ? 'another person' : approvers.join(', ')}</span
  >`;
}

/** The tool a request is for and a preview of its input (escaped already, and again as markup). */
function askedFor(a: Approval): Html | '' {
  if (a.toolName === undefined && a.inputPreview === undefined) return '';
  return html`${a.toolName === undefined ? '' : html`<br /><span class="small">tool <code>${a.toolName}</code></span>`}${a.inputPreview === undefined ? '' : html`<br /><code class="preview">${a.inputPreview}</code>`}`;
}

function decidedBy(a: Approval): Html {
  const who = a.decider?.name ?? a.decidedBy;
  const how = a.decider === undefined ? '' : VERIFIED_BY[a.decider.kind];
  return html`${who === undefined ? html`<span class="muted">—</span>` : html`<strong>${who}</strong>`}${how === '' ? '' : html` <span class="muted small">${how}</span>`}${a.decidedAt === undefined ? '' : html` <span class="muted small">${time(parseIsoMs(a.decidedAt))}</span>`}${a.reason === undefined ? '' : html`<br /><span class="small">${a.reason}</span>`}`;
}

/** How the person who decided was known to leash, as the inbox says it. */
const VERIFIED_BY: Readonly<Record<NonNullable<Approval['decider']>['kind'], string>> = {
  token: 'with a personal token',
  oidc: 'signed in with OpenID Connect',
  operator: '',
  elicitation: "as the MCP client's user",
  system: 'by leash',
};

/**
 * Name (unless signed in) and reason, then Approve or Deny. The reason is required, so the browser stops
 * a denial without one; Approve skips the browser's checks (a reason is optional there) and the server
 * checks the name.
 */
function decideForm(ctx: PageContext, a: Approval, typed: Flash | null): Html {
  const id = encodeURIComponent(a.id);
  // Signed in, the decision is recorded with who signed in: there is no name to type.
  return html`<form class="decide" method="post" action="/approvals/${id}/approve">
    <input type="hidden" name="csrf" value="${ctx.csrf}" />
    ${
      ctx.user === undefined
        ? html`<input
            type="text"
            name="by"
            required
            maxlength="256"
            placeholder="your name"
            aria-label="your name"
            autocomplete="name"
            value="${typed?.by ?? ''}"
          />`
        : ''
    }
    <input
      class="reason"
      type="text"
      name="reason"
      required
      maxlength="2048"
      placeholder="why (needed to deny)"
      aria-label="reason"
      value="${typed?.reason ?? ''}"
    />
    <button class="approve" type="submit" formnovalidate>Approve</button>
    <button class="deny" type="submit" formaction="/approvals/${id}/deny">Deny</button>
  </form>`;
}
