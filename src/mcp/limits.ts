// The bounds of `leash mcp --listen`, apart from the listener so that the CLI names them without loading
// the MCP SDK.

/** Sessions served at once unless `--max-sessions` says otherwise: each may be a process of its own. */
export const DEFAULT_MAX_SESSIONS = 16;

/** Events a session keeps for clients that resume a stream (`Last-Event-ID`); the oldest go first. */
export const SESSION_EVENTS = 1_000;
