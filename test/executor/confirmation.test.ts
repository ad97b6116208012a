import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailError,
  PlanExecutor,
  type Decision,
  type Plan,
  type Tool,
} from '../../src/index.js';
import {
  detailsOf,
  echo,
  eventsOf,
  guardrailsOf,
  harness,
  planOf,
  progressOf,
  rejection,
  T0,
  tool,
  type HarnessOptions,
} from '../support/executor.js';

const APPROVER = { by: 'alice', reason: 'change window' };

/** A plan of d1 (echo), d2 (deploy, needing confirmation) and d3 (echo), paused at d2. */
async function pausedAtDeploy(options: HarnessOptions = {}, d2: Partial<Decision> = {}) {
  const deploy = tool('deploy');
  const h = await harness([echo, deploy], { guardrails: { requiredConfirmations: ['deploy'] }, ...options });
  const plan = planOf([
    { id: 'd1', tool: 'echo', input: 1 },
    { id: 'd2', tool: 'deploy', input: { env: 'prod' }, ...d2 },
    { id: 'd3', tool: 'echo', input: 3 },
  ]);
  const result = await h.executor.execute(plan);
  if (!result.approval) throw new Error('the plan should be awaiting confirmation');
  return { ...h, deploy, plan, result, approval: result.approval };
}

/** A plan as a caller would keep it between runs: a copy through JSON. */
function stored(plan: Plan): Plan {
  return JSON.parse(JSON.stringify(plan)) as Plan;
}

describe('pausing for a confirmation', () => {
  it('returns awaiting_confirmation with a pending approval for the decision', async () => {
    const { result } = await pausedAtDeploy();
    expect(result.status).toBe('awaiting_confirmation');
    expect(result.approval).toMatchObject({
      planId: 'plan',
      decisionId: 'd2',
      operation: 'deploy',
      status: 'pending',
    });
  });

  it('opens the approval in the store', async () => {
    const { service, approval } = await pausedAtDeploy();
    expect(await service.listApprovals({ status: 'pending' })).toEqual([approval]);
  });

  it('audits confirmation_required with the approval it opened', async () => {
    const { service, approval } = await pausedAtDeploy();
    expect((await eventsOf(service)).at(-1)).toBe('confirmation_required');
    expect((await detailsOf(service, 'confirmation_required'))[0]).toMatchObject({
      operation: 'deploy',
      decision_id: 'd2',
      approval_id: approval.id,
    });
  });

  it('puts the plan in phase awaiting_confirmation', async () => {
    const { plan } = await pausedAtDeploy();
    expect(plan.phase).toBe('awaiting_confirmation');
  });

  it('saves where it paused under leash_execution', async () => {
    const { plan, approval } = await pausedAtDeploy();
    expect(progressOf(plan)).toMatchObject({
      next: 1,
      paused: { decision_id: 'd2', approval_id: approval.id },
    });
  });

  it('saves the guardrails under autonomy_guardrails', async () => {
    const { plan } = await pausedAtDeploy();
    expect(plan.metadata['autonomy_guardrails']).toMatchObject({
      schema_version: 1,
      guardrails: { step_count: 2, required_confirmations: ['deploy'] },
    });
  });

  it('keeps the work done before the pause', async () => {
    const { result } = await pausedAtDeploy();
    expect(result.completed).toEqual([{ decisionId: 'd1', output: 1, cost: 0, attempts: 1 }]);
  });

  it('does not run the decision awaiting confirmation', async () => {
    const { deploy } = await pausedAtDeploy();
    expect(deploy.calls).toEqual([]);
  });

  it('sets the approval to expire after approvalTtlMs', async () => {
    const { approval } = await pausedAtDeploy({ approvalTtlMs: 90_000 });
    expect(approval.expiresAt).toBe(new Date(T0 + 90_000).toISOString());
  });

  it('refuses execute() of a plan awaiting confirmation', async () => {
    const { executor, plan } = await pausedAtDeploy();
    expect((await rejection(executor.execute(plan))).field).toBe('plan.phase');
  });
});

