import { html } from 'hono/html';
import type { ChainedEntry } from '../../audit/chain.js';
import { clockOf, type PlanListRow, type PlanStatus } from '../../runner/runner.js';
import { completedDecisions } from '../../executor/state.js';
import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType } from '../../events.js';
import { parseIsoMs } from '../../iso.js';
import { leashCommand } from '../../runner/commandLine.js';
import { duration, linesOf, money, outputLines, tailLines } from '../../runner/format.js';
import { type Approval } from '../../store/GuardrailStore.js';
import {
  burnDownChart,
  timelineChart,
  type DecisionState,
  type SpendPoint,
  type TimelineItem,
} from '../charts.js';
import { badge, gauge, planPath, time, type Html } from '../views.js';

import { pageLayout, type PageContext } from './context.js';
import { approvalsTable } from './approvals.js';
import { planCapsSection, type PlanCap } from './budgets.js';

// The plans: the list with their gauges, and one plan's page with its burn-down and timeline.

export function plansPage(ctx: PageContext, rows: readonly PlanListRow[]): Html {
  const body = html`<h1>Plans</h1>
    ${
      ctx.pending > 0
        ? html`<p class="note">
            <a href="/approvals">${ctx.pending} approval${ctx.pending === 1 ? '' : 's'} pending</a> — a plan
            is waiting for a person.
          </p>`
        : html`<p class="note muted"><a href="/approvals">Approvals inbox</a>: nothing pending.</p>`
    }
    ${
      rows.length === 0
        ? html`<p class="muted">
            No plans yet: start one with <code>${leashCommand(ctx.style, 'run', ['plan.yaml'])}</code>
          </p>`
        : html`<table>
            <thead>
              <tr>
                <th>Plan</th>
                <th>Phase</th>
                <th>Steps</th>
                <th>Budget</th>
                <th>Wall clock</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              ${rows.map((r) => ('error' in r ? errorRow(r) : planRow(r.status, ctx.now)))}
            </tbody>
          </table>`
    }`;
  return pageLayout(ctx, { title: 'Plans', body });
}

function errorRow(r: { planId: string; error: string }): Html {
  return html`<tr>
    <td><a href="${planPath(r.planId)}">${r.planId}</a></td>
    <td colspan="5" class="bad">${r.error}</td>
  </tr>`;
}

function planRow(s: PlanStatus, now: number): Html {
  const g = s.guardrails;
  return html`<tr>
    <td>
      <a href="${planPath(s.planId)}">${s.planId}</a
      >${s.pending.length > 0 ? html` <span class="badge b-pending">needs approval</span>` : ''}
    </td>
    <td>${s.phase === null ? html`<span class="muted">—</span>` : badge(s.phase)}</td>
    <td data-label="Steps">${g === null ? '—' : stepsGauge(g)}</td>
    <td data-label="Budget">${g === null ? '—' : budgetGauge(g)}</td>
    <td data-label="Wall clock">${g === null ? '—' : wallGauge(g, clockOf(s, now))}</td>
    <td data-label="Updated" class="small muted">
      ${s.updatedAt === null ? '—' : time(parseIsoMs(s.updatedAt))}
    </td>
  </tr>`;
}

function stepsGauge(g: AutonomyGuardrails): Html {
  return gauge(
    g.stepCount,
    g.maxSteps,
    g.maxSteps === null ? `${g.stepCount}` : `${g.stepCount} / ${g.maxSteps}`,
  );
}

function budgetGauge(g: AutonomyGuardrails): Html {
  const limit = g.toolBudget;
  return gauge(
    g.budgetSpent,
    limit,
    limit === null ? money(g.budgetSpent) : `${money(g.budgetSpent)} / ${money(limit)}`,
  );
}

function wallGauge(g: AutonomyGuardrails, now: number): Html {
  const elapsed = g.elapsedSeconds(now);
  const limit = g.maxWallClockSeconds;
  if (elapsed === null) {
    return limit === null
      ? html`<span class="muted">not started · no limit</span>`
      : html`<span class="muted">not started</span> <span class="gauge-text">/ ${duration(limit)}</span>`;
  }
  return gauge(
    elapsed,
    limit,
    limit === null ? duration(elapsed) : `${duration(elapsed)} / ${duration(limit)}`,
  );
}

