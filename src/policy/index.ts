export {
  approvalTtlMs,
  MAX_YAML_ALIAS_COUNT,
  modelPrices,
  policyBudgets,
  unpricedModels,
  parsePolicy,
  policyToGuardrailsInit,
  strictestGuardrails,
  toolRules,
  validatePolicy,
  type ParsePolicyOptions,
  type ToolRule,
  type ValidatePolicyOptions,
} from './policy.js';
export { POLICY_SCHEMA_ID, policyJsonSchema } from './jsonSchema.js';
export { policyApprovalRules } from './approvals.js';
export { policyNotifyEvents, policyNotifyTargets, type NotifySetup } from './notify.js';
export { policyServiceOptions } from './serviceOptions.js';
export {
  DEFAULT_APPROVAL_TTL_SECONDS,
  MAX_APPROVAL_TTL_SECONDS,
  MAX_TOOL_NAME_LENGTH,
  POLICY_VERSION,
  type Policy,
  type PolicyActorLimits,
  type PolicyApprovalRule,
  type PolicyApprovals,
  type PolicyGuardrails,
  type PolicyMcp,
  type PolicyModelPrice,
  type PolicyNotify,
  type PolicyNotifyTarget,
  type PolicySpendCap,
  type PolicyToolRule,
} from './schema.js';
