// A notification as a Slack incoming-webhook message: Block Kit blocks for the people who decide, and a
// plain `text` for notifications and clients that show no blocks. Everything an agent or a person wrote
// is escaped for Slack's mrkdwn, so it cannot mention a channel, link elsewhere or break out of its span.
import type { JsonObject, JsonValue } from '../json.js';

/** Where the dashboard is reached, for the links of a message: `https://leash.example.com`. */
export interface SlackOptions {
  readonly publicUrl?: string;
}

type Block = JsonObject;

// Slack's limits: a header's text, a section's text, a field's text, a button's label.
const HEADER_MAX = 150;
const SECTION_MAX = 3000;
const FIELD_MAX = 2000;
const REASON_MAX = 1000;

/** `text` with `&`, `<` and `>` escaped, as Slack's mrkdwn wants them. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `text` as an inline code span: escaped, with a backtick (which would end the span) shown as `ˋ`. */
export function codeSpan(text: string): string {
  return `\`${escapeMrkdwn(text.replace(/`/g, 'ˋ').replace(/[\r\n]+/g, ' '))}\``;
}

/** `text` cut to `max` characters, a cut one ending in `…`, never inside a surrogate pair. */
function cut(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

function objectAt(value: JsonValue | undefined): JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

function textAt(o: JsonObject, key: string): string | undefined {
  const value = o[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function numberAt(o: JsonObject, key: string): number | undefined {
  const value = o[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** An ISO time as Slack shows it in the reader's time zone, the ISO text where it cannot. */
function slackDate(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return escapeMrkdwn(iso);
  return `<!date^${Math.floor(ms / 1000)}^{date_short_pretty} {time}|${escapeMrkdwn(iso)}>`;
}

function header(text: string): Block {
  return { type: 'header', text: { type: 'plain_text', text: cut(text, HEADER_MAX), emoji: false } };
}

function section(text: string, fields: readonly string[] = []): Block {
  const block: { [key: string]: JsonValue } = {
    type: 'section',
    text: { type: 'mrkdwn', text: cut(text, SECTION_MAX) },
  };
  if (fields.length > 0) {
    block['fields'] = fields.slice(0, 10).map((f) => ({ type: 'mrkdwn', text: cut(f, FIELD_MAX) }));
  }
  return block;
}

function context(text: string): Block {
  return { type: 'context', elements: [{ type: 'mrkdwn', text: cut(text, SECTION_MAX) }] };
}

function button(label: string, url: string, primary: boolean): Block {
  return {
    type: 'actions',
    elements: [
      {
        type: 'button',
        text: { type: 'plain_text', text: label, emoji: false },
        url,
        ...(primary ? { style: 'primary' } : {}),
      },
    ],
  };
}

/** `publicUrl` and `path` as one URL, whatever slashes end the one and start the other. */
export function dashboardUrl(publicUrl: string, path: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${path}`;
}

/**
 * Where a person decides an approval on the dashboard: its plan's page, which lists the plan's
 * approvals with the form that decides each.
 */
export function approvalPath(approval: JsonObject): string | undefined {
  const planId = textAt(approval, 'plan_id');
  return planId === undefined ? undefined : `/plans/${encodeURIComponent(planId)}`;
}

const APPROVAL_HEADINGS: Readonly<Record<string, string>> = {
  'approval.requested': 'Approval needed',
  'approval.voted': 'Approval vote recorded',
  'approval.expired': 'Approval expired',
};

function approvalHeading(event: string, approval: JsonObject): string {
  if (event === 'approval.decided') {
    const status = textAt(approval, 'status');
    return status === 'denied' ? 'Denied' : status === 'approved' ? 'Approved' : 'Approval decided';
  }
  return APPROVAL_HEADINGS[event] ?? `leash ${event}`;
}

/** The names of those who voted, from votes as the store keeps them (`{ by: { name } }`). */
function voterNames(votes: JsonValue | undefined): string[] {
  if (!Array.isArray(votes)) return [];
  return votes.flatMap((v) => {
    const by = objectAt(objectAt(v)['by']);
    const name = textAt(by, 'name') ?? textAt(by, 'subject');
    return name === undefined ? [] : [name];
  });
}

/** `1 of 2 (ann)`, or undefined for an approval without a rule's quorum. */
function votesText(approval: JsonObject): string | undefined {
  const quorum = numberAt(objectAt(approval['rule']), 'quorum');
  if (quorum === undefined) return undefined;
  const names = voterNames(approval['votes']);
  const count = names.length;
  const who = names.length === 0 ? '' : ` (${names.map(escapeMrkdwn).join(', ')})`;
  return `${count} of ${quorum}${who}`;
}

function approvalMessage(event: string, approval: JsonObject, options: SlackOptions): JsonObject {
  const tool = textAt(approval, 'tool_name');
  const operation = textAt(approval, 'operation') ?? '';
  const what = tool ?? operation;
  const heading = `${approvalHeading(event, approval)}: ${what}`;
  const planId = textAt(approval, 'plan_id');
  const preview = textAt(approval, 'input_preview');

  const lines = [`*Tool* ${codeSpan(what)}`];
  if (tool !== undefined && operation !== '' && operation !== tool) {
    lines.push(`*Operation* ${codeSpan(operation)}`);
  }
  if (preview !== undefined) lines.push(`*Input* ${codeSpan(preview)}`);

  const fields: string[] = [];
  if (planId !== undefined) fields.push(`*Plan*\n${codeSpan(planId)}`);
  const requester = textAt(approval, 'requester');
  if (requester !== undefined) fields.push(`*Requested by*\n${escapeMrkdwn(requester)}`);
  const votes = votesText(approval);
  if (votes !== undefined) fields.push(`*Approvals*\n${votes}`);
  const expires = textAt(approval, 'expires_at');
  if (expires !== undefined && event !== 'approval.decided') fields.push(`*Expires*\n${slackDate(expires)}`);

  const blocks: Block[] = [header(heading), section(lines.join('\n'), fields)];
  const decidedBy = textAt(approval, 'decided_by') ?? textAt(objectAt(approval['decider']), 'name');
  if (event === 'approval.decided' || event === 'approval.expired') {
    const by = decidedBy === undefined ? '' : ` by ${escapeMrkdwn(decidedBy)}`;
    const reason = textAt(approval, 'reason');
    const why = reason === undefined ? '' : `: ${escapeMrkdwn(cut(reason, REASON_MAX))}`;
    blocks.push(section(`*${textAt(approval, 'status') ?? 'decided'}*${by}${why}`));
  }
  const id = textAt(approval, 'id');
  if (id !== undefined) blocks.push(context(`approval ${codeSpan(id)}`));
  const path = approvalPath(approval);
  const url =
    options.publicUrl === undefined || path === undefined ? undefined : dashboardUrl(options.publicUrl, path);
  if (url !== undefined) {
    const pending = event === 'approval.requested' || event === 'approval.voted';
    blocks.push(button(pending ? 'Review in leash' : 'Open in leash', url, pending));
  }

  const plan = planId === undefined ? '' : ` (plan ${planId})`;
  const text = `${heading}${plan}${url === undefined ? '' : ` ${url}`}`;
  return { text: escapeMrkdwn(text), blocks };
}

function percent(fraction: number | undefined): string {
  return fraction === undefined ? '' : ` at ${Math.round(fraction * 10_000) / 100}%`;
}

function budgetMessage(alert: JsonObject, options: SlackOptions): JsonObject {
  const cap = textAt(alert, 'cap') ?? 'a spend cap';
  const heading = `Budget alert: ${cap}${percent(numberAt(alert, 'fraction'))}`;
  const limit = numberAt(alert, 'limit');
  const spent = numberAt(alert, 'spent');
  const reserved = numberAt(alert, 'reserved');
  const spentLine =
    spent === undefined || limit === undefined
      ? ''
      : `*Spent* ${spent} of ${limit}${reserved ? ` (${reserved} reserved)` : ''}`;

  const fields: string[] = [`*Cap*\n${codeSpan(cap)}`];
  const labels = Object.entries(objectAt(alert['labels']))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
  if (labels !== '') fields.push(`*Labels*\n${codeSpan(labels)}`);
  const window = textAt(alert, 'window');
  if (window !== undefined) fields.push(`*Window*\n${escapeMrkdwn(window)}`);
  const resets = textAt(alert, 'resets_at');
  if (resets !== undefined) fields.push(`*Resets*\n${slackDate(resets)}`);
  const planId = textAt(alert, 'plan_id');
  if (planId !== undefined) fields.push(`*Plan*\n${codeSpan(planId)}`);

  const blocks: Block[] = [header(heading), section(spentLine || heading, fields)];
  const url = options.publicUrl === undefined ? undefined : dashboardUrl(options.publicUrl, '/budgets');
  if (url !== undefined) blocks.push(button('Budgets in leash', url, false));
  return { text: escapeMrkdwn(`${heading}${url === undefined ? '' : ` ${url}`}`), blocks };
}

/**
 * The Slack message of a notification: its event and the payload the service queued
 * (`{ type, timestamp, data: { approval } }` or `{ …, data: { alert } }`). A field the payload lacks is
 * left out of the message; an event it does not know gets a message naming it.
 */
export function slackMessage(event: string, payload: JsonObject, options: SlackOptions = {}): JsonObject {
  const data = objectAt(payload['data']);
  if (event.startsWith('approval.')) return approvalMessage(event, objectAt(data['approval']), options);
  if (event === 'budget.alert') return budgetMessage(objectAt(data['alert']), options);
  const text = `leash ${event}`;
  return { text: escapeMrkdwn(text), blocks: [header(text)] };
}
