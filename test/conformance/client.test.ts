// The MCP conformance suite's client scenarios that apply to a proxy, played by the MCP SDK's Client
// (client.ts) directly and through `leash mcp` over stdio, its upstream the suite's test server: what the
// client passes directly, it must pass through leash too.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tsxArgs } from '../support/leashBin.js';
import { clientScenario, clientScenarioNames, notPassedOf, passedOf, type Outcome } from './run.js';

/**
 * The client scenarios a proxy takes part in: its upstream client does the handshake, the calls, the
 * SSE resumption, and relays the server's requests (elicitation) to the client.
 */
const PROXIED = ['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry'];
/** The OAuth scenarios: `leash mcp --upstream-url` does no OAuth with its upstream, so none applies. */
const OAUTH = /^auth\//;

/** `node --import tsx client.ts`, as the suite runs it (Node 20, the project's own). */
const CLIENT = [process.execPath, ...tsxArgs(fileURLToPath(new URL('client.ts', import.meta.url)))];
/** Long enough for leash to start from its sources on a loaded machine. */
const CLIENT_TIMEOUT_MS = 30_000;

describe('the conformance suite’s client scenarios, directly and through leash mcp', () => {
  let dir: string;
  const direct = new Map<string, Outcome>();
  const throughLeash = new Map<string, Outcome>();

  // One after the other: sse-retry times the client's reconnection, which load would delay.
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leash-conformance-client-'));
    for (const scenario of PROXIED) {
      direct.set(scenario, await clientScenario(scenario, CLIENT, {}, CLIENT_TIMEOUT_MS));
      const db = join(dir, `${scenario}.db`);
      throughLeash.set(
        scenario,
        await clientScenario(scenario, CLIENT, { LEASH_CONFORMANCE_DB: db }, CLIENT_TIMEOUT_MS),
      );
    }
  }, 180_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists no client scenario besides the ones that apply to a proxy and the OAuth ones', async () => {
    const names = await clientScenarioNames();
    expect(names.filter((name) => !OAUTH.test(name))).toEqual(PROXIED);
  });

  it('passes directly every scenario that applies to a proxy (the harness works)', () => {
    expect(notPassedOf(PROXIED, direct)).toEqual({});
  });

  it('passes through leash every scenario it passes directly', () => {
    expect(notPassedOf(passedOf(direct), throughLeash)).toEqual({});
  });
});
