#!/usr/bin/env node
// The `leash` command, compiled to dist/ by `npm run build` (npm ci runs it through the prepare script).
import '../dist/cli/bin.js';
