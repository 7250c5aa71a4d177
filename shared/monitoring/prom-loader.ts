/**
 * Loads the Prometheus client library. prom-client is always installed in this project, but the spec
 * defines what happens without it; components take a loader so that path is testable.
 */
import type * as PromClient from 'prom-client';

/** The prom-client module. */
export type PromClientModule = typeof PromClient;

/** Returns the client library, or undefined when it is not installed. */
export type PromClientLoader = () => PromClientModule | undefined;

/** Loads prom-client with `require`, answering undefined when it cannot be resolved. */
export const loadPromClient: PromClientLoader = () => {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('prom-client') as PromClientModule;
  } catch {
    return undefined;
  }
};

/** A loader that reports the library as absent. */
export const absentPromClient: PromClientLoader = () => undefined;
