// The bounds of `leash mcp --listen`, apart from the listener so that the CLI names them without loading
// the MCP SDK.

/** Sessions served at once unless `--max-sessions` says otherwise: each may be a process of its own. */
export const DEFAULT_MAX_SESSIONS = 16;

/** Events a session keeps for clients that resume a stream (`Last-Event-ID`); the oldest go first. */
export const SESSION_EVENTS = 1_000;

/** What those events may hold at most, in characters of JSON (large results fill it before the count). */
export const SESSION_EVENT_BYTES = 16 * 1024 * 1024;

/**
 * How long a session may have no request and no stream open before it ends, unless `--idle-timeout` says
 * otherwise: a client that went away without its DELETE (the MCP SDK's `close()` sends none) frees its
 * place and its upstream. A client that keeps its event stream open is never idle.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
