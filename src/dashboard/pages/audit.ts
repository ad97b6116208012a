import { html } from 'hono/html';
import type { ChainedEntry } from '../../audit/chain.js';
import type { VerifyReport } from '../../audit/verify.js';
import { GUARD_NAMES, type GuardName } from '../../events.js';
import { parseIsoMs } from '../../iso.js';
import type { JsonObject } from '../../json.js';
import { leashCommand } from '../../runner/commandLine.js';
import { auditResult, stepOfEntry } from '../../runner/format.js';
import { badge, planPath, time, type Html } from '../views.js';

import { pageLayout, type PageContext } from './context.js';

// A plan's audit log, filtered, with its chain's verification.

/**
 * An entry's result as the audit page shows and filters it. A `confirmation_required` check is recorded as
 * denied (the step may not run yet), but it pauses the plan for a person rather than stopping it: it reads
 * as waiting, and "denied" leaves it out.
 */
export const AUDIT_RESULTS = ['allowed', 'denied', 'waiting'] as const;
export type AuditResult = (typeof AUDIT_RESULTS)[number];

export function isAuditResult(value: unknown): value is AuditResult {
  return AUDIT_RESULTS.includes(value as AuditResult);
}

export interface AuditFilter {
  readonly guard: GuardName | null;
  readonly result: AuditResult | null;
}

/** Newest entries shown at most; the full log is one `leash audit` away. */
export const AUDIT_ROWS = 5000;

export function auditPage(
  ctx: PageContext,
  planId: string,
  log: readonly ChainedEntry[],
  filter: AuditFilter,
  report: VerifyReport,
): Html {
  const matching = log.filter(
    (ce) =>
      (filter.guard === null || ce.entry.guard_name === filter.guard) &&
      (filter.result === null || auditResult(ce.entry) === filter.result),
  );
  const shown = matching.length > AUDIT_ROWS ? matching.slice(-AUDIT_ROWS) : matching;
  const body = html`<p class="small"><a href="/">Plans</a> / <a href="${planPath(planId)}">${planId}</a> /</p>
    <h1>Audit log</h1>
    <div class="card">${verification(report)}</div>
    <form class="filters" method="get" action="${planPath(planId, '/audit')}">
      ${filterSelect('Guard', 'guard', GUARD_NAMES, filter.guard)}
      ${filterSelect('Result', 'result', AUDIT_RESULTS, filter.result)}
      <button type="submit">Filter</button>
      <span class="muted small"
        >${matching.length} of ${log.length}
        entries${matching.length > shown.length ? html`, the newest ${shown.length} shown (all: <code>${leashCommand(ctx.style, 'audit', [planId])}</code>)` : ''}</span
      >
    </form>
    ${
      shown.length === 0
        ? html`<p class="muted">
            No entries${filter.guard !== null || filter.result !== null ? ' match the filter' : ''}.
          </p>`
        : html`<table>
            <thead>
              <tr>
                <th>Seq</th>
                <th>Time</th>
                <th>Event</th>
                <th>Guard</th>
                <th>Result</th>
                <th>Details</th>
              </tr>
            </thead>
            <tbody>
              ${shown.map(
                (ce) =>
                  html`<tr>
                    <td class="num">${ce.seq}</td>
                    <td class="small nowrap">${time(parseIsoMs(ce.entry.timestamp))}</td>
                    <td><code>${ce.entry.event_type}</code></td>
                    <td><code>${ce.entry.guard_name}</code></td>
                    <td>${badge(auditResult(ce.entry))}</td>
                    <td class="details">${detailsOf(ce.entry.event_type, ce.entry.details)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }`;
  return pageLayout(ctx, { title: `Audit · ${planId}`, body });
}

/**
 * An entry's details as `key value` pairs: strings as they are, anything else as JSON; a step check's step
 * numbered from 1 against its limit (`step 3/10`), as `leash audit` shows it.
 */
function detailsOf(eventType: string, details: JsonObject): Html {
  const step = stepOfEntry(eventType, details);
  const shown: Readonly<Record<string, unknown>> =
    step === null ? details : { step: step.step, ...step.rest };
  const keys = Object.keys(shown);
  if (keys.length === 0) return html`<span class="muted">—</span>`;
  return html`${keys.map((k) => {
    const v = shown[k];
    return html`<span class="kvp"
      ><span class="k">${k}</span> ${typeof v === 'string' ? v : JSON.stringify(v)}</span
    >`;
  })}`;
}

function verification(r: VerifyReport): Html {
  if (r.ok) {
    return html`<strong class="ok">✓ chain verified</strong>
      <span class="muted">${r.size} entries · head <code>${r.head.slice(0, 16)}…</code></span>`;
  }
  return html`<strong class="bad">✗ chain verification failed</strong>
    <span class="muted"
      >${r.size} entries read · ${r.findings.length + r.omittedFindings}
      finding${r.findings.length + r.omittedFindings === 1 ? '' : 's'}</span
    >
    <ul>
      ${r.findings.map((f) => html`<li><code>${f.code}</code>${f.seq === undefined ? '' : html` at seq ${f.seq}`}: ${f.message}</li>`)}
    </ul>
    ${r.omittedFindings > 0 ? html`<p class="muted small">and ${r.omittedFindings} more</p>` : ''}`;
}

/** A filter of the log: a select of "all" and each of `options`, the one chosen selected. */
function filterSelect(label: string, name: string, options: readonly string[], chosen: string | null) {
  return html`<label
    >${label}
    <select name="${name}">
      <option value="">all</option>
      ${options.map((o) => html`<option value="${o}" ${o === chosen ? html` selected` : ''}>${o}</option>`)}
    </select></label
  >`;
}
