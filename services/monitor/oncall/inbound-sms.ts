/**
 * Acknowledging by SMS (issue 28, helper O3): the monitor's consumer of the notification service's
 * inbound SMS stream (WatchInboundSms). A reply `ACK <code>` calls
 * `PageAcknowledger.acknowledgeByCode(code, from)`; anything else is ignored.
 *
 * - It streams the messages after the last id it handled, kept in an {@link InboundSmsCursor} (the
 *   monitor's database, or memory with `database.store_backend: memory`), so a restart neither loses
 *   nor repeats a reply. The first connection ever starts live: its first frame's id is kept at once.
 * - A message's id is kept only after it was handled; an acknowledgment that throws (the database is
 *   down) ends the stream, and the message is read again after the reconnect.
 * - The stream failing, ending (the notification service restarts) or being refused reconnects with
 *   the one backoff policy (shared/runtime/backoff.ts, full jitter), from the kept id.
 * - A `reset` (the messages after our id are no longer kept: we were away longer than the retention)
 *   is logged and the cursor moves to where the stream stands.
 * - Two replicas both consume every message: acknowledgment is idempotent (the second call answers
 *   `already_acknowledged`), and the shared cursor only moves forward.
 * - Nothing of a message is logged but its id and the outcome: a body and a number are personal data.
 */
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { Backoff, type BackoffOptions, sleepMs } from '../../../shared/runtime/backoff';
import type { AckOutcome, PageAcknowledger } from './ports';

/** One inbound message, as the notification service streams it. */
export interface InboundSmsMessage {
  id: number;
  /** The SMS backend whose webhook received it. */
  backend: string;
  /** The sender, E.164. */
  from: string;
  /** Our number it was sent to. */
  to: string;
  body: string;
  receivedAt: Date;
}

/** One frame of the stream: a message, or where the stream stands (`live` first, `reset`). */
export type InboundSmsStreamFrame =
  { type: 'message'; message: InboundSmsMessage } | { type: 'live' | 'reset'; id: number };

/** The stream of inbound messages (the monitor's client of the notification service implements it). */
export interface InboundSmsSource {
  /**
   * The messages after `afterId` (empty: start live), then live ones, until `signal` aborts or the
   * stream fails (it throws).
   */
  watchInboundSms(afterId: string, signal: AbortSignal): AsyncIterable<InboundSmsStreamFrame>;
}

/** Where the id of the last message handled is kept. */
export interface InboundSmsCursor {
  /** The id of the last message handled; null before the first connection ever. */
  load(): Promise<number | null>;
  /** Keeps `id` unless a larger one is kept already (another replica is further on). */
  save(id: number): Promise<void>;
}

/** Longest code taken (a code is letters and digits). */
export const MAX_ACK_CODE_LENGTH = 16;
// After NFKC: ACK, then whitespace, then the code, and nothing else but surrounding whitespace.
const ACK = new RegExp(`^ACK\\s+([0-9A-Za-z]{1,${MAX_ACK_CODE_LENGTH}})$`, 'i');

/**
 * The code of an `ACK <code>` reply, or null for anything else. Case-insensitive, surrounding
 * whitespace ignored, full-width letters, digits and the ideographic space folded by NFKC (full-width
 * `ＡＣＫ` and `４８２１` read as `ACK 4821`); nothing else may be on the message (`ACK 4821 thanks`
 * is not an acknowledgment).
 */
export function parseAckCode(body: string): string | null {
  const text = body.trim();
  if (text.length > 64) return null; // far longer than any acknowledgment: not worth normalising
  const match = ACK.exec(text.normalize('NFKC').trim());
  return match ? match[1]! : null;
}

/** What the consumer is built from. */
export interface InboundSmsConsumerOptions {
  source: InboundSmsSource;
  cursor: InboundSmsCursor;
  acknowledger: PageAcknowledger;
  /** The reconnect waits (default 500 ms doubling to 30 s, full jitter). */
  backoff?: BackoffOptions;
  /** Waits before a reconnect (tests replace it); resolves early when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  logger?: Logger;
}

// Pre-allocated: abort() without a reason allocates a DOMException.
const STOPPING = new Error('inbound SMS consumer stopping');

/** Reads the inbound SMS stream and acknowledges pages by their code; see the module comment. */
export class InboundSmsConsumer {
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private controller: AbortController | null = null;
  private running: Promise<void> | null = null;
  private handled = 0;
  private connects = 0;

  constructor(private readonly options: InboundSmsConsumerOptions) {
    this.backoff = new Backoff(options.backoff ?? { baseMs: 500, maxMs: 30_000, jitter: 'full' });
    this.log = (options.logger ?? silentLogger()).child({ component: 'oncall-inbound-sms' });
  }

  /** Messages handled (acknowledgments tried or ignored) since start. */
  get handledCount(): number {
    return this.handled;
  }

  /** Streams opened since start (the first one and every reconnect). */
  get connectCount(): number {
    return this.connects;
  }

  /** Starts reading in the background. */
  start(): void {
    if (this.running) return;
    const controller = new AbortController();
    this.controller = controller;
    this.running = this.run(controller.signal);
  }

  /** Ends the stream and waits for the message in hand to be handled. */
  async stop(): Promise<void> {
    this.controller?.abort(STOPPING);
    await this.running;
    this.running = null;
    this.controller = null;
  }

  private async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (await this.readStream(signal)) failures = 0;
        if (signal.aborted) return;
        this.log.info('inbound SMS stream ended; reconnecting');
      } catch (err) {
        if (signal.aborted) return;
        this.log.warn({ err }, 'inbound SMS stream failed; reconnecting');
      }
      failures++;
      const delay = this.backoff.delayMs(failures);
      await (this.options.sleep ?? sleepMs)(delay, signal);
    }
  }

  /** One stream, from the kept id; true when it carried at least one frame. */
  private async readStream(signal: AbortSignal): Promise<boolean> {
    const { cursor, source } = this.options;
    let last = await cursor.load();
    this.connects++;
    let carried = false;
    for await (const frame of source.watchInboundSms(last === null ? '' : String(last), signal)) {
      carried = true;
      if (frame.type === 'message') {
        const { message } = frame;
        if (last !== null && message.id <= last) continue;
        await this.handle(message);
        last = message.id;
        await cursor.save(last);
      } else {
        if (frame.type === 'reset') {
          this.log.warn(
            { afterId: last, resumeAt: frame.id },
            'inbound SMS after the kept id are no longer kept (away longer than the retention): skipped',
          );
        }
        if (last === null || frame.id > last) {
          last = frame.id;
          await cursor.save(last);
        }
      }
      if (signal.aborted) break;
    }
    return carried;
  }

  private async handle(message: InboundSmsMessage): Promise<void> {
    this.handled++;
    const code = parseAckCode(message.body);
    if (code === null) {
      this.log.debug({ id: message.id }, 'inbound SMS is not an acknowledgment: ignored');
      return;
    }
    const outcome: AckOutcome = await this.options.acknowledger.acknowledgeByCode(code, message.from);
    this.log.info({ id: message.id, outcome }, 'SMS acknowledgment');
  }
}
