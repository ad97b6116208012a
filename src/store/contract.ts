import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditEntry } from '../audit/AuditEntry.js';
import { AuditTrail } from '../audit/AuditTrail.js';
import { GENESIS, type ChainedEntry } from '../audit/chain.js';
import { verifyAuditLog } from '../audit/verify.js';
import { generateKeyPairSync } from 'node:crypto';
import type { CheckpointOptions } from './checkpoints.js';
import { AutonomyGuardrails, type GuardrailsInit } from '../guardrails/AutonomyGuardrails.js';
import type { GuardrailEventType } from '../guardrails/events.js';
import type { GuardCheck } from '../guardrails/GuardCheck.js';
import type {
  Approval,
  ApprovalStatus,
  GuardrailStore,
  PlanChange,
  PlanChangeFn,
  PlanDocumentInput,
} from './GuardrailStore.js';

export interface StoreContractOptions {
  /**
   * A new, empty, open store, made with `options` when given (checkpoint tests pass `checkpoints`).
   * Called once per test; the suite closes it afterwards.
   */
  newStore: (options?: { checkpoints?: CheckpointOptions }) => GuardrailStore | Promise<GuardrailStore>;
  /**
   * Writes `text` into column `column` of the stored audit entry `seq` of plan `planId`, past the store, as
   * damage to a database would. Given by the stores that keep rows; the cases about rows that cannot be
   * read back run only with it.
   */
  setEntryColumn?: (
    store: GuardrailStore,
    planId: string,
    seq: number,
    column: 'event_type' | 'details',
    text: string,
  ) => Promise<void>;
}

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const START = '2026-11-30T10:00:00.000Z';
const LATER = '2026-11-30T11:00:00.000Z';
const HASH = 'a'.repeat(64);

function guardrails(init: GuardrailsInit = {}): AutonomyGuardrails {
  return AutonomyGuardrails.create({ maxSteps: 10, toolBudget: 5, ...init });
}

function entry(eventType: GuardrailEventType, i = 0): AuditEntry {
  const guardName = eventType.startsWith('step') ? 'step_limit' : 'tool_budget';
  return AuditEntry.create({ eventType, guardName, timestamp: T0 + i, details: { i } });
}

/** A change that records the budget check of `micros` and spends them when allowed. */
function spend(micros: number, i: number) {
  return (g: AutonomyGuardrails | null): PlanChange<GuardCheck> => {
    if (!g) throw new Error('the plan should be configured');
    const check = g.checkToolBudgetMicros(micros);
    const audit = AuditEntry.create({
      eventType: check.eventType,
      guardName: check.guardName,
      timestamp: T0 + i,
      details: { i },
    });
    return check.allowed
      ? { result: check, audit, mutation: { spendMicros: micros } }
      : { result: check, audit };
  };
}

/** A change that only opens reservation `id` of `micros` (expiring at `expiresAt`, when given). */
function reserving(id: string, micros: number, expiresAt?: number): PlanChangeFn<null> {
  const reserve = expiresAt === undefined ? { id, micros } : { id, micros, expiresAt };
  return () => ({ result: null, mutation: { reserve } });
}

/** A pending approval of `planId`, requested `i` minutes after START. */
function approval(id: string, planId: string, i = 0, status: ApprovalStatus = 'pending'): Approval {
  return {
    id,
    planId,
    decisionId: `decision-${id}`,
    operation: 'deploy',
    inputHash: HASH,
    requestedAt: new Date(T0 + i * 60_000).toISOString(),
    expiresAt: new Date(T0 + (i + 10) * 60_000).toISOString(),
    status,
  };
}

/** `a` with the tool an agent called and the preview of its input that a person is shown. */
function withTool(a: Approval): Approval {
  return { ...a, toolName: 'deploy', inputPreview: '{"env":"prod","note":"\\u202e"}' };
}

function ids(trail: AuditTrail): unknown[] {
  return trail.entries.map((e) => e.details['i']);
}

function logIds(log: readonly ChainedEntry[]): unknown[] {
  return log.map((c) => c.entry.details['i']);
}

/**
 * The behaviour every {@link GuardrailStore} must have. Call it from the store's test file:
 *
 * @example
 * runStoreContract('MemoryStore', { newStore: () => new MemoryStore({ auditCapacity: 5000 }) });
 */
