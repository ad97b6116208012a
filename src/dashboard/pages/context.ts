import { html } from 'hono/html';
import type { CommandStyle } from '../../runner/commandLine.js';
import type { Approval } from '../../store/GuardrailStore.js';
import { layout, type Html, type LayoutInput, type SignedInUser } from '../views.js';

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
  /** Pending approvals in the whole store (that the signed-in person may decide), for the navigation. */
  readonly pending: number;
  /** The CSRF token the forms carry. */
  readonly csrf: string;
  /** How the `leash` commands a page shows start, and their store. */
  readonly style: CommandStyle;
  /** Who is signed in, when people sign in; absent when the dashboard is open to its access token. */
  readonly user?: SignedInUser;
  /**
   * Whether the signed-in person may decide an approval (its form is shown only then); absent when
   * anyone with the access token may, and names who decided.
   */
  readonly mayDecide?: (approval: Approval) => boolean;
}

/** The page around a body, with the navigation and who is signed in. */
export function pageLayout(ctx: PageContext, p: Omit<LayoutInput, 'pending' | 'user'>): Html {
  return layout({ ...p, pending: ctx.pending, ...(ctx.user === undefined ? {} : { user: ctx.user }) });
}

export function messagePage(ctx: PageContext, title: string, message: string, link?: string): Html {
  return pageLayout(ctx, {
    title,
    body: html`<h1>${title}</h1>
      <p class="flash">${message}</p>
      <p>
        ${link === undefined ? '' : html`<a href="${link}">Audit log</a> · `}<a href="/">Back to the plans</a>
      </p>`,
  });
}
