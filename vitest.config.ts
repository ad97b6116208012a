import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: { name: 'leash', include: ['test/**/*.test.ts'], exclude: ['test/adapters/ai-sdk/v4/**'] },
      },
      {
        // The AI SDK adapter's tests again, on ai 7 (the devDependency `ai7`): the adapter and the tests
        // import `ai`, which this project resolves to it; v4/ holds the tests of ai 7's own models.
        extends: true,
        resolve: { alias: [{ find: /^ai(\/.*)?$/, replacement: 'ai7$1' }] },
        test: { name: 'ai 7', include: ['test/adapters/ai-sdk/**/*.test.ts'] },
      },
    ],
  },
});
