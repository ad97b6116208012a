import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // A framework is an optional peer dependency: only its adapter, loaded through its own subpath
    // export, may import it, so `import 'leash'` never needs it installed.
    files: ['src/**/*.ts'],
    ignores: ['src/adapters/ai-sdk/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(ai|ai/.*|@ai-sdk/.*)$', message: 'only src/adapters/ai-sdk imports the AI SDK' },
          ],
        },
      ],
    },
  },
);
