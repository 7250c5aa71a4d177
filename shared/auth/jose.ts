/**
 * jose is ESM only and this project compiles to CommonJS, so it is loaded with a native dynamic
 * `import()` (Node keeps it as is in CommonJS output). Types come through a `resolution-mode`
 * attribute. Under jest, swc turns the `import()` into `require()`, which works because jest is told to
 * compile jose (jest.config.js `transformIgnorePatterns`).
 */
import type * as JoseModule from 'jose' with { 'resolution-mode': 'import' };

/** The jose module namespace. */
export type Jose = typeof JoseModule;

let loading: Promise<Jose> | undefined;

/** The jose module, loaded once. */
export function loadJose(): Promise<Jose> {
  loading ??= import('jose');
  return loading;
}
