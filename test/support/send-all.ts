/**
 * Sends one call per item with `concurrency` calls in flight and resolves with every acknowledged
 * answer: the loop behind the reliability and e2e senders (sendEmails, sendSmses). A call that fails
 * is thrown unless `tolerateFailures` (a crash test kills the process mid-stream: its unanswered calls
 * fail and were never acknowledged).
 */
export interface SendAllOptions<T> {
  tolerateFailures?: boolean;
  onAck?: (sent: T) => void;
  /** Checked before each call: true stops sending (calls in flight finish). */
  stop?: () => boolean;
}

export async function sendAll<I, T>(
  items: readonly I[],
  concurrency: number,
  send: (item: I, index: number) => Promise<T>,
  options: SendAllOptions<T> = {},
): Promise<{ acked: T[]; failed: number }> {
  const acked: T[] = [];
  let failed = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length && !(options.stop?.() ?? false)) {
        const i = next++;
        try {
          const sent = await send(items[i]!, i);
          acked.push(sent);
          options.onAck?.(sent);
        } catch (err) {
          if (!options.tolerateFailures) throw err;
          failed++;
        }
      }
    }),
  );
  return { acked, failed };
}
