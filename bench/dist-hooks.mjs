/** Resolves the benchmarks' `../src/…` modules to the compiled `../dist/…` ones. */
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('../src/') && context.parentURL?.includes('/bench/')) {
    return next(`../dist/${specifier.slice('../src/'.length)}`, context);
  }
  return next(specifier, context);
}
