import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

// Every page is built with hono's `html` tag, which escapes each interpolated value (text and attribute
// alike, quotes included) unless it is itself the output of `html`. Nothing here concatenates text into
// markup by hand, so a plan id, a reason or an audit detail can never become markup.

/** What an `html` template gives back: escaped markup (a promise only if a value was one). */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** The one stylesheet: allowed by its hash in the CSP, so no other inline style can apply. */
export const CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2328;background:#f6f7f9}
header{background:#fff;border-bottom:1px solid #d8dee4;padding:10px 24px;display:flex;gap:24px;align-items:center}
header .brand{font-weight:650;letter-spacing:.02em;color:#1f2328}
header nav a{margin-right:18px}
header .who{margin-left:auto;display:flex;gap:10px;align-items:center}
header .who form{margin:0}
main{max-width:1180px;margin:0 auto;padding:20px 24px 48px}
a{color:#0b5cad;text-decoration:none}
a:hover{text-decoration:underline}
h1{font-size:20px;font-weight:600;margin:4px 0 14px;word-break:break-all}
h2{font-size:15px;font-weight:600;margin:26px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d8dee4;border-radius:6px}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid #eaeef2;vertical-align:middle}
th{background:#f6f8fa;font-weight:600;font-size:12px;color:#57606a;text-transform:uppercase;letter-spacing:.03em}
tr:last-child td{border-bottom:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.card{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:14px 18px;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:16px}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:5px 18px;margin:0}
dl.kv dt{color:#57606a}
dl.kv dd{margin:0;word-break:break-all}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;border:1px solid #d0d7de;background:#f6f8fa;color:#424a53;white-space:nowrap}
.b-completed,.b-approved,.b-allowed{background:#e9f6ec;border-color:#b4dfbf;color:#1a6b34}
.b-failed,.b-denied{background:#fdecec;border-color:#f1b9b5;color:#a4221a}
.b-waiting,.b-pending{background:#fff6dd;border-color:#ecd38c;color:#7a5800}
.b-running{background:#e8f1fd;border-color:#b5cff3;color:#0b4f9c}
.muted{color:#6e7781}
.small{font-size:12px}
.mono,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
code.preview{overflow-wrap:anywhere}
.details{max-width:560px;font-size:12px}
pre.error{margin:0;padding:6px 8px;background:#f6f8fa;border-radius:4px;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
.kvp{display:inline-block;margin:0 14px 2px 0;overflow-wrap:anywhere}
.kvp .k{color:#6e7781}
.nowrap,td.action{white-space:nowrap}
td.action{width:1%}
.flash{padding:9px 14px;border-radius:6px;margin-bottom:16px;border:1px solid #f1b9b5;background:#fdecec;color:#8a1f1f}
.note{padding:9px 14px;border-radius:6px;margin-bottom:16px;border:1px solid #d8dee4;background:#fff}
.ok{color:#1a6b34}
.bad{color:#a4221a}
form.decide{display:flex;gap:8px;align-items:center;margin:0}
form.filters{display:flex;gap:12px;align-items:center;margin:0 0 12px}
form.signin{display:flex;flex-direction:column;gap:10px;max-width:420px}
form.signin input{width:100%}
.progress{display:block;margin-top:4px}
input[type=text],input[type=password],select{padding:4px 8px;border:1px solid #c9d1d9;border-radius:4px;font:inherit;background:#fff}
input[type=text]{width:120px}
input[type=text].reason{width:180px}
button{padding:4px 12px;border-radius:4px;border:1px solid #c9d1d9;background:#f6f8fa;font:inherit;cursor:pointer}
button.approve{background:#1f7a3d;color:#fff;border-color:#1a6834}
button.deny{background:#fff;color:#a4221a;border-color:#e0a8a3}
svg{display:block}
svg.gauge{display:inline-block;vertical-align:middle;margin-right:8px}
svg.chart{width:100%;overflow:visible;fill:#57606a}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
svg text.label{fill:#1f2328;font-size:12px}
.gauge-text{font-variant-numeric:tabular-nums;white-space:nowrap}
ol.timeline{list-style:none;margin:0;padding:0}
ol.timeline li{position:relative;display:grid;grid-template-columns:18px minmax(0,24rem) 8rem 12rem auto;justify-content:start;gap:2px 14px;align-items:center;padding:6px 0}
ol.timeline li:not(:last-child)::before{content:"";position:absolute;left:8px;top:50%;height:100%;border-left:2px solid #afb8c1}
ol.timeline .dot{position:relative;width:18px;height:18px;border-radius:50%;border:2px solid #afb8c1;background:#fff;color:#fff;font-size:11px;line-height:14px;text-align:center;font-weight:700}
ol.timeline .id{color:#1f2328;overflow-wrap:anywhere}
ol.timeline .facts{display:contents}
ol.timeline .tool,ol.timeline .at{color:#57606a;font-size:12px}
ol.timeline .state{font-size:12px;color:#6e7781}
ol.timeline .detail{grid-column:2/-1;color:#57606a;font-size:11px;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.timeline .t-done .dot{background:#2da44e;border-color:#2da44e}
.timeline .t-done .dot::after{content:"✓"}
.timeline .t-done .state{color:#1a6b34}
.timeline .t-waiting .dot{background:#d4a72c;border-color:#d4a72c}
.timeline .t-waiting .state{color:#7a5800}
.timeline .t-failed .dot{background:#cf222e;border-color:#cf222e}
.timeline .t-failed .dot::after{content:"✕"}
.timeline .t-failed .state{color:#a4221a}
.timeline .t-running .dot{background:#218bff;border-color:#218bff}
.timeline .t-running .state{color:#0b4f9c}
@media (max-width:640px){
header{padding:10px 12px;gap:14px}
header nav a{margin-right:12px}
main{padding:14px 12px 40px}
.card{padding:12px}
.grid{grid-template-columns:minmax(0,1fr)}
table,tbody{display:block;border:0;background:none}
thead{display:none}
tr{display:block;background:#fff;border:1px solid #d8dee4;border-radius:6px;margin-bottom:8px;padding:6px 10px}
td{display:inline-block;border:0;padding:2px 10px 2px 0}
td[data-label],td.action,td.details{display:block;width:auto;max-width:none}
td[data-label]::before{content:attr(data-label);display:inline-block;min-width:86px;color:#57606a;font-size:12px}
td.action{white-space:normal}
form.decide,form.filters{flex-wrap:wrap}
input[type=text],input[type=text].reason{width:100%}
ol.timeline li{grid-template-columns:18px minmax(0,1fr);align-items:start}
ol.timeline .facts{display:block;grid-column:2}
ol.timeline .facts>span{margin-right:10px}
}
`.trim();

/** Colours of the charts: neutral, with one accent per state. */
export const COLOR = {
  track: '#e6e9ed',
  bar: '#57606a',
  warn: '#bf8700',
  over: '#cf222e',
  grid: '#eaeef2',
  axis: '#8c959f',
  line: '#0b5cad',
  area: '#dbe8f7',
} as const;

/** Who is signed in, as the header shows them, and the CSRF token of the sign-out form. */
export interface SignedInUser {
  readonly name: string;
  /** What they are known as besides their name: the principal, the roles. */
  readonly detail: string;
  readonly csrf: string;
}

export interface LayoutInput {
  readonly title: string;
  readonly body: Html;
  /** Pending approvals, shown in the navigation; null for a page without it (before signing in). */
  readonly pending: number | null;
  /** Reload the page every 2 s (a plan that is running). */
  readonly refresh?: boolean;
  /** Go on to this address of the dashboard at once: a page that ends a sign-in at another site. */
  readonly next?: string;
  /** Who is signed in, when people sign in. */
  readonly user?: SignedInUser;
}

// Built once, byte for byte as hashed for the CSP: no formatter or template may add a space inside it.
const STYLE = raw(`<style>${CSS}</style>`);

/**
 * The page around a body. Its referrer policy relaxes the header's no-referrer to same-origin: under
 * no-referrer a browser sends the page's forms with `Origin: null`, which the Origin check must refuse.
 * Other origins still get no referrer.
 */
export function layout(p: LayoutInput): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        ${p.refresh ? html`<meta http-equiv="refresh" content="2" />` : ''}
        ${p.next === undefined ? '' : html`<meta http-equiv="refresh" content="0;url=${p.next}" />`}
        <title>${p.title} · leash</title>
        ${STYLE}
      </head>
      <body>
        <header>
          <a class="brand" href="/">leash</a>
          ${p.pending === null ? '' : navigation(p.pending)} ${p.user === undefined ? '' : signedIn(p.user)}
        </header>
        <main>${p.body}</main>
      </body>
    </html>`;
}

function navigation(pending: number): Html {
  return html`<nav>
    <a href="/">Plans</a
    ><a href="/approvals"
      >Approvals${pending > 0 ? html` <span class="badge b-pending">${pending} pending</span>` : ''}</a
    ><a href="/budgets">Budgets</a>
  </nav>`;
}

function signedIn(user: SignedInUser): Html {
  return html`<div class="who">
    <span>Signed in as <strong>${user.name}</strong> <span class="muted small">${user.detail}</span></span>
    <form method="post" action="/logout">
      <input type="hidden" name="csrf" value="${user.csrf}" />
      <button type="submit">Sign out</button>
    </form>
  </div>`;
}

/** A status as a coloured pill; the class comes from a fixed list, never from the text. */
export function badge(text: string, kind: BadgeKind | null = badgeKind(text)): Html {
  return html`<span class="badge${kind === null ? '' : ` b-${kind}`}">${text}</span>`;
}

export type BadgeKind =
  'completed' | 'approved' | 'allowed' | 'failed' | 'denied' | 'waiting' | 'pending' | 'running';

const KINDS: Readonly<Record<string, BadgeKind>> = {
  completed: 'completed',
  approved: 'approved',
  used: 'approved',
  allowed: 'allowed',
  failed: 'failed',
  denied: 'denied',
  cancelled: 'failed',
  awaiting_confirmation: 'waiting',
  'waiting for confirmation': 'waiting',
  waiting: 'waiting',
  pending: 'pending',
  execute: 'running',
  running: 'running',
  done: 'completed',
};

export function badgeKind(text: string): BadgeKind | null {
  return Object.hasOwn(KINDS, text) ? (KINDS[text] ?? null) : null;
}

/** A link to a dashboard path whose segments are encoded (plan ids may hold `/`, `?` or `#`). */
export function planPath(planId: string, suffix = ''): string {
  return `/plans/${encodeURIComponent(planId)}${suffix}`;
}

/** A timestamp as people read it, in UTC: `2026-11-30 10:00:05Z`. */
export function time(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, 'Z');
}

/**
 * A small horizontal bar: `used` of `limit`, darker as it fills, red at the limit. No bar, and the words
 * "no limit", when there is none.
 */
export function gauge(used: number, limit: number | null, text: string): Html {
  if (limit === null) {
    return html`<span class="gauge-text">${text} <span class="muted">· no limit</span></span>`;
  }
  const width = 120;
  const ratio = limit <= 0 ? (used > 0 ? 1 : 0) : Math.min(1, Math.max(0, used / limit));
  const color = ratio >= 1 ? COLOR.over : ratio >= 0.8 ? COLOR.warn : COLOR.bar;
  const fill = Math.round(ratio * width * 10) / 10;
  const pct = Math.round(ratio * 100);
  return html`<svg
      class="gauge"
      width="${width}"
      height="8"
      viewBox="0 0 ${width} 8"
      role="img"
      aria-label="${pct}% used"
    >
      <rect width="${width}" height="8" rx="4" fill="${COLOR.track}" />
      ${fill > 0 ? html`<rect width="${fill}" height="8" rx="4" fill="${color}" />` : ''}</svg
    ><span class="gauge-text">${text}</span>`;
}
