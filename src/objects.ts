// Copies of objects made on every call, built so that V8 keeps one shape for all of them.

/**
 * Adds to `target` the own enumerable keys of `source` (symbols too) that `target` does not have:
 * `{ ...source, ...target }` with `target`'s keys first. Written as that spread, when `target`'s keys
 * are new to `source`, V8 gives every copy a hidden class (map) of its own: about a microsecond and 700
 * bytes a copy, for objects made on every run (a guarded tool). Getters are read, as a spread reads
 * them; a `__proto__` key stays an ordinary key.
 */
export function withMissingKeys<T extends object>(target: T, source: object): T {
  const out = target as Record<PropertyKey, unknown>;
  const from = source as Record<PropertyKey, unknown>;
  for (const key of Object.keys(from)) {
    if (Object.hasOwn(out, key)) continue;
    // Assigned, a `__proto__` key would set the prototype: defined, it is an ordinary own property.
    if (key === '__proto__') {
      Object.defineProperty(out, key, {
        value: from[key],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else out[key] = from[key];
  }
  for (const symbol of Object.getOwnPropertySymbols(from)) {
    if (!Object.hasOwn(out, symbol) && Object.prototype.propertyIsEnumerable.call(from, symbol))
      out[symbol] = from[symbol];
  }
  return target;
}
