import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Progress } from '../../src/cli/progress.js';
import { AutonomyGuardrails } from '../../src/guardrails/AutonomyGuardrails.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');

function setup(isTTY: boolean) {
  const written: string[] = [];
  const clock = new ManualClock(T0);
  const progress = new Progress({ write: (t: string) => written.push(t), isTTY }, clock, 60_000);
  const g = AutonomyGuardrails.create({
    maxSteps: 10,
    toolBudget: 5,
    maxWallClockSeconds: 600,
    startTime: '2026-11-30T10:00:00.000Z',
    stepCount: 2,
  });
  return { written, clock, progress, g };
}

describe('Progress', () => {
  it('writes a line per decision done, with steps, budget and elapsed time against their limits', () => {
    const { written, progress, g } = setup(false);
    progress.done('build', g);
    expect(written).toEqual(['  ✓ build  steps 2/10 · budget 0.00/5.00 · elapsed 0s/10m00s\n']);
  });

  it('writes the lines of a decision’s output under its line, escaped', () => {
    const { written, progress, g } = setup(false);
    progress.done('build', g, ['built', '\x1b[2Jcleared']);
    expect(written[0]?.split('\n').slice(1)).toEqual(['    │ built', '    │ \\u001b[2Jcleared', '']);
  });

  it('writes no live line when not on a terminal', () => {
    const { written, progress, g } = setup(false);
    progress.started('deploy', 1, g);
    progress.close();
    expect(written).toEqual([]);
  });

  it('draws a live line for the step running on a terminal, in place', () => {
    const { written, progress, g } = setup(true);
    progress.started('deploy', 2, g);
    progress.close();
    expect(written[0]).toBe('\r\x1b[2K  … deploy (try 2)  steps 2/10 · budget 0.00/5.00 · elapsed 0s/10m00s');
  });

  it('moves the elapsed time of the live line on each redraw', () => {
    const { written, clock, progress, g } = setup(true);
    progress.started('deploy', 1, g);
    clock.advance(65_000);
    progress.redraw();
    progress.close();
    expect(written[1]).toContain('elapsed 1m05s/10m00s');
  });

  it('erases the live line before the line of the decision done', () => {
    const { written, progress, g } = setup(true);
    progress.started('deploy', 1, g);
    progress.done('deploy', g);
    progress.close();
    expect(written.slice(1)).toEqual(['\r\x1b[2K', expect.stringMatching(/^ {2}✓ deploy /)]);
  });
});