/** The plan's labels, `team=ml user=ann`, or nothing for a plan without any. */
function labelsLine(g: AutonomyGuardrails): Html | string {
  const names = Object.keys(g.labels);
  if (names.length === 0) return '';
  return html`<dt>Labels</dt>
    <dd>${names.map((name, i) => html`${i > 0 ? ' ' : ''}<code>${name}=${g.labels[name]}</code>`)}</dd>`;
}

const SPEND_EVENTS: ReadonlySet<string> = new Set(['budget_allowed', 'budget_committed', 'budget_overrun']);

/** Money spent over time, from the audit entries that record a new total (`details.spent`). */
export function spendPoints(log: readonly ChainedEntry[]): SpendPoint[] {
  const points: SpendPoint[] = [];
  for (const ce of log) {
    const e = ce.entry;
    const spent = e.details['spent'];
    const at = parseIsoMs(e.timestamp);
    if (
      SPEND_EVENTS.has(e.event_type) &&
      typeof spent === 'number' &&
      Number.isFinite(spent) &&
      !Number.isNaN(at)
    ) {
      points.push({ at, spent, event: e.event_type });
    }
  }
  return points;
}

/** Each decision of the plan file, and where it stands after the last run. */
export function timelineOf(s: PlanStatus, log: readonly ChainedEntry[]): TimelineItem[] {
  const record = s.record;
  if (record === null) return [];
  const decisions = record.file.decisions;
  const outcome = record.outcome;
  // The executor's progress in the metadata: outputs by position, and how far a run with no outcome got.
  const completed = completedDecisions(record.metadata, decisions.length);
  const done = outcome === null ? (completed?.length ?? null) : outcome.completed;
  const outputs = completed?.map((c) => c.output) ?? [];
  // The executor takes one step per decision, in order: step n is decision n. The first entry for a step
  // is when it was taken (or refused). A decision that paused for a person took its step then, and ran
  // when the approval was used: that is its time once it ran.
  const stepAt = new Map<number, number>();
  const grantUsedAt = new Map<string, number>();
  for (const ce of log) {
    const e = ce.entry;
    const step = e.details['step'];
    const decisionId = e.details['decision_id'];
    if ((e.event_type === 'step_allowed' || e.event_type === 'step_blocked') && typeof step === 'number') {
      if (!stepAt.has(step)) stepAt.set(step, parseIsoMs(e.timestamp));
    } else if (
      e.event_type === GuardrailEventType.CONFIRMATION_GRANT_USED &&
      typeof decisionId === 'string'
    ) {
      if (!grantUsedAt.has(decisionId)) grantUsedAt.set(decisionId, parseIsoMs(e.timestamp));
    }
  }
  return decisions.map((d, i): TimelineItem => {
    let state: DecisionState = 'not reached';
    if (done === null) state = 'unknown progress';
    else if (i < done) state = 'done';
    else if (i === done) {
      if (outcome === null) state = s.phase === 'execute' ? 'running' : 'not reached';
      else if (outcome.status === 'awaiting_confirmation') state = 'waiting for confirmation';
      else if (outcome.status === 'failed') state = 'failed';
    }
    const at = (state === 'waiting for confirmation' ? undefined : grantUsedAt.get(d.id)) ?? stepAt.get(i);
    // The end of what it printed once done, or of the tool's last error where it failed: as `leash status`.
    const detail =
      state === 'done'
        ? outputLines(outputs[i])
        : state === 'failed' && outcome?.decisionId === d.id
          ? tailLines(linesOf(outcome.error ?? ''))
          : [];
    return {
      id: d.id,
      tool: d.tool,
      state,
      at: state === 'not reached' || at === undefined || Number.isNaN(at) ? null : at,
      ...(detail.length === 0 ? {} : { detail }),
    };
  });
}

