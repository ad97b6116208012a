// The MCP conformance suite's server scenarios against server-everything over Streamable HTTP, directly:
// what it passes there is what leash in front of it must pass too (listen.test.ts). Many scenarios call
// the suite's own test fixtures (tools, prompts and resources named test_*), which server-everything has
// not: those fail directly, and are asked of no one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingHttp, type RunningServer } from '../support/everything.js';
import { notPassedOf, passedOf, serverScenarios, type Outcome } from './run.js';

/** Scenarios server-everything passes whatever else it implements: the protocol's core. */
const CORE = ['server-initialize', 'ping', 'tools-list', 'resources-list', 'prompts-list'];

describe('the conformance suite against server-everything', () => {
  let server: RunningServer;
  let outcomes: Map<string, Outcome>;

  beforeAll(async () => {
    server = await startEverythingHttp();
    outcomes = await serverScenarios(server.url);
  }, 120_000);

  afterAll(() => server?.stop());

  it('passes the core scenarios, and at least ten of the active ones', () => {
    expect(notPassedOf(CORE, outcomes)).toEqual({});
    expect(passedOf(outcomes).length).toBeGreaterThanOrEqual(10);
  });

  it('fails a scenario whose fixture server-everything has not, naming the check and why', () => {
    expect(outcomes.get('prompts-get-simple')).toEqual({
      passed: false,
      problems: [expect.stringMatching(/\(FAILURE\): .*Prompt test_simple_prompt not found/)],
    });
  });
});