export function runStoreContract(name: string, options: StoreContractOptions): void {
  describe(`GuardrailStore contract: ${name}`, () => {
    let store: GuardrailStore;

    beforeEach(async () => {
      store = await options.newStore();
    });

    afterEach(async () => {
      await store.close();
    });

    async function stored(planId: string) {
      const record = await store.get(planId);
      if (!record) throw new Error(`plan ${planId} should be stored`);
      return record;
    }

    describe('put, get and delete', () => {
      it('returns null for a plan that was never stored', async () => {
        expect(await store.get('missing')).toBeNull();
      });

      it('returns the guardrails that were put', async () => {
        const g = guardrails({ requiredConfirmations: ['deploy'], stepCount: 2, budgetSpent: 1.25 });
        await store.put('p', g);
        expect((await stored('p')).guardrails.toJSON()).toEqual(g.toJSON());
      });

      it('starts an empty audit trail with the store capacity for a new plan put without one', async () => {
        await store.put('p', guardrails());
        const { audit } = await stored('p');
        expect(audit.size).toBe(0);
        expect(audit.allowedCount).toBe(0);
        expect(audit.deniedCount).toBe(0);
        expect(audit.maxEntries).toBe(store.auditCapacity);
      });

      it('keeps the existing audit trail when guardrails are put again without one', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1) }));
        await store.update('p', () => ({ result: null, audit: entry('step_blocked', 2) }));
        await store.put('p', guardrails({ maxSteps: 3 }));
        const record = await stored('p');
        expect(record.guardrails.maxSteps).toBe(3);
        expect(ids(record.audit)).toEqual([1, 2]);
        expect(record.audit.allowedCount).toBe(1);
        expect(record.audit.deniedCount).toBe(1);
      });

      it('replaces the audit trail when guardrails are put with one', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1) }));
        const trail = new AuditTrail({ maxEntries: 4 });
        trail.add(entry('step_blocked', 7));
        trail.add(entry('budget_blocked', 8));
        await store.put('p', guardrails(), trail);
        const { audit } = await stored('p');
        expect(ids(audit)).toEqual([7, 8]);
        expect(audit.allowedCount).toBe(0);
        expect(audit.deniedCount).toBe(2);
      });

      it("keeps a trail that was put at the store's own capacity, whatever capacity it came with", async () => {
        const small = new AuditTrail({ maxEntries: 1 });
        small.add(entry('step_allowed', 1));
        await store.put('p', guardrails(), small);
        const { audit } = await stored('p');
        expect(audit.maxEntries).toBe(store.auditCapacity);
      });

      it('keeps the newest entries of a trail larger than its capacity', async () => {
        const large = new AuditTrail({ maxEntries: store.auditCapacity + 2 });
        for (let i = 0; i < store.auditCapacity + 2; i++) large.add(entry('step_allowed', i));
        await store.put('p', guardrails(), large);
        const kept = ids((await stored('p')).audit);
        expect(kept.length).toBe(store.auditCapacity);
        expect(kept[0]).toBe(2);
        expect(kept.at(-1)).toBe(store.auditCapacity + 1);
      });

      it('stores copies of what was put, so later changes by the caller change nothing stored', async () => {
        const g = guardrails();
        const trail = new AuditTrail({ maxEntries: 4 });
        trail.add(entry('step_allowed', 1));
        await store.put('p', g, trail);
        g.incrementStep();
        g.recordCost(1);
        trail.add(entry('step_allowed', 2));
        const record = await stored('p');
        expect(record.guardrails.stepCount).toBe(0);
        expect(record.guardrails.budgetSpent).toBe(0);
        expect(ids(record.audit)).toEqual([1]);
      });

      it('returns copies from get, so changing them changes nothing stored', async () => {
        await store.put('p', guardrails());
        const first = await stored('p');
        first.guardrails.incrementStep();
        first.guardrails.recordCost(2);
        first.audit.add(entry('step_allowed', 1));
        const second = await stored('p');
        expect(second.guardrails.stepCount).toBe(0);
        expect(second.guardrails.budgetSpent).toBe(0);
        expect(second.audit.size).toBe(0);
      });

      it('reads the guardrails alone as get reads them, after updates', async () => {
        if (!store.getGuardrails) return;
        await store.put('p', guardrails({ requiredConfirmations: ['deploy'] }));
        await store.update('p', () => ({ result: null, mutation: { steps: 2 } }));
        expect((await store.getGuardrails('p'))?.toJSON()).toEqual((await stored('p')).guardrails.toJSON());
        expect((await store.getGuardrails('p'))?.stepCount).toBe(2);
      });

      it('reads null guardrails for a plan that was never stored', async () => {
        if (!store.getGuardrails) return;
        expect(await store.getGuardrails('missing')).toBeNull();
      });

      it('returns a copy from getGuardrails, so changing it changes nothing stored', async () => {
        if (!store.getGuardrails) return;
        await store.put('p', guardrails());
        (await store.getGuardrails('p'))?.incrementStep();
        expect((await store.getGuardrails('p'))?.stepCount).toBe(0);
      });

      it('deletes a plan, its guardrails and its audit trail', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1) }));
        expect(await store.delete('p')).toBe(true);
        expect(await store.get('p')).toBeNull();
        await store.put('p', guardrails());
        expect((await stored('p')).audit.size).toBe(0);
      });

      it('answers false when deleting a plan that is not stored', async () => {
        expect(await store.delete('missing')).toBe(false);
      });

      it('keeps plans apart', async () => {
        await store.put('a', guardrails());
        await store.put('b', guardrails());
        await store.update('a', () => ({
          result: null,
          audit: entry('step_allowed', 1),
          mutation: { steps: 1 },
        }));
        const b = await stored('b');
        expect(b.guardrails.stepCount).toBe(0);
        expect(b.audit.size).toBe(0);
        expect((await stored('a')).guardrails.stepCount).toBe(1);
      });
    });

    describe('update', () => {
      it('passes the stored guardrails to the change', async () => {
        await store.put('p', guardrails({ stepCount: 4, budgetSpent: 0.5 }));
        const seen = await store.update('p', (g) => ({
          result: g ? { steps: g.stepCount, spent: g.budgetSpentMicros } : null,
        }));
        expect(seen).toEqual({ steps: 4, spent: 500_000 });
      });

      it('returns the result of the change', async () => {
        await store.put('p', guardrails());
        expect(await store.update('p', () => ({ result: 'decided' }))).toBe('decided');
      });

      it('applies both the audit entry and the mutation of a change', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({
          result: null,
          audit: entry('budget_allowed', 1),
          mutation: { spendMicros: 250_000, steps: 1 },
        }));
        const record = await stored('p');
        expect(record.guardrails.budgetSpentMicros).toBe(250_000);
        expect(record.guardrails.stepCount).toBe(1);
        expect(ids(record.audit)).toEqual([1]);
        expect(record.audit.allowedCount).toBe(1);
      });

      it('records an audit entry without a mutation', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, audit: entry('step_blocked', 3) }));
        const record = await stored('p');
        expect(ids(record.audit)).toEqual([3]);
        expect(record.audit.deniedCount).toBe(1);
        expect(record.guardrails.toJSON()).toEqual(guardrails().toJSON());
      });

      it('changes nothing for a change with neither audit entry nor mutation', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null }));
        const record = await stored('p');
        expect(record.audit.size).toBe(0);
        expect(record.guardrails.toJSON()).toEqual(guardrails().toJSON());
      });

      it('passes null for an unconfigured plan and returns the result without storing anything', async () => {
        const seen: unknown[] = [];
        const result = await store.update('missing', (g) => {
          seen.push(g);
          return { result: 42 };
        });
        expect(seen).toEqual([null]);
        expect(result).toBe(42);
        expect(await store.get('missing')).toBeNull();
      });

      it('refuses to record a change for an unconfigured plan', async () => {
        await expect(
          store.update('missing', () => ({
            result: null,
            audit: entry('step_allowed'),
            mutation: { steps: 1 },
          })),
        ).rejects.toBeInstanceOf(Error);
        expect(await store.get('missing')).toBeNull();
      });

      it('rejects with the error of a change that throws and changes nothing', async () => {
        await store.put('p', guardrails());
        const boom = new Error('boom');
        await expect(
          store.update('p', () => {
            throw boom;
          }),
        ).rejects.toBe(boom);
        const record = await stored('p');
        expect(record.audit.size).toBe(0);
        expect(record.guardrails.toJSON()).toEqual(guardrails().toJSON());
      });

      it('adds mutation steps to the step count', async () => {
        await store.put('p', guardrails({ stepCount: 1 }));
        await store.update('p', () => ({ result: null, mutation: { steps: 2 } }));
        expect((await stored('p')).guardrails.stepCount).toBe(3);
      });

      it('adds mutation spending, in micro-units, to the budget spent', async () => {
        await store.put('p', guardrails({ budgetSpent: 0.1 }));
        await store.update('p', () => ({ result: null, mutation: { spendMicros: 200_000 } }));
        const g = (await stored('p')).guardrails;
        expect(g.budgetSpentMicros).toBe(300_000);
        expect(g.budgetSpent).toBe(0.3);
      });

      it('sets the start time when it is unset', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, mutation: { startTime: START } }));
        expect((await stored('p')).guardrails.startTime).toBe(START);
      });

      it('keeps a start time that is already set', async () => {
        await store.put('p', guardrails({ startTime: START }));
        await store.update('p', () => ({ result: null, mutation: { startTime: LATER } }));
        expect((await stored('p')).guardrails.startTime).toBe(START);
      });

      it('keeps the other fields when setting the start time', async () => {
        await store.put('p', guardrails({ stepCount: 2, budgetSpent: 1 }));
        await store.update('p', () => ({ result: null, mutation: { startTime: START, steps: 1 } }));
        const g = (await stored('p')).guardrails;
        expect(g.toJSON()).toEqual(guardrails({ stepCount: 3, budgetSpent: 1, startTime: START }).toJSON());
      });

      it('shows each update the effects of the ones before it', async () => {
        await store.put('p', guardrails());
        for (let i = 0; i < 3; i++) await store.update('p', () => ({ result: null, mutation: { steps: 1 } }));
        const steps = await store.update('p', (g) => ({ result: g?.stepCount }));
        expect(steps).toBe(3);
      });

      it('grants exactly the budget to 1,000 concurrent check-and-spend updates and records every one', async () => {
        const calls = 1000;
        await store.put('p', guardrails({ toolBudget: 0.0001 }), new AuditTrail({ maxEntries: 2 * calls }));
        expect((await stored('p')).guardrails.toolBudgetMicros).toBe(100);

        const checks = await Promise.all(
          Array.from({ length: calls }, (_, i) => store.update('p', spend(1, i))),
        );

        expect(checks.filter((c) => c.allowed)).toHaveLength(100);
        const record = await stored('p');
        expect(record.guardrails.budgetSpentMicros).toBe(100);
        expect(record.audit.size).toBe(calls);
        expect(record.audit.allowedCount).toBe(100);
        expect(record.audit.deniedCount).toBe(calls - 100);
        // Serialized updates grant the first 100 they run, so the trail holds 100 grants, then denials.
        const results = record.audit.entries.map((e) => e.result);
        expect(results.slice(0, 100).every((r) => r === 'allowed')).toBe(true);
        expect(results.slice(100).every((r) => r === 'denied')).toBe(true);
      });
    });

    describe('approvals', () => {
      /** Stores `a` with a change of `planId`, whatever plan `a` names. */
      function insertInto(planId: string, a: Approval): Promise<null> {
        return store.update(planId, () => ({ result: null, approval: a }));
      }

      /** Stores `a` with a change of its own plan that does nothing else. */
      function insert(a: Approval): Promise<null> {
        return insertInto(a.planId, a);
      }

      /** What a change is handed for the approval named `approvalId` in an update of `planId`. */
      function handed(planId: string, approvalId?: string): Promise<Approval | null> {
        const change = (_g: AutonomyGuardrails | null, a: Approval | null) => ({ result: a });
        return approvalId === undefined
          ? store.update(planId, change)
          : store.update(planId, change, { approvalId });
      }

      async function listedIds(filter?: { planId?: string; status?: ApprovalStatus }): Promise<string[]> {
        return (await store.listApprovals(filter)).map((a) => a.id);
      }

      it('returns null for an approval that was never stored', async () => {
        expect(await store.getApproval('missing')).toBeNull();
      });

      it('stores the approval of a change', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
      });

      it('replaces an approval of the same id with the one a later change gives', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        const approved: Approval = {
          ...approval('a1', 'p'),
          status: 'approved',
          decidedBy: 'ann',
          decidedAt: LATER,
          reason: 'looks right',
        };
        await insert(approved);
        expect(await store.getApproval('a1')).toEqual(approved);
        expect(await listedIds()).toEqual(['a1']);
      });

      it('commits the approval together with the audit entry and the mutation of its change', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({
          result: null,
          approval: approval('a1', 'p'),
          audit: entry('step_allowed', 1),
          mutation: { steps: 1 },
        }));
        const record = await stored('p');
        expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
        expect(ids(record.audit)).toEqual([1]);
        expect(record.guardrails.stepCount).toBe(1);
      });

      it('stores neither the approval nor the audit entry when the change throws', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        const boom = new Error('boom');
        await expect(
          store.update(
            'p',
            () => {
              throw boom;
            },
            { approvalId: 'a1' },
          ),
        ).rejects.toBe(boom);
        expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
        expect((await stored('p')).audit.size).toBe(0);
      });

      it('stores neither the approval nor the audit entry of a change whose mutation is refused', async () => {
        await store.put('p', guardrails());
        await expect(
          store.update('p', () => ({
            result: null,
            approval: approval('a1', 'p'),
            audit: entry('budget_allowed', 1),
            mutation: { release: 'never-reserved' },
          })),
        ).rejects.toBeInstanceOf(Error);
        expect(await store.getApproval('a1')).toBeNull();
        expect((await stored('p')).audit.size).toBe(0);
      });

      it('refuses an approval of another plan than the one updated', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await expect(insertInto('p', approval('a1', 'q'))).rejects.toBeInstanceOf(Error);
        expect(await store.getApproval('a1')).toBeNull();
      });

      it('inserts a new approval, and refuses a new one whose id is in use', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
        const taken = store.update('p', () => ({ result: null, newApproval: approval('a1', 'p', 5) }));
        await expect(taken).rejects.toMatchObject({ code: 'APPROVAL_ID_TAKEN' });
        expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
      });

      it('refuses to replace an approval that belongs to another plan', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(approval('a1', 'q'));
        await expect(insert(approval('a1', 'p'))).rejects.toBeInstanceOf(Error);
        expect(await store.getApproval('a1')).toEqual(approval('a1', 'q'));
      });

      it('refuses an approval for an unconfigured plan', async () => {
        await expect(insert(approval('a1', 'missing'))).rejects.toBeInstanceOf(Error);
        expect(await store.getApproval('a1')).toBeNull();
      });

      it('stores a copy of the approval, so later changes by the caller change nothing stored', async () => {
        await store.put('p', guardrails());
        const a = approval('a1', 'p');
        await insert(a);
        (a as { status: ApprovalStatus }).status = 'used';
        expect((await store.getApproval('a1'))?.status).toBe('pending');
      });

      it('hands the change the approval named in the options when it belongs to the plan', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        expect(await handed('p', 'a1')).toEqual(approval('a1', 'p'));
      });

      it('hands the change null for an approval of another plan', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(approval('a1', 'q'));
        expect(await handed('p', 'a1')).toBeNull();
      });

      it('hands the change null for an approval id that is not stored', async () => {
        await store.put('p', guardrails());
        expect(await handed('p', 'missing')).toBeNull();
      });

      it('hands the change null when the options name no approval', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        expect(await handed('p')).toBeNull();
      });

      it('reads back the tool and the input preview of an approval by id, listed and handed to a change', async () => {
        await store.put('p', guardrails());
        await insert(withTool(approval('a1', 'p')));
        const read = [
          await store.getApproval('a1'),
          ...(await store.listApprovals({ planId: 'p', status: 'pending' })),
          await handed('p', 'a1'),
        ];
        expect(read).toStrictEqual([1, 2, 3].map(() => withTool(approval('a1', 'p'))));
      });

      it('reads back an approval stored without a tool or a preview without them', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        const read = [
          await store.getApproval('a1'),
          ...(await store.listApprovals()),
          await handed('p', 'a1'),
        ];
        expect(read.map((a) => a !== null && ('toolName' in a || 'inputPreview' in a))).toEqual([
          false,
          false,
          false,
        ]);
      });

      it('keeps the tool and the input preview when a decided approval replaces the pending one', async () => {
        await store.put('p', guardrails());
        await insert(withTool(approval('a1', 'p')));
        const denied: Approval = { ...withTool(approval('a1', 'p')), status: 'denied', reason: 'no' };
        await insert(denied);
        expect(await store.getApproval('a1')).toStrictEqual(denied);
      });

      it('lists approvals oldest request first', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(approval('a1', 'q', 1));
        await insert(approval('a2', 'p', 2));
        await insert(approval('a3', 'q', 3));
        expect(await listedIds()).toEqual(['a1', 'a2', 'a3']);
      });

      it('keeps the place of an approval in the list when it is replaced', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p', 1));
        await insert(approval('a2', 'p', 2));
        await insert(approval('a1', 'p', 1, 'approved'));
        expect(await listedIds()).toEqual(['a1', 'a2']);
      });

      it('lists the approvals of one plan', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(approval('a1', 'p', 1));
        await insert(approval('a2', 'q', 2));
        await insert(approval('a3', 'p', 3));
        expect(await listedIds({ planId: 'p' })).toEqual(['a1', 'a3']);
      });

      it('lists the approvals in one status', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p', 1, 'approved'));
        await insert(approval('a2', 'p', 2));
        await insert(approval('a3', 'p', 3, 'approved'));
        expect(await listedIds({ status: 'approved' })).toEqual(['a1', 'a3']);
      });

      it('lists the approvals of one plan in one status', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(approval('a1', 'p', 1, 'denied'));
        await insert(approval('a2', 'q', 2, 'denied'));
        await insert(approval('a3', 'p', 3));
        expect(await listedIds({ planId: 'p', status: 'denied' })).toEqual(['a1']);
      });

      /** `a`, asked for decision `decisionId`. */
      const forDecision = (a: Approval, decisionId: string): Approval => ({ ...a, decisionId });

      it('finds the newest approval of a plan asked for a decision', async () => {
        if (!store.findApproval) return;
        await store.put('p', guardrails());
        await insert(forDecision(approval('a2', 'p', 2), 'd1'));
        await insert(forDecision(approval('a1', 'p', 1), 'd1'));
        await insert(forDecision(approval('a3', 'p', 3), 'd2'));
        expect((await store.findApproval('p', 'd1'))?.id).toBe('a2');
      });

      it('finds, of approvals asked at the same time for a decision, the one with the greater id', async () => {
        if (!store.findApproval) return;
        await store.put('p', guardrails());
        await insert(forDecision(approval('b', 'p', 1), 'd1'));
        await insert(forDecision(approval('a', 'p', 1), 'd1'));
        expect((await store.findApproval('p', 'd1'))?.id).toBe('b');
      });

      it('finds no approval of a decision asked in another plan only', async () => {
        if (!store.findApproval) return;
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(forDecision(approval('a1', 'q', 1), 'd1'));
        expect(await store.findApproval('p', 'd1')).toBeNull();
      });

      it('lists nothing when no approval matches', async () => {
        await store.put('p', guardrails());
        await insert(approval('a1', 'p'));
        expect(await listedIds({ planId: 'q' })).toEqual([]);
        expect(await listedIds({ status: 'used' })).toEqual([]);
      });

      it("deletes a plan's approvals with the plan and keeps the other plans' approvals", async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await insert(approval('a1', 'p', 1));
        await insert(approval('a2', 'q', 2));
        await store.delete('p');
        expect(await store.getApproval('a1')).toBeNull();
        expect(await listedIds()).toEqual(['a2']);
      });
    });

    describe('runtime mutations', () => {
      it('opens a reservation and adds it to the amount reserved', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000));
        const g = (await stored('p')).guardrails;
        expect(g.reservationMicros('r1')).toBe(250_000);
        expect(g.budgetReservedMicros).toBe(250_000);
      });

      it('keeps the total of several open reservations', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000));
        await store.update('p', reserving('r2', 500_000));
        expect((await stored('p')).guardrails.budgetReservedMicros).toBe(750_000);
      });

      it('closes a released reservation and takes it off the amount reserved', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000));
        await store.update('p', reserving('r2', 500_000));
        await store.update('p', () => ({ result: null, mutation: { release: 'r1' } }));
        const g = (await stored('p')).guardrails;
        expect(g.reservationMicros('r1')).toBeUndefined();
        expect(g.budgetReservedMicros).toBe(500_000);
      });

      it('releases a reservation and spends in one mutation', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000));
        await store.update('p', () => ({ result: null, mutation: { release: 'r1', spendMicros: 300_000 } }));
        const g = (await stored('p')).guardrails;
        expect([g.budgetReservedMicros, g.budgetSpentMicros]).toEqual([0, 300_000]);
      });

      it('releases before it reserves, so one mutation can reopen the same id', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000));
        await store.update('p', () => ({
          result: null,
          mutation: { release: 'r1', reserve: { id: 'r1', micros: 100_000 } },
        }));
        const g = (await stored('p')).guardrails;
        expect([g.reservationMicros('r1'), g.budgetReservedMicros]).toEqual([100_000, 100_000]);
      });

      it("keeps a reservation's expiry", async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000, 1_000));
        expect((await stored('p')).guardrails.reservationExpiresAt('r1')).toBe(1_000);
      });

      it('gives back the reservations lapsed at expireBefore and keeps the others', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000, 1_000));
        await store.update('p', reserving('r2', 500_000, 1_001));
        await store.update('p', () => ({ result: null, mutation: { expireBefore: 1_000 } }));
        const g = (await stored('p')).guardrails;
        expect([g.reservationMicros('r1'), g.reservationMicros('r2')]).toEqual([undefined, 500_000]);
        expect(g.budgetReservedMicros).toBe(500_000);
      });

      it('expires before it reserves, so one mutation can reopen a lapsed id', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000, 1_000));
        await store.update('p', () => ({
          result: null,
          mutation: { expireBefore: 2_000, reserve: { id: 'r1', micros: 100_000, expiresAt: 3_000 } },
        }));
        const g = (await stored('p')).guardrails;
        expect([g.reservationMicros('r1'), g.reservationExpiresAt('r1')]).toEqual([100_000, 3_000]);
        expect(g.budgetReservedMicros).toBe(100_000);
      });

      it('refuses to release a reservation that is not open and records nothing', async () => {
        await store.put('p', guardrails());
        await expect(
          store.update('p', () => ({
            result: null,
            audit: entry('budget_allowed', 1),
            mutation: { release: 'r1', spendMicros: 100_000 },
          })),
        ).rejects.toBeInstanceOf(Error);
        const record = await stored('p');
        expect(record.guardrails.budgetSpentMicros).toBe(0);
        expect(record.audit.size).toBe(0);
      });

      it('refuses to reserve an id that is already open and records nothing', async () => {
        await store.put('p', guardrails());
        await store.update('p', reserving('r1', 250_000));
        await expect(
          store.update('p', () => ({
            result: null,
            audit: entry('budget_allowed', 1),
            mutation: { reserve: { id: 'r1', micros: 100_000 } },
          })),
        ).rejects.toBeInstanceOf(Error);
        const record = await stored('p');
        expect(record.guardrails.budgetReservedMicros).toBe(250_000);
        expect(record.audit.size).toBe(0);
      });

      it('grants exactly the budget to 1,000 concurrent check-and-reserve updates', async () => {
        await store.put('p', guardrails({ toolBudget: 0.0001 }));
        const reserve = (i: number) => (g: AutonomyGuardrails | null) => {
          const allowed = g?.checkToolBudgetMicros(1).allowed ?? false;
          return allowed
            ? { result: true, mutation: { reserve: { id: `r${i}`, micros: 1 } } }
            : { result: false };
        };
        const granted = await Promise.all(
          Array.from({ length: 1000 }, (_, i) => store.update('p', reserve(i))),
        );
        expect(granted.filter(Boolean)).toHaveLength(100);
        expect((await stored('p')).guardrails.budgetReservedMicros).toBe(100);
      });

      it('starts a wait for a person at the time of a pause', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, mutation: { pause: START } }));
        const g = (await stored('p')).guardrails;
        expect([g.pausedSince, g.pausedMs]).toEqual([START, 0]);
      });

      it('keeps the wait going on when paused again', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, mutation: { pause: START } }));
        await store.update('p', () => ({ result: null, mutation: { pause: LATER } }));
        expect((await stored('p')).guardrails.pausedSince).toBe(START);
      });

      it('adds the wait to the time paused when unpaused', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, mutation: { pause: START } }));
        await store.update('p', () => ({ result: null, mutation: { unpause: T0 + 90_000 } }));
        const g = (await stored('p')).guardrails;
        expect([g.pausedSince, g.pausedMs]).toEqual([null, 90_000]);
      });

      it('adds up the time of every wait', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, mutation: { pause: START } }));
        await store.update('p', () => ({ result: null, mutation: { unpause: T0 + 1_000 } }));
        await store.update('p', () => ({ result: null, mutation: { pause: LATER } }));
        await store.update('p', () => ({ result: null, mutation: { unpause: Date.parse(LATER) + 2_500 } }));
        expect((await stored('p')).guardrails.pausedMs).toBe(3_500);
      });

      it('changes nothing when unpaused without a wait going on', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, mutation: { unpause: T0 + 90_000 } }));
        const g = (await stored('p')).guardrails;
        expect([g.pausedSince, g.pausedMs]).toEqual([null, 0]);
      });

      it('counts the calls of each tool', async () => {
        await store.put('p', guardrails());
        for (const tool of ['search', 'fetch', 'search']) {
          await store.update('p', () => ({ result: null, mutation: { toolCall: tool } }));
        }
        const g = (await stored('p')).guardrails;
        expect([g.toolCallCount('search'), g.toolCallCount('fetch'), g.toolCallCount('email')]).toEqual([
          2, 1, 0,
        ]);
      });

      it('stores the runtime state of guardrails that are put', async () => {
        const g = AutonomyGuardrails.fromJSON({
          ...guardrails().toJSON(),
          reservations: [{ id: 'r1', amount: 0.25 }],
          paused_ms: 1_500,
          paused_since: START,
          tool_calls: { search: 2 },
        });
        await store.put('p', g);
        expect((await stored('p')).guardrails.toJSON()).toEqual(g.toJSON());
      });
    });

    describe('durable audit log', () => {
      /** A trail holding entries of `is`, oldest first. */
      function trailOf(...is: number[]): AuditTrail {
        const trail = new AuditTrail({ maxEntries: 10 });
        for (const i of is) trail.add(entry('step_blocked', i));
        return trail;
      }

      async function record(planId: string, i: number): Promise<void> {
        await store.update(planId, () => ({ result: null, audit: entry('step_allowed', i) }));
      }

      it('reads an empty log for a plan that was never stored', async () => {
        expect(await store.readAuditLog('missing')).toEqual([]);
      });

      it('keeps every recorded entry in the log, oldest first, numbered from 1', async () => {
        await store.put('p', guardrails());
        for (let i = 1; i <= 3; i++) await record('p', i);
        const log = await store.readAuditLog('p');
        expect(log.map((c) => [c.planId, c.seq, c.entry.details['i']])).toEqual([
          ['p', 1, 1],
          ['p', 2, 2],
          ['p', 3, 3],
        ]);
      });

      it('links each entry to the hash of the one before it, the first to GENESIS', async () => {
        await store.put('p', guardrails());
        for (let i = 1; i <= 3; i++) await record('p', i);
        const log = await store.readAuditLog('p');
        expect(log.map((c) => c.prev)).toEqual([GENESIS, log[0]?.hash, log[1]?.hash]);
      });

      it('keeps a log that verifies after a mix of updates', async () => {
        await store.put('p', guardrails({ toolBudget: 1 }));
        await record('p', 1);
        await store.update('p', spend(400_000, 2));
        await store.update('p', () => ({ result: null, mutation: { steps: 1 } }));
        await store.update('p', () => ({ result: null, replace: guardrails({ maxSteps: 4 }) }));
        await store.update('p', spend(900_000, 3));
        await store.update('p', () => ({
          result: null,
          audit: entry('step_allowed', 4),
          newApproval: approval('a1', 'p'),
        }));
        const report = await verifyAuditLog(store, 'p');
        expect([report.ok, report.size]).toEqual([true, 4]);
      });

      it('keeps the earlier entries in the log when guardrails are put with a trail', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await record('p', 2);
        await store.put('p', guardrails(), trailOf(7, 8));
        expect(logIds(await store.readAuditLog('p'))).toEqual([1, 2, 7, 8]);
      });

      it('keeps a log that verifies across a put with a trail', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await store.put('p', guardrails(), trailOf(7, 8));
        await record('p', 9);
        const report = await verifyAuditLog(store, 'p');
        expect([report.ok, report.size]).toEqual([true, 4]);
      });

      it('starts the trail get returns at the first entry of a trail that was put', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await store.put('p', guardrails(), trailOf(7, 8));
        await record('p', 9);
        expect(ids((await stored('p')).audit)).toEqual([7, 8, 9]);
      });

      it('keeps the log when guardrails are put again without a trail', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await store.put('p', guardrails({ maxSteps: 3 }));
        expect(logIds(await store.readAuditLog('p'))).toEqual([1]);
      });

      it('removes the log of a deleted plan', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await store.delete('p');
        expect(await store.readAuditLog('p')).toEqual([]);
      });

      it('starts a new log at seq 1 for a plan put again after it was deleted', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await store.delete('p');
        await store.put('p', guardrails());
        await record('p', 2);
        const log = await store.readAuditLog('p');
        expect(log.map((c) => [c.seq, c.prev, c.entry.details['i']])).toEqual([[1, GENESIS, 2]]);
      });

      it('keeps the logs of plans apart', async () => {
        await store.put('p', guardrails());
        await store.put('q', guardrails());
        await record('p', 1);
        await record('q', 2);
        expect(logIds(await store.readAuditLog('q'))).toEqual([2]);
        expect((await verifyAuditLog(store, 'q')).ok).toBe(true);
      });

      it('leaves out the entry of a change whose mutation is refused', async () => {
        await store.put('p', guardrails());
        await record('p', 1);
        await expect(
          store.update('p', () => ({
            result: null,
            audit: entry('budget_allowed', 2),
            mutation: { release: 'r1' },
          })),
        ).rejects.toBeInstanceOf(Error);
        await record('p', 3);
        expect(logIds(await store.readAuditLog('p'))).toEqual([1, 3]);
      });

      it('leaves out the entry of a change that throws', async () => {
        await store.put('p', guardrails());
        await expect(
          store.update('p', () => {
            throw new Error('no decision');
          }),
        ).rejects.toThrow('no decision');
        expect(await store.readAuditLog('p')).toEqual([]);
      });

      it('keeps a log of 1,000 entries that verifies after 1,000 concurrent updates', async () => {
        const calls = 1000;
        await store.put('p', guardrails({ toolBudget: 0.0001 }));
        await Promise.all(Array.from({ length: calls }, (_, i) => store.update('p', spend(1, i))));
        const report = await verifyAuditLog(store, 'p');
        expect([report.ok, report.size]).toEqual([true, calls]);
      });
    });

    describe('changes with several entries', () => {
      /** A change that records entry `first` as its audit entry, then `more` as its entries. */
      function several(first: number | undefined, ...more: number[]): PlanChange<null> {
        const entries = more.map((i) => entry('step_allowed', i));
        return first === undefined
          ? { result: null, entries }
          : { result: null, audit: entry('step_allowed', first), entries };
      }

      it('records the entries of a change in order, after its audit entry, with consecutive seqs', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, audit: entry('step_allowed', 0) }));
        await store.update('p', () => ({ ...several(1, 2, 3), mutation: { steps: 1 } }));
        const log = await store.readAuditLog('p');
        expect([ids((await stored('p')).audit), log.map((c) => [c.seq, c.entry.details['i']])]).toEqual([
          [0, 1, 2, 3],
          [
            [1, 0],
            [2, 1],
            [3, 2],
            [4, 3],
          ],
        ]);
      });

      it('records the entries of a change that has no audit entry', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => several(undefined, 1, 2));
        expect(logIds(await store.readAuditLog('p'))).toEqual([1, 2]);
      });

      it('keeps a log that verifies after changes with several entries', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => several(1, 2, 3));
        await store.update('p', () => ({ result: null, audit: entry('step_allowed', 4) }));
        await store.update('p', () => ({ ...several(undefined, 5, 6), mutation: { steps: 2 } }));
        const report = await verifyAuditLog(store, 'p');
        expect([report.ok, report.size]).toEqual([true, 6]);
      });

      it('records none of the entries of a change whose mutation is refused', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => several(1));
        await expect(
          store.update('p', () => ({ ...several(2, 3, 4), mutation: { steps: 1, release: 'r1' } })),
        ).rejects.toBeInstanceOf(Error);
        await store.update('p', () => several(5));
        const record = await stored('p');
        expect([
          logIds(await store.readAuditLog('p')),
          ids(record.audit),
          record.guardrails.stepCount,
        ]).toEqual([[1, 5], [1, 5], 0]);
      });

      it('refuses entries that are not audit entries, naming the one, and records nothing', async () => {
        await store.put('p', guardrails());
        const bad = { ...several(1, 2), entries: [entry('step_allowed', 2), { i: 3 } as never] };
        await expect(store.update('p', () => ({ ...bad, mutation: { steps: 1 } }))).rejects.toMatchObject({
          field: 'entries[1]',
        });
        const record = await stored('p');
        expect([await store.readAuditLog('p'), record.audit.size, record.guardrails.stepCount]).toEqual([
          [],
          0,
          0,
        ]);
      });

      it('refuses to record a change with entries and a mutation for an unconfigured plan', async () => {
        await expect(
          store.update('missing', () => ({ ...several(1, 2), mutation: { steps: 1 } })),
        ).rejects.toBeInstanceOf(Error);
        expect(await store.get('missing')).toBeNull();
      });

      it('refuses to record a change with entries alone for an unconfigured plan', async () => {
        await expect(store.update('missing', () => several(undefined, 1))).rejects.toBeInstanceOf(Error);
        expect(await store.get('missing')).toBeNull();
      });

      it('records nothing for a change whose entries are empty', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => several(undefined));
        expect([await store.readAuditLog('p'), (await stored('p')).audit.size]).toEqual([[], 0]);
      });

      it('answers a change whose entries are empty for an unconfigured plan, as one that writes nothing', async () => {
        expect(await store.update('missing', () => ({ result: 7, entries: [] }))).toBe(7);
        expect(await store.get('missing')).toBeNull();
      });
    });

    describe('entries read back', () => {
      // Larger than AuditEntry.create allows, as metadata read with a higher maxDetailsBytes makes one.
      const large = AuditEntry.trusted('step_allowed', T0, Object.freeze({ note: 'x'.repeat(5000) }));

      async function recordLarge(): Promise<void> {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, audit: large }));
      }

      it('reads back an entry with details over 4 KiB as it was written', async () => {
        await recordLarge();
        const fromTrail = (await stored('p')).audit.entries[0]?.toJSON();
        const fromLog = (await store.readAuditLog('p'))[0]?.entry;
        expect([fromTrail, fromLog]).toEqual([large.toJSON(), large.toJSON()]);
      });

      it('keeps a log that verifies with an entry with details over 4 KiB', async () => {
        await recordLarge();
        expect((await verifyAuditLog(store, 'p')).ok).toBe(true);
      });

      const setEntryColumn = options.setEntryColumn;
      if (setEntryColumn !== undefined) {
        /** A plan of three entries whose second was overwritten with `text` in `column`. */
        async function damaged(column: 'event_type' | 'details', text: string): Promise<void> {
          await store.put('p', guardrails());
          for (let i = 1; i <= 3; i++) {
            await store.update('p', () => ({ result: null, audit: entry('step_allowed', i) }));
          }
          await setEntryColumn?.(store, 'p', 2, column, text);
        }

        it('refuses, with STORE_CORRUPT, a plan whose stored details are not JSON', async () => {
          await damaged('details', '{"i": 2');
          await expect(store.get('p')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
        });

        it('refuses, with STORE_CORRUPT, a plan whose stored entry has an unknown event type', async () => {
          await damaged('event_type', 'step_maybe');
          await expect(store.get('p')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
        });

        it('refuses, with STORE_CORRUPT, to read a log holding details that are not a JSON object', async () => {
          await damaged('details', '[2]');
          await expect(store.readAuditLog('p')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
        });

        it('names the plan and the seq of an entry it cannot read back', async () => {
          await damaged('details', '{"i": 2');
          await expect(store.readAuditLog('p')).rejects.toThrow(/audit entry 2 of plan "p"/);
        });

        it('hands a verifier a row whose details are not JSON as a MALFORMED_ENTRY at its seq', async () => {
          await damaged('details', '{"i": 2');
          const report = await verifyAuditLog(store, 'p');
          expect(report.findings.map((f) => [f.code, f.seq])).toEqual([['MALFORMED_ENTRY', 2]]);
        });

        it('hands a verifier a row of an unknown event type as a MALFORMED_ENTRY at its seq', async () => {
          await damaged('event_type', 'step_maybe');
          const report = await verifyAuditLog(store, 'p');
          expect(report.findings.map((f) => [f.code, f.seq])).toEqual([['MALFORMED_ENTRY', 2]]);
        });
      }
    });

    describe('updates made at once', () => {
      const at =
        (i: number): PlanChangeFn<number> =>
        () => ({
          result: i,
          audit: entry('step_allowed', i),
        });

      it('takes them in the order they were made', async () => {
        await store.put('p', guardrails());
        await Promise.all(Array.from({ length: 50 }, (_, i) => store.update('p', at(i))));
        expect(logIds(await store.readAuditLog('p'))).toEqual(Array.from({ length: 50 }, (_, i) => i));
      });

      it('shows each the effects of the ones made before it', async () => {
        await store.put('p', guardrails());
        const seen = await Promise.all(
          Array.from({ length: 5 }, () =>
            store.update('p', (g) => ({ result: g?.stepCount, mutation: { steps: 1 } })),
          ),
        );
        expect(seen).toEqual([0, 1, 2, 3, 4]);
      });

      /** A step with its entry, numbered `i`. */
      const step =
        (i: number): PlanChangeFn<number> =>
        () => ({ result: i, audit: entry('step_allowed', i), mutation: { steps: 1 } });

      /**
       * After entry 0 (so that a store keeping the plan it wrote has it), steps 1 and 3 made at once with
       * `middle` between them: how each settled, the log's entries and the steps counted.
       */
      async function around(middle: PlanChangeFn<unknown>): Promise<[string[], unknown[], number]> {
        await store.update('p', at(0));
        const settled = await Promise.allSettled([
          store.update('p', step(1)),
          store.update('p', middle),
          store.update('p', step(3)),
        ]);
        return [
          settled.map((r) => r.status),
          logIds(await store.readAuditLog('p')),
          (await stored('p')).guardrails.stepCount,
        ];
      }

      it('rejects only the one whose change throws, and records the others', async () => {
        await store.put('p', guardrails());
        const [statuses, log] = await around(() => {
          throw new Error('no decision');
        });
        expect([statuses, log]).toEqual([
          ['fulfilled', 'rejected', 'fulfilled'],
          [0, 1, 3],
        ]);
      });

      it('rejects only the one whose mutation is refused, and records the others', async () => {
        await store.put('p', guardrails());
        const outcome = await around(() => ({
          result: 2,
          audit: entry('step_allowed', 2),
          mutation: { release: 'r1' },
        }));
        expect(outcome).toEqual([['fulfilled', 'rejected', 'fulfilled'], [0, 1, 3], 2]);
      });

      it('records the several entries of one of them between the entries of the others', async () => {
        await store.put('p', guardrails());
        const outcome = await around(() => ({
          result: 2,
          audit: entry('step_allowed', 2),
          entries: [entry('step_allowed', 20), entry('step_allowed', 21)],
          mutation: { steps: 1 },
        }));
        expect(outcome).toEqual([['fulfilled', 'fulfilled', 'fulfilled'], [0, 1, 2, 20, 21, 3], 3]);
      });

      it('rejects only the one with several entries whose mutation is refused, and records the others', async () => {
        await store.put('p', guardrails());
        const outcome = await around(() => ({
          result: 2,
          audit: entry('step_allowed', 2),
          entries: [entry('step_allowed', 20), entry('step_allowed', 21)],
          mutation: { steps: 1, release: 'r1' },
        }));
        expect(outcome).toEqual([['fulfilled', 'rejected', 'fulfilled'], [0, 1, 3], 2]);
      });

      it('rejects only the one whose new approval id is taken, and records the others', async () => {
        await store.put('p', guardrails());
        await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
        const outcome = await around(() => ({
          result: 2,
          audit: entry('step_allowed', 2),
          mutation: { steps: 1 },
          newApproval: approval('a1', 'p', 5),
        }));
        expect(outcome).toEqual([['fulfilled', 'rejected', 'fulfilled'], [0, 1, 3], 2]);
      });
    });

    describe('checkpoints', () => {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      let cps: GuardrailStore;

      beforeEach(async () => {
        cps = await options.newStore({ checkpoints: { every: 3, privateKey } });
        await cps.put('p', guardrails({ toolBudget: 100 }));
      });

      afterEach(async () => {
        await cps.close();
      });

      async function record(n: number, planId = 'p') {
        for (let i = 0; i < n; i++) await cps.update(planId, spend(1, i));
      }

      it('writes none without the option', async () => {
        await store.put('p', guardrails({ toolBudget: 100 }));
        for (let i = 0; i < 4; i++) await store.update('p', spend(1, i));
        expect(await store.readCheckpoints('p')).toEqual([]);
      });

      it('writes a checkpoint after every n-th entry, covering it', async () => {
        await record(7);
        const log = await cps.readAuditLog('p');
        expect((await cps.readCheckpoints('p')).map((c) => [c.size, c.head])).toEqual([
          [3, log[2]?.hash],
          [6, log[5]?.hash],
        ]);
      });

      it('reads checkpoints back oldest first past nine of them', async () => {
        await record(33);
        expect((await cps.readCheckpoints('p')).map((c) => c.size)).toEqual([
          3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33,
        ]);
      });

      it('dates a checkpoint at the time of the entry it covers', async () => {
        await record(3);
        expect((await cps.readCheckpoints('p'))[0]?.ts).toBe(new Date(T0 + 2).toISOString());
      });

      it('signs checkpoints so that the log verifies with the public key', async () => {
        await record(6);
        const report = await verifyAuditLog(cps, 'p', { publicKey });
        expect([report.ok, (await cps.readCheckpoints('p')).every((c) => c.signature !== undefined)]).toEqual(
          [true, true],
        );
      });

      it('writes the checkpoint that falls inside a change with several entries for the entry it covers', async () => {
        await record(1);
        await cps.update('p', () => ({
          result: null,
          audit: entry('step_allowed', 10),
          entries: [entry('step_allowed', 11), entry('step_allowed', 12), entry('step_allowed', 13)],
        }));
        const log = await cps.readAuditLog('p');
        const report = await verifyAuditLog(cps, 'p', { publicKey });
        expect([(await cps.readCheckpoints('p')).map((c) => [c.size, c.head, c.ts]), report.ok]).toEqual([
          [[3, log[2]?.hash, new Date(T0 + 11).toISOString()]],
          true,
        ]);
      });

      it('writes checkpoints for the entries of a trail that is put', async () => {
        const trail = new AuditTrail({ maxEntries: 10 });
        for (let i = 0; i < 4; i++) trail.add(entry('step_allowed', i));
        await cps.put('q', guardrails(), trail);
        expect((await cps.readCheckpoints('q')).map((c) => c.size)).toEqual([3]);
      });

      it('forgets the checkpoints of a deleted plan', async () => {
        await record(3);
        await cps.delete('p');
        expect(await cps.readCheckpoints('p')).toEqual([]);
      });

      it('prunes the log through a checkpoint, keeping a log that verifies from it', async () => {
        await record(7);
        const removed = await cps.pruneAuditLog('p', 3);
        const report = await verifyAuditLog(cps, 'p', { publicKey });
        expect([
          removed,
          (await cps.readAuditLog('p')).map((e) => e.seq),
          report.ok,
          report.prunedThrough,
        ]).toEqual([3, [4, 5, 6, 7], true, 3]);
      });

      it('keeps appending to the chain after a prune', async () => {
        await record(4);
        await cps.pruneAuditLog('p', 3);
        await record(3);
        const report = await verifyAuditLog(cps, 'p', { publicKey });
        expect([report.ok, (await cps.readAuditLog('p')).map((e) => e.seq)]).toEqual([true, [4, 5, 6, 7]]);
      });

      it('refuses to prune through a seq no checkpoint covers, removing nothing', async () => {
        await record(7);
        await expect(cps.pruneAuditLog('p', 4)).rejects.toMatchObject({ field: 'throughSeq' });
        expect(await cps.readAuditLog('p')).toHaveLength(7);
      });

      it('refuses to prune through 0', async () => {
        await expect(cps.pruneAuditLog('p', 0)).rejects.toMatchObject({ field: 'throughSeq' });
      });

      it('refuses checkpoints every 0 entries, naming the field', async () => {
        await expect(
          Promise.resolve().then(() => options.newStore({ checkpoints: { every: 0 } })),
        ).rejects.toMatchObject({
          field: 'checkpoints.every',
        });
      });
    });

    describe('plan documents', () => {
      function doc(planId: string, phase = 'execute', body: PlanDocumentInput['body'] = { step: 1 }) {
        return { planId, phase, body, updatedAt: START };
      }

      it('returns null for a plan with no saved document', async () => {
        expect(await store.getPlanDocument('p')).toBeNull();
      });

      it('returns the document that was saved, at revision 1', async () => {
        await store.savePlanDocument(doc('p', 'execute', { decisions: [{ id: 'a' }] }));
        expect(await store.getPlanDocument('p')).toEqual({
          ...doc('p', 'execute', { decisions: [{ id: 'a' }] }),
          revision: 1,
        });
      });

      it('resolves a save with the document as saved', async () => {
        expect(await store.savePlanDocument(doc('p'))).toEqual({ ...doc('p'), revision: 1 });
      });

      it('counts the revision up with each save', async () => {
        await store.savePlanDocument(doc('p'));
        await store.savePlanDocument(doc('p', 'completed'));
        expect(await store.getPlanDocument('p')).toMatchObject({ phase: 'completed', revision: 2 });
      });

      it('keeps the time of a save in canonical UTC form', async () => {
        await store.savePlanDocument({ ...doc('p'), updatedAt: '2026-11-30T11:00:00+01:00' });
        expect((await store.getPlanDocument('p'))?.updatedAt).toBe(START);
      });

      it('keeps what was saved when the caller changes its object afterwards', async () => {
        const body = { step: 1 };
        await store.savePlanDocument(doc('p', 'execute', body));
        body.step = 2;
        expect((await store.getPlanDocument('p'))?.body).toEqual({ step: 1 });
      });

      it('saves over the expected revision', async () => {
        await store.savePlanDocument(doc('p'));
        await store.savePlanDocument(doc('p', 'completed'), { expectedRevision: 1 });
        expect(await store.getPlanDocument('p')).toMatchObject({ phase: 'completed', revision: 2 });
      });

      it('refuses a save over another revision than expected, changing nothing', async () => {
        await store.savePlanDocument(doc('p'));
        await store.savePlanDocument(doc('p', 'paused'));
        const late = store.savePlanDocument(doc('p', 'completed'), { expectedRevision: 1 });
        await expect(late).rejects.toMatchObject({ code: 'PLAN_DOCUMENT_CONFLICT' });
        expect(await store.getPlanDocument('p')).toMatchObject({ phase: 'paused', revision: 2 });
      });

      it('creates a document expected to be absent', async () => {
        await store.savePlanDocument(doc('p'), { expectedRevision: null });
        expect(await store.getPlanDocument('p')).toMatchObject({ revision: 1 });
      });

      it('refuses to create a document expected to be absent when one is saved', async () => {
        await store.savePlanDocument(doc('p'));
        const second = store.savePlanDocument(doc('p', 'completed'), { expectedRevision: null });
        await expect(second).rejects.toMatchObject({ code: 'PLAN_DOCUMENT_CONFLICT' });
      });

      it('refuses a save over a revision when none is saved', async () => {
        const save = store.savePlanDocument(doc('p'), { expectedRevision: 1 });
        await expect(save).rejects.toMatchObject({ code: 'PLAN_DOCUMENT_CONFLICT' });
        expect(await store.getPlanDocument('p')).toBeNull();
      });

      it('lets exactly one of concurrent saves over one revision through', async () => {
        await store.savePlanDocument(doc('p'));
        const saves = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            store.savePlanDocument(doc('p', `claim-${i}`), { expectedRevision: 1 }),
          ),
        );
        expect(saves.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      });

      it.each([
        ['an empty phase', { phase: '' }, 'document.phase'],
        ['a phase with a control character', { phase: 'a\nb' }, 'document.phase'],
        [
          'a body that is not an object',
          { body: [] as unknown as PlanDocumentInput['body'] },
          'document.body',
        ],
        ['a time that is not ISO-8601', { updatedAt: 'yesterday' }, 'document.updatedAt'],
        ['an empty plan id', { planId: '' }, 'plan_id'],
      ])('refuses %s, naming the field', async (_, change, field) => {
        await expect(store.savePlanDocument({ ...doc('p'), ...change })).rejects.toMatchObject({ field });
        expect(await store.getPlanDocument('p')).toBeNull();
      });

      it('refuses an expected revision that is not an integer >= 1', async () => {
        const save = store.savePlanDocument(doc('p'), { expectedRevision: 0 });
        await expect(save).rejects.toMatchObject({ field: 'options.expectedRevision' });
      });

      it('lists configured plans and plans with a document, in plan id order', async () => {
        await store.put('b', guardrails());
        await store.savePlanDocument(doc('a', 'completed'));
        await store.put('c', guardrails());
        await store.savePlanDocument(doc('c', 'awaiting_confirmation'));
        expect(await store.listPlans()).toEqual([
          { planId: 'a', configured: false, document: { phase: 'completed', updatedAt: START, revision: 1 } },
          { planId: 'b', configured: true, document: null },
          {
            planId: 'c',
            configured: true,
            document: { phase: 'awaiting_confirmation', updatedAt: START, revision: 1 },
          },
        ]);
      });

      it('lists nothing in a new store', async () => {
        expect(await store.listPlans()).toEqual([]);
      });

      it('forgets the document of a deleted plan', async () => {
        await store.put('p', guardrails());
        await store.savePlanDocument(doc('p'));
        await store.delete('p');
        expect([await store.getPlanDocument('p'), await store.listPlans()]).toEqual([null, []]);
      });

      it('reports deleting a plan that has only a document as deleting something', async () => {
        await store.savePlanDocument(doc('p'));
        expect(await store.delete('p')).toBe(true);
      });
    });

    describe('close', () => {
      async function closedStore(): Promise<GuardrailStore> {
        const s = await options.newStore();
        await s.put('p', guardrails());
        await s.close();
        return s;
      }

      it('refuses get after close', async () => {
        await expect((await closedStore()).get('p')).rejects.toBeInstanceOf(Error);
      });

      it('refuses put after close', async () => {
        await expect((await closedStore()).put('p', guardrails())).rejects.toBeInstanceOf(Error);
      });

      it('refuses update after close', async () => {
        const s = await closedStore();
        await expect(s.update('p', () => ({ result: null }))).rejects.toBeInstanceOf(Error);
      });

      it('refuses delete after close', async () => {
        await expect((await closedStore()).delete('p')).rejects.toBeInstanceOf(Error);
      });

      it('refuses getApproval after close', async () => {
        await expect((await closedStore()).getApproval('a1')).rejects.toBeInstanceOf(Error);
      });

      it('refuses listApprovals after close', async () => {
        await expect((await closedStore()).listApprovals()).rejects.toBeInstanceOf(Error);
      });

      it('refuses readAuditLog after close', async () => {
        await expect((await closedStore()).readAuditLog('p')).rejects.toBeInstanceOf(Error);
      });

      it('refuses listPlans after close', async () => {
        await expect((await closedStore()).listPlans()).rejects.toBeInstanceOf(Error);
      });
    });
  });
}
