// leash/openai-agents: the OpenAI Agents SDK's function tools on the framework-neutral run guard.
export { applyLeashDecisions, guardedTool } from './tools.js';
