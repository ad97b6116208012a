import { html } from 'hono/html';
import { layout, type Html } from '../views.js';

// The pages of signing in: the form, the refusals, and the pages that carry a browser on to the
// dashboard after another site sent it here.

export interface LoginPageInput {
  readonly csrf: string;
  /** Where to go once signed in. */
  readonly next: string;
  /** The OpenID Connect provider to sign in with, when there is one. */
  readonly issuer: string | null;
  /** Why the last attempt failed. */
  readonly message?: string;
}

export function loginPage(p: LoginPageInput): Html {
  const withProvider = `/login/oidc?next=${encodeURIComponent(p.next)}`;
  const body = html`<h1>Sign in</h1>
    ${p.message === undefined ? '' : html`<p class="flash" role="alert">${p.message}</p>`}
    ${
      p.issuer === null
        ? ''
        : html`<p class="card">
            <a href="${withProvider}">Sign in with ${new URL(p.issuer).host}</a>
          </p>`
    }
    <form class="signin card" method="post" action="/login">
      <input type="hidden" name="csrf" value="${p.csrf}" />
      <input type="hidden" name="next" value="${p.next}" />
      <label for="token">Personal token</label>
      <input id="token" type="password" name="token" required autocomplete="off" placeholder="leash_pat_…" />
      <button type="submit">Sign in</button>
      <span class="muted small">Create one with <code>leash tokens create</code>.</span>
    </form>`;
  return layout({ title: 'Sign in', body, pending: null });
}

/** A sign-in that did not happen, and why. */
export function refusedPage(title: string, message: string): Html {
  const body = html`<h1>${title}</h1>
    <p class="flash" role="alert">${message}</p>
    <p><a href="/login">Sign in again</a></p>`;
  return layout({ title, body, pending: null });
}

/**
 * The end of a sign-in at the provider. The browser came from another site, so it withholds the
 * SameSite=Strict session cookie from this request and from any redirect of it; a page of this site
 * that moves on by itself makes the next request same-site, and the cookie goes with it.
 */
export function signedInPage(name: string, next: string): Html {
  const body = html`<h1>Signed in</h1>
    <p>Signed in as <strong>${name}</strong>. <a href="${next}">Continue</a></p>`;
  return layout({ title: 'Signed in', body, pending: null, next });
}

/**
 * A page of the dashboard opened from another site (a link in a message): the session cookie stayed
 * behind, for the same reason; asked again from here, it comes along.
 */
export function sameSitePage(url: string): Html {
  const body = html`<h1>Opening the dashboard…</h1>
    <p><a href="${url}">Continue</a></p>`;
  return layout({ title: 'Opening', body, pending: null, next: url });
}
