/**
 * The rules every named-backend list follows (SMS, push, mailer), kept in one place so each channel's
 * config schema composes them instead of repeating them.
 */
import { z } from 'zod';

import { bool, uniqueNames } from '../../../shared/config';

/** The fields every named backend has. */
export interface NamedBackend {
  name: string;
  primary: boolean;
  driver: string;
}

/** The `primary` flag of a named backend: false unless set. */
export const primaryFlag = bool().default(false);

/**
 * A list of named backends: names are unique; at most one backend is `primary` (when none is, the
 * first one is the primary: see {@link primaryBackend}); the section named after the chosen driver is
 * present. An absent list is empty.
 */
export function backendList<S extends z.ZodType<NamedBackend>>(element: S, what: string) {
  return z
    .array(element, { error: `expected a list of ${what} backends` })
    .default(() => [])
    .superRefine(uniqueNames(`${what} backend`))
    .superRefine((list, ctx) => {
      let primaryAt: number | undefined;
      list.forEach((backend, i) => {
        if (backend.primary) {
          if (primaryAt !== undefined) {
            ctx.addIssue({
              code: 'custom',
              path: [i, 'primary'],
              message: `only one ${what} backend may be primary; entry [${primaryAt}] is primary already`,
            });
          } else primaryAt = i;
        }
        if ((backend as unknown as Record<string, unknown>)[backend.driver] === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [i, backend.driver],
            message: `settings are required when driver is "${backend.driver}"`,
          });
        }
      });
    });
}

/**
 * The backend that also receives unnamed sends: the one marked `primary`, else the first; undefined
 * for an empty list.
 */
export function primaryBackend<B extends { primary: boolean }>(backends: readonly B[]): B | undefined {
  return backends.find((b) => b.primary) ?? backends[0];
}
