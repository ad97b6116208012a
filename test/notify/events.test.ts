import { expect, it } from 'vitest';
import { wants } from '../../src/notify/events.js';

it('gives a target asking for approval.* every approval event and nothing else', () => {
  const events = ['approval.requested', 'approval.expired', 'budget.alert'];

  expect(events.map((e) => wants(['approval.*'], e))).toEqual([true, true, false]);
});

it('gives a target asking for * every event', () => {
  expect(['approval.voted', 'budget.alert'].map((e) => wants(['*'], e))).toEqual([true, true]);
});

it('gives a target asking for named events those only', () => {
  expect(['budget.alert', 'approval.voted'].map((e) => wants(['budget.alert'], e))).toEqual([true, false]);
});
