/** Resolves the benchmarks' `../src/index.js` to the compiled `../dist/index.js`. */
export async function resolve(specifier, context, next) {
  if (specifier === '../src/index.js' && context.parentURL?.includes('/bench/')) {
    return next('../dist/index.js', context);
  }
  return next(specifier, context);
}
