/**
 * leash for the Vercel AI SDK (`ai` 6 and 7): guarded tools, a metered model, a stop condition, and the map
 * from the SDK's tool approvals to leash's. `ai` is an optional peer dependency.
 */
export { guardTools, isLeashDenial, type GuardToolsOptions, type LeashDenial } from './tools.js';
export { guardModel, promptTokens, type GuardedLanguageModel, type GuardModelOptions } from './model.js';
export { guardStop } from './stop.js';
export { approvalOf, approvalResponses } from './approvals.js';
export type { GuardOption } from '../../agent/guardOption.js';
