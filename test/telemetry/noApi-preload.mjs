// Preload of the no-API child: hides `@opentelemetry/*` from `require` (and so from `createRequire`,
// which leash loads the API with) and from ESM `import`, as if the package were not installed. Every
// attempt to resolve it is noted in `globalThis.hiddenOtel`.
import Module, { register } from 'node:module';

globalThis.hiddenOtel = [];
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (typeof request === 'string' && request.startsWith('@opentelemetry/')) {
    globalThis.hiddenOtel.push(request);
    const error = new Error(`Cannot find module '${request}' (hidden by the test)`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolveFilename.call(this, request, ...rest);
};
register('./noApi-hooks.mjs', import.meta.url);
