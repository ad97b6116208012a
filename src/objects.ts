// Copies of objects made on every call, built so that V8 keeps one shape for all of them. Written as a
// spread followed by keys the source lacks (`{ ...a, key }`, `{ ...a, ...b }`), V8 gives every copy a
// hidden class (map) of its own: about a microsecond and 600-750 bytes a copy. Both helpers read getters
// as a spread reads them, copy enumerable symbol keys, and keep a `__proto__` key an ordinary key.

/**
 * Adds to `target` the own enumerable keys of `source` that `target` does not have: `{ ...source,
 * ...target }` with `target`'s keys first (a guarded tool: the guard's functions, then the tool's keys).
 */
export function withMissingKeys<T extends object>(target: T, source: object): T {
  copyInto(target as Record<PropertyKey, unknown>, source, true);
  return target;
}

/** `{ ...first, ...second }`, key by key: the same keys in the same order, `second`'s winning. */
export function merged<A extends object, B extends object>(first: A, second: B): Omit<A, keyof B> & B {
  const out: Record<PropertyKey, unknown> = {};
  copyInto(out, first, false);
  copyInto(out, second, false);
  return out as Omit<A, keyof B> & B;
}

/** Copies `source`'s own enumerable keys into `out`; with `keep`, not those `out` has already. */
function copyInto(out: Record<PropertyKey, unknown>, source: object, keep: boolean): void {
  const from = source as Record<PropertyKey, unknown>;
  for (const key of Object.keys(from)) {
    if (keep && Object.hasOwn(out, key)) continue;
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
    if (keep && Object.hasOwn(out, symbol)) continue;
    if (Object.prototype.propertyIsEnumerable.call(from, symbol)) out[symbol] = from[symbol];
  }
}
