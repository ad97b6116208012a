import { describe, expect, it } from 'vitest';
import { AutonomyGuardrails, EMPTY_LABELS } from '../../src/index.js';
import { applyMutation } from '../../src/guardrails/mutation.js';
import { thrown } from '../support/thrown.js';

const START = '2026-11-30T10:00:00.000Z';
const LABELS = { user: 'ann', team: 'ml' };

describe('AutonomyGuardrails labels', () => {
  it('has no labels by default', () => {
    expect(AutonomyGuardrails.create().labels).toBe(EMPTY_LABELS);
  });

  it('keeps the labels it is created with, names sorted', () => {
    const g = AutonomyGuardrails.create({ maxSteps: 3, labels: LABELS });
    expect(Object.entries(g.labels)).toEqual([
      ['team', 'ml'],
      ['user', 'ann'],
    ]);
  });

  it('holds labels that cannot be changed', () => {
    const g = AutonomyGuardrails.create({ labels: LABELS });
    expect(Object.isFrozen(g.labels)).toBe(true);
  });

  it('refuses a bad label at create, naming it', () => {
    const e = thrown(() => AutonomyGuardrails.create({ labels: { team: '' } }));
    expect(e.field).toBe('labels.team');
  });

  it('keeps its labels in a clone', () => {
    expect(AutonomyGuardrails.create({ labels: LABELS }).clone().labels).toEqual(LABELS);
  });

  it('keeps its labels when its start time is set', () => {
    expect(AutonomyGuardrails.create({ labels: LABELS }).withStartTime(START).labels).toEqual(LABELS);
  });

  it('keeps its labels through a mutation that starts it, spends and counts a tool call', () => {
    const g = applyMutation(AutonomyGuardrails.create({ labels: LABELS }), {
      startTime: START,
      steps: 1,
      spendMicros: 5,
      toolCall: 'search',
    });
    expect(g.labels).toEqual(LABELS);
  });

  it('writes labels in its wire form, names sorted', () => {
    const json = AutonomyGuardrails.create({ labels: LABELS }).toJSON();
    expect(JSON.stringify(json.labels)).toBe('{"team":"ml","user":"ann"}');
  });

  it('writes no labels key when it has none, so its wire form is as before', () => {
    expect(Object.keys(AutonomyGuardrails.create({ labels: {} }).toJSON())).toEqual([
      'max_steps',
      'tool_budget',
      'required_confirmations',
      'max_wall_clock_seconds',
      'start_time',
      'actor_limits',
      'step_count',
      'budget_spent',
    ]);
  });

  it('returns a wire labels object the caller may change without effect', () => {
    const g = AutonomyGuardrails.create({ labels: LABELS });
    const json = g.toJSON();
    (json.labels as Record<string, string>)['team'] = 'ops';
    expect(g.labels['team']).toBe('ml');
  });

  it('reads its labels back from the wire form', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 1, labels: LABELS });
    expect(AutonomyGuardrails.fromJSON(JSON.parse(JSON.stringify(g))).labels).toEqual(LABELS);
  });

  it('reads a wire form without labels as no labels', () => {
    expect(AutonomyGuardrails.fromJSON(AutonomyGuardrails.create().toJSON()).labels).toBe(EMPTY_LABELS);
  });

  it('refuses a bad label in the wire form, naming its path', () => {
    const json = { ...AutonomyGuardrails.create().toJSON(), labels: { Team: 'ml' } };
    expect(thrown(() => AutonomyGuardrails.fromJSON(json)).field).toBe('labels.Team');
  });
});
