import { describe, expect, it } from 'vitest';
import { browserSkipReason } from './support.js';

describe('whether the browser tests run', () => {
  it('runs them when Chromium is found', () => {
    expect(browserSkipReason(true, {})).toBeNull();
  });

  it('skips them outside CI without Chromium, naming where it was looked for', () => {
    expect(browserSkipReason(false, {})).toBe(
      'skipped: Chromium not found at /usr/bin/chromium (apt-get install -y chromium)',
    );
    expect(browserSkipReason(false, { CI: 'false' })).not.toBeNull();
    expect(browserSkipReason(false, { CI: '0' })).not.toBeNull();
  });

  it('never skips them on CI, so that a missing Chromium fails them', () => {
    for (const CI of ['true', 'TRUE', '1', 'yes']) expect(browserSkipReason(false, { CI })).toBeNull();
  });
});
