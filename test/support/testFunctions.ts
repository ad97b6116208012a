// vitest's functions, as leash/testing's store contract takes them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestFunctions } from '../../src/testing/index.js';

export const vitestFunctions: TestFunctions = { describe, it, expect, beforeEach, afterEach };
