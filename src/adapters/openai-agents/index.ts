// leash/openai-agents: the OpenAI Agents SDK's tools, models and paused runs on the framework-neutral run guard.
export { applyLeashDecisions, guardedTool } from './tools.js';
export { leashEnded } from './ended.js';
export { guardModel, guardModelProvider, type GuardModelOptions } from './model.js';
export { RUN_STATE_FORMAT, resumeRunState, saveRunState } from './runState.js';
