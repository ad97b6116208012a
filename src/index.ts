export { systemClock, ManualClock, type Clock } from './clock.js';
export { MICROS_PER_UNIT, MAX_AMOUNT, toMicros, fromMicros, type Rounding } from './money.js';
export {
  GuardrailError,
  GuardrailValidationError,
  GuardrailViolationError,
  isGuardrailError,
  isGuardrailValidationError,
  isGuardrailViolationError,
  isStoreOutcomeUnknownError,
  StoreOutcomeUnknownError,
  type GuardrailErrorCode,
} from './errors.js';
export { canonicalJson, type JsonValue, type JsonObject } from './json.js';
export { GuardrailEventType, GuardrailResult, GUARD_NAMES, EVENT_INFO, type GuardName } from './events.js';
export type { GuardCheck } from './GuardCheck.js';
export { normalizeOperation } from './guardrails/operation.js';
export { ActorLimits, type ActorLimitsInit, type ActorLimitsJson } from './guardrails/ActorLimits.js';
export {
  AutonomyGuardrails,
  type GuardrailsInit,
  type GuardrailsJson,
} from './guardrails/AutonomyGuardrails.js';
export {
  EMPTY_LABELS,
  MAX_LABELS,
  MAX_LABEL_VALUE_LENGTH,
  validateLabels,
  type Labels,
} from './guardrails/labels.js';
export { AuditEntry, type AuditEntryInit, type AuditEntryJson } from './audit/AuditEntry.js';
export { AuditTrail, DEFAULT_AUDIT_CAPACITY } from './audit/AuditTrail.js';
export {
  AutonomyGuardrailService,
  type AutonomyGuardrailServiceOptions,
  type ConfirmationAsk,
  type NewToken,
  type PrincipalInit,
  type TokenOptions,
  type ToolCallBegin,
  type ToolCallBegun,
  type ToolCallOpen,
  type ToolCallOpened,
} from './service/AutonomyGuardrailService.js';
export {
  DEFAULT_METADATA_LIMITS,
  METADATA_KEY,
  SCHEMA_VERSION,
  type GuardrailsMetadata,
  type MetadataLimits,
} from './service/metadata.js';
export { MAX_PLAN_ID_LENGTH } from './ids.js';
export type {
  AppliedCap,
  Approval,
  ApprovalRule,
  ApprovalStatus,
  ApprovalVote,
  CapView,
  CapWindowRecord,
  CapWrite,
  DeciderIdentity,
  GuardrailStore,
  Notification,
  NotificationClaim,
  NotificationFilter,
  NotificationInput,
  NotificationOutcome,
  NotificationStatus,
  PersonalToken,
  Principal,
  UpdateOptions,
  PlanChange,
  PlanChangeFn,
  PlanDocument,
  PlanDocumentInput,
  PlanListing,
  PlanMutation,
  PlanRecord,
} from './store/GuardrailStore.js';
export type { CheckpointOptions } from './store/checkpoints.js';
export { MemoryStore } from './store/memory/MemoryStore.js';
export { PLAN_PHASES, type Decision, type Plan, type PlanPhase } from './executor/Plan.js';
export {
  PlanExecutor,
  type DecisionFailure,
  type ExecutionResult,
  type ExecutionStatus,
  type ExecutorEvents,
  type PlanExecutorOptions,
  type RunOptions,
  type Sleep,
  type Timers,
} from './executor/PlanExecutor.js';
export { EXECUTION_KEY, type CompletedDecision, type ExecutionState, type Paused } from './executor/state.js';
export {
  NonRetryableError,
  isRetryable,
  toolResult,
  isToolResult,
  type Tool,
  type ToolContext,
  type ToolResult,
  type ToolRule,
} from './executor/tools.js';
export {
  RunGuard,
  type AgentToolRule,
  type Denied,
  type OpenedModelCall,
  type RunGuardOptions,
  type ToolCallStart,
  type ToolCallContext,
  type ToolCallDone,
  type ToolCallOutcome,
  type ToolCallRequest,
} from './agent/RunGuard.js';
export type { RetryOptions } from './agent/retries.js';
export {
  ModelCallHandle,
  type ModelCallContext,
  type ModelCallDone,
  type ModelCallRequest,
  type ModelCallSettled,
  type ModelCallStart,
  type UnpricedModels,
} from './agent/modelCalls.js';
export {
  priceTable,
  type ModelPrice,
  type ModelPrices,
  type ModelRates,
  type TokenEstimate,
  type TokenUsage,
} from './agent/prices.js';
export { BudgetReservation } from './service/BudgetReservation.js';
export {
  DEFAULT_RESERVATION_TTL_MS,
  type ConfirmationRequest,
  type GrantUse,
} from './service/AutonomyGuardrailService.js';
export type { Decision as ApprovalDecision } from './service/approvals.js';
export {
  approvalRules,
  DEFAULT_APPROVAL_RULE,
  mayDecide,
  ruleFor,
  voteProblem,
  type ApprovalRuleInit,
  type ApprovalRules,
  type ConfiguredApprovalRule,
  type VoteContext,
  type VoteProblem,
} from './identity/rules.js';
export {
  alertPayload,
  APPROVAL_EVENTS,
  approvalPayload,
  BUDGET_ALERT_EVENT,
  type ApprovalEvent,
  type NotifyOptions,
  type NotifyTarget,
} from './service/notifications.js';
export * from './policy/index.js';
export { SqliteStore, SQLITE_SCHEMA_VERSION, type SqliteStoreOptions } from './store/sqlite/SqliteStore.js';
export {
  GENESIS,
  chainEntry,
  createCheckpoint,
  entryHash,
  exportCheckpoints,
  isHashHex,
  parseCheckpoints,
  signCheckpoint,
  verifyCheckpoint,
  type ChainedEntry,
  type Checkpoint,
  type MalformedEntry,
} from './audit/chain.js';
export {
  DEFAULT_MAX_FINDINGS,
  verifyAuditLog,
  type AuditLogSource,
  type Finding,
  type FindingCode,
  type LogEntry,
  type VerifyOptions,
  type VerifyReport,
} from './audit/verify.js';
export {
  auditBundle,
  BUNDLE_FILES,
  BUNDLE_FORMAT,
  BUNDLE_FORMAT_VERSION,
  entriesSince,
  entryLine,
  keyFingerprint,
  type AuditBundle,
  type AuditBundleOptions,
  type BundleManifest,
  type BundlePlan,
  type PlanLog,
} from './audit/export/bundle.js';
export {
  OCSF_ACTIVITY,
  OCSF_VERSION,
  ocsfEvent,
  type OcsfActivityId,
  type OcsfApiActivity,
} from './audit/export/ocsf.js';
export { VERIFY_MJS } from './audit/export/verifier.js';
export {
  PostgresStore,
  POSTGRES_SCHEMA_VERSION,
  type PostgresStoreOptions,
} from './store/postgres/PostgresStore.js';
export type { CapHold, CapRef, CapWindowState } from './guardrails/capLedger.js';
export { holdIn, settleIn, spendIn, sweepWindow, emptyWindow } from './guardrails/capLedger.js';
export type { BudgetAlert } from './service/caps.js';
export {
  ANY_LABEL_VALUE,
  capScope,
  scopeText,
  spendCap,
  spendCapFromJson,
  spendCaps,
  spendCapToJson,
  type SpendCap,
  type SpendCapInit,
  type SpendCapJson,
} from './guardrails/caps.js';
export { capWindowAt, CAP_WINDOWS, type CapWindowKind, type CapWindowSpan } from './guardrails/windows.js';
export { NOTIFY_EVENTS, type NotifyEvent } from './notify/events.js';
export { WebhookSecret, type WebhookHeaders } from './notify/standardWebhooks.js';
export { slackMessage, type SlackOptions } from './notify/slack.js';
export type { DeliveryTarget, DeliveryTargetKind } from './notify/targets.js';
export {
  NotificationDispatcher,
  type DeliveryReport,
  type NotificationDispatcherOptions,
} from './notify/dispatcher.js';
export { Telemetry, type TelemetryOptions } from './telemetry/Telemetry.js';
export type {
  OtelAttributes,
  OtelAttributeValue,
  OtelCounter,
  OtelHistogram,
  OtelInstrumentOptions,
  OtelMeter,
  OtelObservableGauge,
  OtelObservableResult,
  OtelSpan,
  OtelSpanContext,
  OtelTracer,
} from './telemetry/otel.js';
