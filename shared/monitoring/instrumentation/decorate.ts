/**
 * One shape for the instrumentation helpers that work both as plain function wrappers and as method
 * decorators (TypeScript 5 standard decorators, and the legacy form the jest swc config emits).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyFunction = (this: any, ...args: any[]) => any;

/** Wraps `fn`, whose qualified name (`Class.method` or the function's name) is `qualname`. */
export type Wrap = <F extends AnyFunction>(fn: F, qualname: string) => F;

/** A helper usable as `helper(fn)`, `@helper` on a method (either decorator form). */
export interface WrapperOrDecorator {
  <F extends AnyFunction>(fn: F): F;
  <F extends AnyFunction>(fn: F, context: ClassMethodDecoratorContext): F;
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): PropertyDescriptor;
}

function className(target: object): string {
  const ctor = typeof target === 'function' ? target : target.constructor;
  return (ctor as { name?: string } | undefined)?.name ?? '';
}

/** Builds a {@link WrapperOrDecorator} from a wrap function. */
export function wrapperOrDecorator(wrap: Wrap): WrapperOrDecorator {
  function apply(fnOrTarget: unknown, contextOrKey?: unknown, descriptor?: PropertyDescriptor): unknown {
    if (descriptor && typeof descriptor.value === 'function') {
      const name = `${className(fnOrTarget as object)}.${String(contextOrKey)}`;
      return { ...descriptor, value: wrap(descriptor.value as AnyFunction, name) };
    }
    const fn = fnOrTarget as AnyFunction;
    if (contextOrKey && typeof contextOrKey === 'object' && 'kind' in contextOrKey) {
      const ctx = contextOrKey as ClassMethodDecoratorContext;
      // The standard decorator context does not name the class; the method's own name is kept and
      // the class is added on first call, when `this` is known.
      const method = String(ctx.name);
      let wrapped: AnyFunction | undefined;
      return function (this: unknown, ...args: unknown[]) {
        wrapped ??= wrap(fn, `${className(this as object) || 'anonymous'}.${method}`);
        return wrapped.apply(this, args);
      };
    }
    return wrap(fn, fn.name || 'anonymous');
  }
  return apply as WrapperOrDecorator;
}