export function planPage(
  ctx: PageContext,
  s: PlanStatus,
  log: readonly ChainedEntry[],
  approvals: readonly Approval[],
  caps: readonly PlanCap[] = [],
): Html {
  const g = s.guardrails;
  const record = s.record;
  const outcome = record?.outcome ?? null;
  const running = s.phase === 'execute';
  const points = spendPoints(log);
  const firstAt = log[0] === undefined ? NaN : parseIsoMs(log[0].entry.timestamp);
  const startedAt = record === null ? NaN : parseIsoMs(record.startedAt);
  const start = [startedAt, g?.startTime ? parseIsoMs(g.startTime) : NaN, firstAt].find(
    (t) => !Number.isNaN(t),
  );
  const lastAt = log.length === 0 ? NaN : parseIsoMs(log[log.length - 1]?.entry.timestamp ?? '');
  // The chart spans the run: to now while it executes, else to its last entry (a plan paused for a
  // person spends nothing, and its wall clock stands still, until the person decides).
  const end = running || Number.isNaN(lastAt) ? ctx.now : lastAt;
  const pending = approvals.filter((a) => a.status === 'pending');
  const decided = approvals.filter((a) => a.status !== 'pending');

  const body = html`<p class="small"><a href="/">Plans</a> /</p>
    <h1>${s.planId}</h1>
    <div class="grid">
      <div class="card">
        <dl class="kv">
          <dt>Phase</dt>
          <dd>
            ${s.phase === null ? html`<span class="muted">no run recorded</span>` : badge(s.phase)}${running ? html` <span class="muted small">refreshing every 2 s</span>` : ''}${outcome === null ? '' : html` <span class="muted small">${outcome.completed} of ${outcome.decisions} decisions done</span>`}
          </dd>
          ${
            // The outcome is the phase a run ended in: shown apart only when the two differ.
            outcome === null || outcome.status === s.phase
              ? ''
              : html`<dt>Outcome</dt>
                  <dd>${badge(outcome.status)}</dd>`
          }
          ${
            outcome?.guard === undefined
              ? ''
              : html`<dt>Guard</dt>
                  <dd><code>${outcome.guard}</code></dd>`
          }
          ${
            outcome?.reason === undefined && outcome?.code === undefined
              ? ''
              : html`<dt>Reason</dt>
                  <dd>
                    ${outcome.reason ?? ''}${outcome.code === undefined ? '' : html` <code>${outcome.code}</code>`}
                  </dd>`
          }
          ${
            outcome?.error === undefined
              ? ''
              : html`<dt>Error</dt>
                  <dd><pre class="error">${outcome.error}</pre></dd>`
          }
          <dt>Source</dt>
          <dd>
            ${record === null ? html`<span class="muted">—</span>` : html`<code>${record.source}</code>`}
          </dd>
          <dt>Started</dt>
          <dd>${record === null ? '—' : time(parseIsoMs(record.startedAt))}</dd>
          <dt>Updated</dt>
          <dd>${s.updatedAt === null ? '—' : time(parseIsoMs(s.updatedAt))}</dd>
        </dl>
      </div>
      <div class="card">
        ${
          g === null
            ? html`<p class="muted">No guardrails stored for this plan.</p>`
            : html`<dl class="kv">
                <dt>Steps</dt>
                <dd>${stepsGauge(g)}</dd>
                <dt>Budget</dt>
                <dd>${budgetGauge(g)}</dd>
                <dt>Wall clock</dt>
                <dd>${wallGauge(g, clockOf(s, ctx.now))}</dd>
                <dt>Confirmations</dt>
                <dd>
                  ${g.requiredConfirmations.length === 0 ? html`<span class="muted">none required</span>` : g.requiredConfirmations.map((op, i) => html`${i > 0 ? ', ' : ''}<code>${op}</code>`)}
                </dd>
                ${labelsLine(g)}
              </dl>`
        }
        <p class="small"><a href="${planPath(s.planId, '/audit')}">Audit log (${log.length} entries) →</a></p>
      </div>
    </div>
    ${
      pending.length === 0
        ? ''
        : html`<h2>Waiting for a person</h2>
            ${approvalsTable(ctx, pending, null, false)}`
    }
    <h2>Decisions</h2>
    <div class="card">
      ${
        record === null
          ? html`<p class="muted">
              This plan was not started by the leash runner: its decisions are not known here. The application
              running it resumes it once a person decides.
            </p>`
          : timelineChart(timelineOf(s, log))
      }
    </div>
    <h2>Budget</h2>
    <div class="card">
      ${
        g === null || start === undefined
          ? html`<p class="muted">Nothing spent yet.</p>`
          : burnDownChart({ budget: g.toolBudget, start, end: Math.max(end, start), points })
      }
    </div>
    ${planCapsSection(caps)}
    ${
      decided.length === 0
        ? ''
        : html`<h2>Confirmations decided</h2>
            ${approvalsTable(ctx, decided, null, false)}`
    }`;
  return pageLayout(ctx, { title: s.planId, body, refresh: running });
}
