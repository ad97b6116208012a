import { html } from 'hono/html';
import type { CommandStyle } from '../../runner/commandLine.js';
import { layout, type Html } from '../views.js';

// What every page of the dashboard is drawn with, and the page of a message.

/** What a failed approve/deny form shows above the inbox, with what was typed kept. */
export interface Flash {
  readonly message: string;
  readonly approvalId?: string;
  readonly by?: string;
  readonly reason?: string;
}

export interface PageContext {
  /** Epoch ms, from the dashboard's clock. */
  readonly now: number;
  /** Pending approvals in the whole store, for the navigation. */
  readonly pending: number;
  /** The CSRF token the forms carry. */
  readonly csrf: string;
  /** How the `leash` commands a page shows start, and their store. */
  readonly style: CommandStyle;
}

export function messagePage(ctx: PageContext, title: string, message: string, link?: string): Html {
  return layout({
    title,
    body: html`<h1>${title}</h1>
      <p class="flash">${message}</p>
      <p>
        ${link === undefined ? '' : html`<a href="${link}">Audit log</a> · `}<a href="/">Back to the plans</a>
      </p>`,
    pending: ctx.pending,
  });
}