describe('resuming after an approval', () => {
  it('continues at the paused decision and runs the rest of the plan', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const result = await executor.resume(plan);
    expect(result.status).toBe('completed');
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1', 'd2', 'd3']);
    expect(deploy.calls).toEqual([{ env: 'prod' }]);
    expect(plan.phase).toBe('completed');
  });

  it('does not count the paused decision’s step twice', async () => {
    const { executor, service, plan, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    await executor.resume(plan);
    expect((await guardrailsOf(service)).stepCount).toBe(3);
  });

  it('records who approved and why', async () => {
    const { service, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    expect(await detailsOf(service, 'confirmation_approved')).toEqual([
      {
        approval_id: approval.id,
        decision_id: 'd2',
        operation: 'deploy',
        by: 'alice',
        reason: 'change window',
      },
    ]);
  });

  it('uses the grant when the decision starts, before its budget is reserved', async () => {
    const { executor, service, plan, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const before = (await eventsOf(service)).length;
    await executor.resume(plan);
    expect((await eventsOf(service)).slice(before, before + 4)).toEqual([
      'wall_clock_allowed',
      'confirmation_grant_used',
      'budget_reserved',
      'budget_committed',
    ]);
  });

  it('marks the grant used, so it cannot be used again', async () => {
    const { executor, service, plan, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    await executor.resume(plan);
    expect((await service.getApproval(approval.id))?.status).toBe('used');
  });

  it('resumes from the plan as stored, in a new executor and service on the same store', async () => {
    const first = await pausedAtDeploy();
    const kept = stored(first.plan);
    const service = new AutonomyGuardrailService({ store: first.store, clock: first.clock });
    await service.approve(first.approval.id, APPROVER);
    const executor = new PlanExecutor({ service, tools: [echo, first.deploy] });
    const result = await executor.resume(kept);
    expect(result.status).toBe('completed');
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1', 'd2', 'd3']);
  });

  it('keeps waiting on the same approval when resumed before anyone decided', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    const result = await executor.resume(plan);
    expect(result.status).toBe('awaiting_confirmation');
    expect(result.approval?.id).toBe(approval.id);
    expect(await service.listApprovals()).toHaveLength(1);
    expect(deploy.calls).toEqual([]);
  });

  it('asks one approval for all the operations of a decision that need a person', async () => {
    const deploy = tool('deploy');
    const { executor, service } = await harness([deploy], {
      guardrails: { requiredConfirmations: ['deploy', 'notify'] },
    });
    const plan = planOf([{ id: 'd1', tool: 'deploy', operation: 'notify' }]);
    const first = await executor.execute(plan);
    expect(first.approval?.operation).toBe('deploy,notify');
    await service.approve(first.approval?.id ?? '', APPROVER);
    expect((await executor.resume(plan)).status).toBe('completed');
    expect(deploy.calls).toHaveLength(1);
  });
});

describe('a grant that cannot be used', () => {
  it('asks for a new approval when the input changed after the approval', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const changed: Plan = {
      ...plan,
      decisions: plan.decisions.map((d) => (d.id === 'd2' ? { ...d, input: { env: 'all' } } : d)),
    };
    const result = await executor.resume(changed);
    expect(result.status).toBe('awaiting_confirmation');
    expect(result.approval?.id).not.toBe(approval.id);
    expect(deploy.calls).toEqual([]);
  });

  it('audits the refused grant before the new request', async () => {
    const { executor, service, plan, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const changed: Plan = {
      ...plan,
      decisions: plan.decisions.map((d) => (d.id === 'd2' ? { ...d, input: { env: 'all' } } : d)),
    };
    await executor.resume(changed);
    expect((await eventsOf(service)).slice(-2)).toEqual([
      'confirmation_grant_refused',
      'confirmation_required',
    ]);
    expect((await detailsOf(service, 'confirmation_grant_refused'))[0]?.['reason']).toMatch(/input changed/);
  });

  it('leaves an approval refused for changed input unused', async () => {
    const { executor, service, plan, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    await executor.resume({ ...plan, decisions: plan.decisions.map((d) => ({ ...d, input: 'other' })) });
    expect((await service.getApproval(approval.id))?.status).toBe('approved');
  });

  it('asks for a new approval when the grant expired before it was used', async () => {
    const { executor, service, clock, plan, approval, deploy } = await pausedAtDeploy({
      approvalTtlMs: 60_000,
    });
    await service.approve(approval.id, APPROVER);
    clock.advance(60_001);
    const result = await executor.resume(plan);
    expect(result.status).toBe('awaiting_confirmation');
    expect(result.approval?.id).not.toBe(approval.id);
    expect((await detailsOf(service, 'confirmation_grant_refused'))[0]?.['reason']).toMatch(/expired/);
    expect(deploy.calls).toEqual([]);
  });

  it('asks for a new approval when nobody decided before the request expired', async () => {
    const { executor, clock, plan, approval } = await pausedAtDeploy({ approvalTtlMs: 60_000 });
    clock.advance(60_001);
    const result = await executor.resume(plan);
    expect(result.status).toBe('awaiting_confirmation');
    expect(result.approval?.id).not.toBe(approval.id);
  });

  it('can still use a grant at the instant it expires', async () => {
    const { executor, service, clock, plan, approval } = await pausedAtDeploy({ approvalTtlMs: 60_000 });
    await service.approve(approval.id, APPROVER);
    clock.advance(60_000);
    expect((await executor.resume(plan)).status).toBe('completed');
  });

  it('refuses to approve a request that expired', async () => {
    const { service, clock, approval } = await pausedAtDeploy({ approvalTtlMs: 60_000 });
    clock.advance(60_001);
    await expect(service.approve(approval.id, APPROVER)).rejects.toMatchObject({ code: 'APPROVAL_EXPIRED' });
  });

  it('refuses a grant used already and asks for a new approval', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const beforeResume = stored(plan);
    await executor.resume(plan);
    const replay = await executor.resume(beforeResume);
    expect(replay.status).toBe('awaiting_confirmation');
    expect(replay.approval?.id).not.toBe(approval.id);
    expect((await detailsOf(service, 'confirmation_grant_refused'))[0]?.['reason']).toMatch(/used already/);
    expect(deploy.calls).toHaveLength(1);
  });

  it('refuses a grant given for another decision', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const paused = { decision_id: 'd3', approval_id: approval.id };
    const elsewhere: Plan = {
      ...plan,
      decisions: [...plan.decisions.slice(0, 1), { id: 'd3', tool: 'deploy', input: { env: 'prod' } }],
      metadata: { ...plan.metadata, leash_execution: { ...progressOf(plan), next: 1, paused } },
    };
    const result = await executor.resume(elsewhere);
    expect(result.approval).toMatchObject({ decisionId: 'd3', status: 'pending' });
    expect((await detailsOf(service, 'confirmation_grant_refused'))[0]?.['reason']).toMatch(/decision "d2"/);
    expect(deploy.calls).toEqual([]);
  });

  it('refuses a grant given for another plan', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    await service.configureGuardrails('copy', { requiredConfirmations: ['deploy'] });
    const result = await executor.resume({ ...stored(plan), id: 'copy' });
    expect(result.approval).toMatchObject({ planId: 'copy', status: 'pending' });
    expect(deploy.calls).toEqual([]);
    expect((await service.getApproval(approval.id))?.status).toBe('approved');
  });

  it('refuses to approve an approval twice', async () => {
    const { service, approval } = await pausedAtDeploy();
    await service.approve(approval.id, APPROVER);
    const second = service.approve(approval.id, APPROVER);
    await expect(second).rejects.toBeInstanceOf(GuardrailError);
    await expect(second).rejects.toMatchObject({ code: 'APPROVAL_NOT_PENDING' });
  });
});

