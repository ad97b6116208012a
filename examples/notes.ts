// What every agent example works on: a plan in a new SQLite file with a budget, a step limit and a
// person's approval before a file is written, the notes to summarise, the approval the example gives in
// the person's place, and the report each ends with.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AutonomyGuardrailService, SqliteStore, type ModelPrice } from 'leash';

/** Dollars per million tokens; check your provider's current prices. */
export const GPT_4O_MINI: Record<string, ModelPrice> = {
  'gpt-4o-mini': { input: 0.15, output: 0.6, cached_input: 0.075 },
};

export async function notesPlan(name: string) {
  const db = join(mkdtempSync(join(tmpdir(), `leash-${name}-`)), 'leash.db');
  const store = new SqliteStore({ path: db });
  await store.migrate();
  const service = new AutonomyGuardrailService({ store });
  const planId = 'notes-agent';
  await service.configureGuardrails(planId, {
    maxSteps: 6,
    toolBudget: 0.05, // dollars
    requiredConfirmations: ['write_file'],
  });
  const files = new Map([['notes.txt', 'leash keeps agents inside budgets, step limits and approvals.']]);

  /** Prints what the run wrote, spent and logged, and closes the store. */
  async function report(): Promise<void> {
    const g = await service.getGuardrails(planId);
    const trail = await service.getAuditTrail(planId);
    console.log(`summary.txt: ${JSON.stringify(files.get('summary.txt') ?? null)}`);
    console.log(`spent ${g?.budgetSpent} of ${g?.toolBudget} dollars in ${g?.stepCount} step(s)`);
    console.log(
      `audit log: ${trail?.size} entries, ${trail?.deniedCount} denied; verify: npx leash verify --db ${db}`,
    );
    store.close();
  }

  /**
   * Approves a paused call in a person's place, and says so: in a real run a person decides with
   * `leash approve` or the dashboard, and the application resumes.
   */
  async function approveForThePerson(approvalId: string, toolName: string): Promise<void> {
    console.log(`${toolName} waits for a person: approval ${approvalId}`);
    await service.approve(approvalId, { by: 'example-reviewer', reason: 'summary looks right' });
    console.log(
      '  the example approves it itself, as example-reviewer (a person would use `leash approve` or the dashboard)',
    );
  }

  return { service, planId, files, approveForThePerson, report };
}
