import { describe, expect, it } from 'vitest';
import { Browser, person, requestUnder } from './signin-support.js';
import { dashboard, fixture, textOf } from './support.js';

const RELEASE_TWO = { deploy: { approvers: ['role:release'], quorum: 2 } };

/** Ann and Bob (release), Eve (finance) and Carol (release, who asks); an approval under `rules`. */
async function team(rules: Parameters<typeof requestUnder>[1] = RELEASE_TWO) {
  const f = fixture();
  const tokens = {
    ann: await person(f, { id: 'ann', name: 'Ann Lee', roles: ['release'] }),
    bob: await person(f, { id: 'bob', name: 'Bob Roe', roles: ['release'] }),
    eve: await person(f, { id: 'eve', name: 'Eve Poe', roles: ['finance'] }),
    carol: await person(f, { id: 'carol', name: 'Carol Ng', roles: ['release'] }),
  };
  const approvalId = await requestUnder(f, rules);
  const d = dashboard(f);
  const as = (who: keyof typeof tokens) => new Browser(d.app).signedIn(tokens[who]);
  return { f, approvalId, as };
}

/** Approves `approvalId` from the inbox as the browser's person; the response. */
async function approve(browser: Browser, approvalId: string, reason?: string): Promise<Response> {
  const csrf = await browser.csrf('/');
  return browser.post(`/approvals/${approvalId}/approve`, {
    csrf,
    ...(reason === undefined ? {} : { reason }),
  });
}

describe('the inbox of a signed-in person', () => {
  it('lists the pending approvals the person may approve, with the form', async () => {
    const { approvalId, as } = await team();
    const page = await (await (await as('ann')).get('/approvals')).text();
    expect(page).toContain(`action="/approvals/${approvalId}/approve"`);
  });

  it('leaves out those of a rule that does not name the person, and counts none in the navigation', async () => {
    const { approvalId, as } = await team();
    const page = await (await (await as('eve')).get('/approvals')).text();
    expect(page).not.toContain(approvalId);
    expect(textOf(page)).toContain('No confirmation requests.');
    expect(page).not.toMatch(/\d+ pending/);
  });

  it('leaves out the approval the person asked for, which they may not approve', async () => {
    const { approvalId, as } = await team();
    expect(await (await (await as('carol')).get('/approvals')).text()).not.toContain(approvalId);
  });

  it("shows the plan's approvals the person may not decide without a form, naming who may", async () => {
    const { approvalId, as } = await team();
    const page = await (await (await as('eve')).get('/plans/agent')).text();
    expect(page).not.toContain(`action="/approvals/${approvalId}/approve"`);
    expect(textOf(page)).toContain('Awaiting role:release');
  });
});

describe('a quorum of two, decided in the dashboard', () => {
  it('counts one approval, shows it, and keeps the request pending', async () => {
    const { f, approvalId, as } = await team();
    const ann = await as('ann');
    expect((await approve(ann, approvalId, 'looks fine')).status).toBe(303);
    const approval = await f.runner.service.getApproval(approvalId);
    expect([approval?.status, approval?.votes?.map((v) => v.by)]).toEqual([
      'pending',
      [{ kind: 'token', subject: 'ann', name: 'Ann Lee', principal: 'ann', roles: ['release'] }],
    ]);
    const page = textOf(await (await (await as('bob')).get('/approvals')).text());
    expect(page).toContain('1 of 2 approvals: Ann Lee');
  });

  it('no longer lists it for the person who approved already', async () => {
    const { approvalId, as } = await team();
    const ann = await as('ann');
    await approve(ann, approvalId);
    expect(await (await ann.get('/approvals?status=pending')).text()).not.toContain(approvalId);
  });

  it('grants it at the second person, and shows who decided and how they signed in', async () => {
    const { f, approvalId, as } = await team();
    await approve(await as('ann'), approvalId);
    await approve(await as('bob'), approvalId);
    const approval = await f.runner.service.getApproval(approvalId);
    expect([approval?.status, approval?.decider?.principal]).toEqual(['approved', 'bob']);
    const page = textOf(await (await (await as('eve')).get('/approvals')).text());
    expect(page).toContain('approved 2 of 2 approvals: Ann Lee, Bob Roe');
    expect(page).toContain('Bob Roe with a personal token');
  });

  it('refuses the same person twice, saying why, and counts one (400)', async () => {
    const { f, approvalId, as } = await team();
    const ann = await as('ann');
    await approve(ann, approvalId);
    const res = await approve(ann, approvalId);
    expect(res.status).toBe(400);
    expect(textOf(await res.text())).toContain('"Ann Lee" approved approval');
    expect((await f.runner.service.getApproval(approvalId))?.votes).toHaveLength(1);
  });

  it('ends it at one denial by a person the rule names', async () => {
    const { f, approvalId, as } = await team();
    const bob = await as('bob');
    const csrf = await bob.csrf('/');
    const res = await bob.post(`/approvals/${approvalId}/deny`, { csrf, reason: 'not during the freeze' });
    expect(res.status).toBe(303);
    expect(await f.runner.service.getApproval(approvalId)).toMatchObject({
      status: 'denied',
      reason: 'not during the freeze',
      decider: { principal: 'bob' },
    });
  });
});