describe('a denied confirmation', () => {
  const DENIAL = { by: 'bob', reason: 'freeze in effect' };

  it('ends the plan failed with the denial as the violation', async () => {
    const { executor, service, plan, approval } = await pausedAtDeploy();
    await service.deny(approval.id, DENIAL);
    const result = await executor.resume(plan);
    expect(result.status).toBe('failed');
    expect(result.violation?.check.eventType).toBe('confirmation_denied');
    expect(result.violation?.message).toMatch(/bob.*freeze in effect/);
    expect(plan.phase).toBe('failed');
  });

  it('does not run the denied decision or the ones after it', async () => {
    const { executor, service, plan, approval, deploy } = await pausedAtDeploy();
    await service.deny(approval.id, DENIAL);
    const result = await executor.resume(plan);
    expect(deploy.calls).toEqual([]);
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1']);
  });

  it('records who denied and why', async () => {
    const { service, approval } = await pausedAtDeploy();
    await service.deny(approval.id, DENIAL);
    expect(await detailsOf(service, 'confirmation_denied')).toEqual([
      {
        approval_id: approval.id,
        decision_id: 'd2',
        operation: 'deploy',
        by: 'bob',
        reason: 'freeze in effect',
      },
    ]);
  });

  it('requires a reason to deny', async () => {
    const { service, approval } = await pausedAtDeploy();
    expect((await rejection(service.deny(approval.id, { by: 'bob' }))).field).toBe('reason');
  });
});

describe('confirmations without a person to ask', () => {
  it('fails closed when the plan has no guardrails and unconfigured plans are denied', async () => {
    const deploy: Tool = tool('deploy');
    const { executor } = await harness([deploy], { guardrails: null, unconfiguredPlans: 'deny' });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'deploy' }]));
    expect(result.status).toBe('failed');
    expect(result.approval).toBeUndefined();
  });
});
