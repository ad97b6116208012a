import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailValidationError,
  ManualClock,
  METADATA_KEY,
} from '../../src/index.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const LABELS = { team: 'ml', user: 'ann' };

function newService(): AutonomyGuardrailService {
  return new AutonomyGuardrailService({ clock: new ManualClock(T0) });
}

type Wire = Record<string, Record<string, Record<string, unknown>>>;

describe('AutonomyGuardrailService labels', () => {
  it('configures a plan with its labels', async () => {
    const service = newService();
    await service.configureGuardrails('p', { toolBudget: 1, labels: LABELS });
    expect((await service.getGuardrails('p'))?.labels).toEqual(LABELS);
  });

  it('returns the configured labels from configureGuardrails', async () => {
    const g = await newService().configureGuardrails('p', { labels: LABELS });
    expect(g.labels).toEqual(LABELS);
  });

  it('refuses a bad label, naming it, and configures nothing', async () => {
    const service = newService();
    const error = await service.configureGuardrails('p', { labels: { team: 'a\u0000b' } }).catch((e) => e);
    expect(error).toBeInstanceOf(GuardrailValidationError);
    expect((error as GuardrailValidationError).field).toBe('labels.team');
    expect(await service.getGuardrails('p')).toBeNull();
  });

  it('replaces the labels when the plan is configured again', async () => {
    const service = newService();
    await service.configureGuardrails('p', { labels: LABELS });
    await service.configureGuardrails('p', { labels: { team: 'ops' } });
    expect((await service.getGuardrails('p'))?.labels).toEqual({ team: 'ops' });
  });

  it('drops the labels when the plan is configured again without any', async () => {
    const service = newService();
    await service.configureGuardrails('p', { labels: LABELS });
    await service.configureGuardrails('p', { maxSteps: 3 });
    expect((await service.getGuardrails('p'))?.labels).toEqual({});
  });

  it('keeps the labels of a plan that spends', async () => {
    const service = newService();
    await service.configureGuardrails('p', { toolBudget: 1, labels: LABELS });
    await service.markStarted('p');
    await service.checkToolBudget('p', 0.5);
    expect((await service.getGuardrails('p'))?.labels).toEqual(LABELS);
  });

  it('carries the labels in the metadata', async () => {
    const service = newService();
    await service.configureGuardrails('p', { labels: LABELS });
    const metadata = (await service.toMetadata('p')) as Wire;
    expect(metadata[METADATA_KEY]?.['guardrails']?.['labels']).toEqual(LABELS);
  });

  it('writes no labels key in the metadata of a plan without labels', async () => {
    const service = newService();
    await service.configureGuardrails('p', { maxSteps: 2 });
    const metadata = (await service.toMetadata('p')) as Wire;
    expect(Object.hasOwn(metadata[METADATA_KEY]?.['guardrails'] ?? {}, 'labels')).toBe(false);
  });

  it('reads the labels back from the metadata', async () => {
    const from = newService();
    await from.configureGuardrails('p', { labels: LABELS });
    const to = newService();
    await to.loadFromMetadata('q', JSON.parse(JSON.stringify(await from.toMetadata('p'))));
    expect((await to.getGuardrails('q'))?.labels).toEqual(LABELS);
  });

  it('refuses a bad label in the metadata, naming its path, and keeps the previous state', async () => {
    const service = newService();
    await service.configureGuardrails('p', { labels: LABELS });
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('p'))) as Wire;
    (metadata[METADATA_KEY]?.['guardrails'] as Record<string, unknown>)['labels'] = { team: '' };
    const error = await service.loadFromMetadata('p', metadata).catch((e) => e);
    expect((error as GuardrailValidationError).field).toBe('autonomy_guardrails.guardrails.labels.team');
    expect((await service.getGuardrails('p'))?.labels).toEqual(LABELS);
  });

  it('refuses labels in the metadata that are not an object', async () => {
    const service = newService();
    await service.configureGuardrails('p', {});
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('p'))) as Wire;
    (metadata[METADATA_KEY]?.['guardrails'] as Record<string, unknown>)['labels'] = ['team=ml'];
    const error = await service.loadFromMetadata('p', metadata).catch((e) => e);
    expect((error as GuardrailValidationError).field).toBe('autonomy_guardrails.guardrails.labels');
  });
});
