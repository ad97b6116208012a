// ESM resolve hook of the no-API child: `@opentelemetry/*` cannot be imported, as if not installed.
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@opentelemetry/')) {
    const error = new Error(`Cannot find package '${specifier}' (hidden by the test)`);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
