// The output cap leash/langchain sets aside for a model call reaches the model, on createAgent's loop.
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { leashMiddleware } from '../../../src/adapters/langchain/index.js';
import { guarded, LOCAL_STORES } from '../../agent/support.js';

/** A chat model that keeps its output cap in `maxTokens`, as the providers' models do, and records it. */
class CappedModel extends BaseChatModel {
  maxTokens: number | undefined;
  readonly seen: (number | undefined)[];

  constructor(maxTokens?: number) {
    super({});
    this.maxTokens = maxTokens;
    this.seen = [];
  }

  _llmType(): string {
    return 'capped';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(): Promise<ChatResult> {
    this.seen.push(this.maxTokens);
    const message = new AIMessage({ content: 'done' });
    Object.assign(message, { usage_metadata: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } });
    return { generations: [{ text: 'done', message }] };
  }
}

const PRICED = { models: { capped: { input: 1, output: 1 } } };
const go = { messages: [{ role: 'user', content: 'go' }] };

describe.each(LOCAL_STORES)('leashMiddleware output caps on %s', (_name, makeStore) => {
  it('calls a model that set no cap with the cap it set aside for, leaving the model as it was', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = new CappedModel();
    const middleware = [leashMiddleware({ guard, modelId: 'capped', maxOutputTokens: 100 })];

    await createAgent({ model, tools: [], middleware }).invoke(go);

    expect([model.seen, model.maxTokens]).toEqual([[100], undefined]);
  });

  it("sets aside a model's own cap, and calls it with that cap", async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = new CappedModel(30);
    const middleware = [leashMiddleware({ guard, modelId: 'capped', maxOutputTokens: 100 })];

    await createAgent({ model, tools: [], middleware }).invoke(go);

    expect(model.seen).toEqual([30]);
    const reserved = (await service.getAuditTrail('plan'))?.entries.find(
      (e) => e.eventType === 'budget_reserved',
    );
    // The prompt's few tokens and 30 output tokens, at 0.000001 each: less than the guard's 100 alone.
    expect(reserved?.details['amount']).toBeLessThan(0.0001);
  });
});
