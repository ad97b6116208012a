import { configDefaults, defineConfig } from 'vitest/config';
import { resolveAiFromAi7 } from './test/ai7/resolve.js';

export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'leash',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/adapters/ai-sdk/v4/**', 'test/conformance/**'],
        },
      },
      {
        // The AI SDK adapter's tests again, on ai 7: it asks for Node 22, so it is installed apart, in
        // test/ai7 (by the global setup, when missing or its lock changed), and `ai` resolves from there
        // only. v4/ holds the tests of ai 7's own models.
        extends: true,
        plugins: [resolveAiFromAi7()],
        test: {
          name: 'ai 7',
          include: ['test/adapters/ai-sdk/**/*.test.ts'],
          globalSetup: ['test/ai7/install.ts'],
        },
      },
      {
        // The MCP conformance suite against server-everything, directly and through leash mcp. It runs on
        // Node 22, so it is installed apart with a Node 22 binary, in test/conformance/suite (by the
        // global setup, when missing or its lock changed).
        extends: true,
        test: {
          name: 'conformance',
          include: ['test/conformance/**/*.test.ts'],
          globalSetup: ['test/conformance/suite/install.ts'],
        },
      },
    ],
  },
});
