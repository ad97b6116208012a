import { describe, expect, it } from 'vitest';
import { parsePlanFile, planFileGuardrails } from '../../src/runner/planFile.js';
import { thrown } from '../support/thrown.js';

/** A plan file with one echo and `labels` written as YAML flow mapping text. */
function withLabels(labels: string): string {
  return `version: 1\nlabels: ${labels}\ndecisions:\n  - { id: a, tool: echo }\n`;
}

function refusal(text: string): { field: string | undefined; message: string } {
  const e = thrown(() => parsePlanFile(text, { source: 'train.plan.yaml' }));
  return { field: e.field, message: e.message };
}

describe('plan file labels', () => {
  it('reads a top-level labels map', () => {
    expect(parsePlanFile(withLabels('{ team: ml, user: ann }')).labels).toEqual({ team: 'ml', user: 'ann' });
  });

  it('leaves labels absent when the file has none', () => {
    const file = parsePlanFile('version: 1\ndecisions:\n  - { id: a, tool: echo }\n');
    expect(Object.hasOwn(file, 'labels')).toBe(false);
  });

  it('gives its labels to the guardrails init', () => {
    expect(planFileGuardrails(parsePlanFile(withLabels('{ team: ml }')))).toEqual({ labels: { team: 'ml' } });
  });

  it('refuses an upper-case label name, naming the labels of the file', () => {
    expect(refusal(withLabels('{ Team: ml }'))).toEqual({
      field: 'labels',
      message:
        'train.plan.yaml: labels key must be a lower-case identifier (a letter, then letters, digits or _, at most 63 characters), got "Team"',
    });
  });

  it('refuses an empty value, naming the label', () => {
    expect(refusal(withLabels('{ team: "" }')).field).toBe('labels.team');
  });

  it('refuses a value that is not a string', () => {
    expect(refusal(withLabels('{ team: 7 }')).message).toMatch(
      /^train\.plan\.yaml: labels\.team must be .*, got 7$/,
    );
  });

  it('refuses a value of 201 characters', () => {
    expect(refusal(withLabels(`{ team: ${'x'.repeat(201)} }`)).field).toBe('labels.team');
  });

  it('refuses a value holding a lone surrogate', () => {
    expect(refusal(withLabels('{ team: "\\uD800" }')).field).toBe('labels.team');
  });

  it('refuses 17 labels', () => {
    const many = Array.from({ length: 17 }, (_, i) => `l${i}: x`).join(', ');
    expect(refusal(withLabels(`{ ${many} }`))).toEqual({
      field: 'labels',
      message: 'train.plan.yaml: labels must be an object of at most 16 labels, got an object',
    });
  });

  it('refuses labels that are not a map', () => {
    expect(refusal(withLabels('[team=ml]')).field).toBe('labels');
  });
});
