import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      { extends: true, test: { name: 'leash', include: ['test/**/*.test.ts'] } },
      {
        // The AI SDK adapter's tests again, on ai 7 (the devDependency `ai7`): the adapter and the tests
        // import `ai`, which this project resolves to it.
        extends: true,
        resolve: {
          alias: [
            { find: /^ai$/, replacement: 'ai7' },
            { find: /^ai\/test$/, replacement: 'ai7/test' },
          ],
        },
        test: { name: 'ai 7', include: ['test/adapters/ai-sdk/**/*.test.ts'] },
      },
    ],
  },
});
