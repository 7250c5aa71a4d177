/**
 * Polls `condition` until it holds; fails after `timeoutMs`. A deadline against hangs, never a timing
 * assertion: tests wait on observable state instead of sleeping.
 */
export async function waitFor(
  condition: () => boolean,
  what = 'condition',
  timeoutMs = 15000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Polls the async `condition` every 100 ms until it holds; fails after `timeoutMs` (a bound, not a timing check). */
export async function until(
  condition: () => Promise<boolean>,
  what: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Resolves with `p`, or fails with "`what` hung" when `p` has not settled after `timeoutMs`: a
 * deadline for a call that must not hang (far beyond any bound it has), never a timing assertion.
 */
export async function notHung<T>(p: Promise<T>, what: string, timeoutMs = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} hung`)), timeoutMs);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
