import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// A framework is an optional peer dependency: only its adapter, loaded through its own subpath export,
// may import it, so `import 'leash'` never needs it installed. The MCP SDK is large: only `leash mcp`,
// loaded when the command runs, imports it.
const OWNERS = [
  {
    dir: 'src/adapters/ai-sdk',
    regex: '^(ai|ai/.*|@ai-sdk/.*)$',
    message: 'only src/adapters/ai-sdk imports the AI SDK',
  },
  {
    dir: 'src/adapters/langchain',
    regex: '^(langchain|langchain/.*|@langchain/.*)$',
    message: 'only src/adapters/langchain imports LangChain',
  },
  {
    dir: 'src/adapters/openai-agents',
    regex: '^@openai/agents',
    message: 'only src/adapters/openai-agents imports the OpenAI Agents SDK',
  },
  { dir: 'src/mcp', regex: '^@modelcontextprotocol/', message: 'only src/mcp imports the MCP SDK' },
];

function restrictedImports() {
  const rule = (owners) => ({
    'no-restricted-imports': [
      'error',
      { patterns: owners.map(({ regex, message }) => ({ regex, message })) },
    ],
  });
  return [
    { files: ['src/**/*.ts'], ignores: OWNERS.map((o) => `${o.dir}/**`), rules: rule(OWNERS) },
    ...OWNERS.map((own) => ({
      files: [`${own.dir}/**/*.ts`],
      rules: rule(OWNERS.filter((o) => o !== own)),
    })),
  ];
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  ...restrictedImports(),
);
