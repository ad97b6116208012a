// leash/langchain: a createAgent middleware on the framework-neutral run guard.
export { leashMiddleware, type LeashInterrupt, type LeashMiddlewareOptions } from './middleware.js';
