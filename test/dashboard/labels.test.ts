import { describe, expect, it } from 'vitest';
import { dashboard, fixture, textOf } from './support.js';

describe('the plan page', () => {
  it('shows the plan’s labels', async () => {
    const f = fixture();
    await f.runner.service.configureGuardrails('agent', { labels: { user: 'ann', team: 'ml' } });
    const words = textOf((await dashboard(f).get('/plans/agent')).text);
    expect(words).toContain('Labels team=ml user=ann');
  });

  it('escapes a label value', async () => {
    const f = fixture();
    await f.runner.service.configureGuardrails('agent', { labels: { user: '<b>ann</b>' } });
    const { text } = await dashboard(f).get('/plans/agent');
    expect([text.includes('<b>ann</b>'), text.includes('user=&lt;b&gt;ann&lt;/b&gt;')]).toEqual([
      false,
      true,
    ]);
  });

  it('shows no labels line for a plan without labels', async () => {
    const f = fixture();
    await f.runner.service.configureGuardrails('agent', { maxSteps: 3 });
    expect(textOf((await dashboard(f).get('/plans/agent')).text)).not.toContain('Labels');
  });
});
