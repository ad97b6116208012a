// A plan that wants to spend more than its budget: leash stops it at the limit, keeps the work already
// done, and records every check in the plan's audit trail.
import { AutonomyGuardrailService, PlanExecutor, type Tool } from 'leash';

const service = new AutonomyGuardrailService();
await service.configureGuardrails('research-1', {
  maxSteps: 10,
  toolBudget: 0.05, // dollars
  requiredConfirmations: ['send_email'],
});

const search: Tool = {
  name: 'search',
  description: 'a pretend web search costing two cents a call',
  cost: 0.02,
  run: (input) => `results for ${JSON.stringify(input)}`,
};

const executor = new PlanExecutor({ service, tools: [search] });
const plan = {
  id: 'research-1',
  phase: 'execute' as const,
  decisions: ['guardrails', 'audit trails', 'budgets', 'step limits'].map((q, i) => ({
    id: `search-${i + 1}`,
    tool: 'search',
    input: q,
  })),
  metadata: {},
};

const result = await executor.execute(plan);
console.log(`status: ${result.status}`);
console.log(`completed: ${result.completed.map((c) => c.decisionId).join(', ')}`);
console.log(`stopped by: ${result.violation?.message ?? 'nothing'}`);

const trail = await service.getAuditTrail('research-1');
console.log(
  `audit trail: ${trail?.size} entries, ${trail?.allowedCount} allowed, ${trail?.deniedCount} denied`,
);
for (const entry of trail?.entries ?? []) {
  console.log(
    `  ${entry.toJSON().timestamp}  ${entry.eventType.padEnd(20)} ${JSON.stringify(entry.details)}`,
  );
}

const email = await service.checkConfirmation('research-1', 'Send_Email');
console.log(`send_email needs a person's confirmation: ${!email.allowed}`);
