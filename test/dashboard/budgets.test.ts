import { describe, expect, it } from 'vitest';
import { spendCap, type SpendCapInit } from '../../src/guardrails/caps.js';
import { GuardrailValidationError } from '../../src/errors.js';
import { DEFAULT_RESERVATION_TTL_MS } from '../../src/service/core.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { dashboard, fixture, textOf, type Fixture } from './support.js';

const DAY_MS = 86_400_000;

/** Installs caps of `limit` a day in UTC unless told otherwise. */
async function caps(f: Fixture, ...inits: Partial<SpendCapInit>[]): Promise<void> {
  await f.store.putCaps(inits.map((i) => spendCap({ id: 'cap', match: {}, limit: 50, window: 'day', ...i })));
}

/** Configures plan `id` with `labels` and spends `spent` from its budget (and every cap that applies). */
async function spender(f: Fixture, id: string, labels: Record<string, string>, spent = 0): Promise<void> {
  await f.runner.service.configureGuardrails(id, { toolBudget: 1000, labels });
  if (spent > 0) expect((await f.runner.service.checkToolBudget(id, spent)).allowed).toBe(true);
}

/** The Budgets page: its markup, its text, and the cells of its tables' rows as text. */
async function budgets(
  f: Fixture,
): Promise<{ status: number; text: string; page: string; rows: string[][] }> {
  const { status, text } = await dashboard(f).get('/budgets');
  const rows = [...text.matchAll(/<tr>([\s\S]*?)<\/tr>/g)]
    .map((tr) => [...(tr[1] ?? '').matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((td) => textOf(td[1] ?? '')))
    .filter((cells) => cells.length > 0);
  return { status, text, page: textOf(text), rows };
}

/** Labels, Used (the gauge's text), Spent, Reserved, Left, Projected at reset. */
const COLUMNS = 6;

describe('the Budgets page', () => {
  it('shows a cap with what its window spent, holds and has left of the limit', async () => {
    const f = fixture();
    await caps(f, { id: 'team-daily', match: { team: 'ml' } });
    await spender(f, 'p', { team: 'ml' }, 12.5);
    await f.runner.service.reserveBudget('p', 1, { reservationId: 'r1' });
    const { status, page, rows } = await budgets(f);
    expect(status).toBe(200);
    expect(page).toContain('team-daily 50.00 per day (UTC)');
    expect(rows).toHaveLength(1);
    const [labels, used, ...numbers] = rows[0] ?? [];
    expect([labels, numbers.slice(0, 3)]).toEqual(['team=ml', ['12.50', '1.00', '36.50']]);
    expect(used).toMatch(/13\.50 \/ 50\.00$/);
  });

  it('names the current window and when it resets', async () => {
    const f = fixture();
    await caps(f, {});
    const { page } = await budgets(f);
    expect(page).toContain('window day:2026-11-30 · resets 2026-12-01 00:00:00Z (in 14h00m)');
  });

  it('leaves holds that lapsed out of what is reserved', async () => {
    const f = fixture();
    await caps(f, {});
    await spender(f, 'p', {});
    await f.runner.service.reserveBudget('p', 2, { reservationId: 'r1' });
    expect((await budgets(f)).rows[0]?.[3]).toBe('2.00');
    f.clock.advance(DEFAULT_RESERVATION_TTL_MS);
    expect((await budgets(f)).rows[0]?.[3]).toBe('0.00');
  });

  it('projects the spending so far to the reset at the same pace', async () => {
    const f = fixture();
    await caps(f, {});
    // 10:00 UTC: ten hours of the day's 24 have passed.
    await spender(f, 'p', {}, 12.5);
    const { rows } = await budgets(f);
    expect(rows[0]?.[COLUMNS - 1]).toBe('30.00');
  });

  it('shows no reset and no projection for a lifetime cap', async () => {
    const f = fixture();
    await caps(f, { window: 'lifetime' });
    await spender(f, 'p', {}, 12.5);
    const { page, rows } = await budgets(f);
    expect(page).toContain('50.00 in all (lifetime) · no alerts · window lifetime · resets never (lifetime)');
    expect(rows[0]?.[COLUMNS - 1]).toBe('—');
  });

  it('marks each alert fraction on the gauge', async () => {
    const f = fixture();
    await caps(f, { alertAt: [0.5, 0.8] });
    const { text, page } = await budgets(f);
    expect(page).toContain('alerts at 50%, 80%');
    expect(text).toMatch(/<line\s+x1="120"\s+x2="120"[^>]*>\s*<title>alert at 50%<\/title>/);
    expect(text).toMatch(/<line\s+x1="192"\s+x2="192"[^>]*>\s*<title>alert at 80%<\/title>/);
  });

  it('puts the cap closest to its limit first', async () => {
    const f = fixture();
    await caps(f, { id: 'a-wide', limit: 100 }, { id: 'z-tight', limit: 20 });
    await spender(f, 'p', {}, 10);
    const { text } = await budgets(f);
    expect(text.indexOf('id="z-tight"')).toBeGreaterThan(-1);
    expect(text.indexOf('id="z-tight"')).toBeLessThan(text.indexOf('id="a-wide"'));
  });

  it('shows one row per label value of a cap that matches any value, the closest first', async () => {
    const f = fixture();
    await caps(f, { id: 'per-team', match: { team: '*' } });
    await spender(f, 'p', { team: 'ml' }, 5);
    await spender(f, 'q', { team: 'ops' }, 20);
    const { rows } = await budgets(f);
    expect(rows.map((r) => [r[0], r[2]])).toEqual([
      ['team=ops', '20.00'],
      ['team=ml', '5.00'],
    ]);
  });

  it('shows a label value as text, never as markup', async () => {
    const f = fixture();
    await caps(f, { id: 'per-team', match: { team: '*' } });
    await spender(f, 'p', { team: '<script>alert(1)</script>' }, 5);
    const { text, rows } = await budgets(f);
    expect(text).not.toContain('<script>');
    expect(text).toContain('team=&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(rows[0]?.[0]).toBe('team=<script>alert(1)</script>');
  });

  it('shows an empty gauge for a cap nothing was spent under this window', async () => {
    const f = fixture();
    await caps(f, { id: 'per-team', match: { team: '*' } });
    const { text, rows } = await budgets(f);
    expect(rows).toEqual([
      ['team=*', '0.00 / 50.00 nothing spent this window', '0.00', '0.00', '50.00', '—'],
    ]);
    expect(text).toContain('aria-label="0% of the limit spent or reserved"');
  });

  it('leaves out what was spent in an earlier window', async () => {
    const f = fixture();
    await caps(f, {});
    await spender(f, 'p', {}, 12.5);
    f.clock.advance(DAY_MS);
    const { page, rows } = await budgets(f);
    expect(page).toContain('window day:2026-12-01');
    expect(rows[0]?.[1]).toBe('0.00 / 50.00 nothing spent this window');
  });

  it('says so when the store has no caps', async () => {
    const { status, page } = await budgets(fixture());
    expect(status).toBe(200);
    expect(page).toContain('No spend caps in this store.');
  });

  it('is linked from the navigation of every page', async () => {
    const { text } = await dashboard(fixture()).get('/');
    expect(text).toContain('<a href="/budgets">Budgets</a>');
  });
});

describe("a plan's page", () => {
  it('lists the caps that apply to the plan, each linked to its place on the Budgets page', async () => {
    const f = fixture();
    await caps(f, { id: 'team-ml', match: { team: 'ml' } }, { id: 'team-ops', match: { team: 'ops' } });
    await spender(f, 'p', { team: 'ml' }, 12.5);
    const { text } = await dashboard(f).get('/plans/p');
    const page = textOf(text);
    expect(page).toContain('Spend caps team-ml 12.50 / 50.00 team=ml · day:2026-11-30');
    expect(text).toContain('<a href="/budgets#team-ml">team-ml</a>');
    expect(page).not.toContain('team-ops');
    expect((await budgets(f)).text).toContain('id="team-ml"');
  });

  it('has no Spend caps section when no cap applies to the plan', async () => {
    const f = fixture();
    await caps(f, { id: 'team-ops', match: { team: 'ops' } });
    await spender(f, 'p', { team: 'ml' }, 1);
    const { text } = await dashboard(f).get('/plans/p');
    expect(textOf(text)).not.toContain('Spend caps');
  });

  it('shows the plan when the store cannot read its caps, and logs why', async () => {
    class BadCaps extends MemoryStore {
      override listCapWindows(): never {
        throw new GuardrailValidationError('cap window', 'cap window is malformed');
      }
    }
    const f = fixture(new BadCaps());
    await caps(f, { id: 'team-ml', match: { team: 'ml' } });
    await spender(f, 'p', { team: 'ml' });
    const d = dashboard(f);
    const { status, text } = await d.get('/plans/p');
    expect(status).toBe(200);
    expect(textOf(text)).not.toContain('Spend caps');
    expect(d.logged.join('\n')).toContain('spend caps of plan "p" not shown: cap window is malformed');
  });
});
