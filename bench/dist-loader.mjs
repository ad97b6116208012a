// Benchmarks time the package as users run it: the compiled dist/, not TypeScript transpiled on the fly
// (which wraps every function in a naming helper, a cost the compiled code does not have). Type-checking
// still reads src/, which dist/ is built from.
import { register } from 'node:module';

register('./dist-hooks.mjs', import.meta.url);
