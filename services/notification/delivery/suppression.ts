/**
 * The suppression list: per channel, the recipients the service must not contact again (a bounced or
 * unsubscribed address, a number that sent STOP, a dead device token). The service keeps it, not each
 * provider, and the pipeline checks it before a backend is chosen, so a failover never reaches a
 * suppressed recipient through another provider.
 *
 * `SuppressionList` is the small interface other areas call (provider receipts, the worker's
 * automatic entries); `Suppressions` implements it over a `SuppressionStore` (memory or database) and
 * adds what the RPCs need (validation, masked listing with keyset pages, metrics).
 */
import { newId } from '../../../shared/runtime/ids';
import { GroupCommit } from '../../../shared/storage/group-commit';
import { pageSize as resolvePageSize } from '../../../shared/storage/page-size';
import { Counter, type Registry } from 'prom-client';
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
} from '../../../shared/errors';
import type { Logger } from '../../../shared/logging/logger';
import { silentLogger } from '../../../shared/logging/logger';
import { decodeKeysetToken, encodeKeysetToken, type KeysetKey } from '../../../shared/storage/keyset-token';
import { isE164 } from '../../../shared/text/e164';
import { requireStorableText } from '../../../shared/text/cut';
import { checkText, hasControlCharacters } from '../../../shared/text/check';
import type { Channel } from './driver';
import { CHANNELS } from './types';
import { maskRecipient } from './mask';
import { type Clock, dateReader, systemTimers, type Timers } from '../../../shared/runtime/clock';

/** Why a recipient is suppressed. */
export type SuppressionReason =
  | 'hard_bounce'
  | 'spam_complaint'
  | 'unsubscribed'
  | 'stop_keyword'
  | 'invalid_recipient'
  | 'unregistered_token'
  | 'manual';

/**
 * Reasons only the recipient can lift: a STOP is lifted by the recipient's START (the inbound
 * webhook), never by a caller of RemoveSuppression. Carriers require it (an opt-out is the
 * subscriber's to withdraw), and one caller's cleanup must not re-open a number that opted out.
 */
export const RECIPIENT_ONLY_REASONS: readonly SuppressionReason[] = ['stop_keyword'];

/** Every suppression reason, for validation. */
export const SUPPRESSION_REASONS: readonly SuppressionReason[] = [
  'hard_bounce',
  'spam_complaint',
  'unsubscribed',
  'stop_keyword',
  'invalid_recipient',
  'unregistered_token',
  'manual',
];

/**
 * Where an entry came from, as the metric label (`kind` before the first `:` of `source`). A source
 * is `<kind>:<detail>`, e.g. `api:<caller>`, `provider_error:<backend>`, `receipt:<backend>`,
 * `inbound:<backend>`; anything else counts as `other`, so the label set stays bounded.
 */
export const SUPPRESSION_SOURCE_KINDS = ['api', 'provider_error', 'receipt', 'inbound'] as const;

/** What an entry is added with (the recipient is normalised by the list). */
export interface SuppressionInput {
  channel: Channel;
  recipient: string;
  reason: SuppressionReason;
  /** Who added it: `<kind>:<detail>` (see SUPPRESSION_SOURCE_KINDS); at most 256 characters. */
  source: string;
}

/**
 * The list as other areas use it (the provider receipts, the delivery worker). Recipients are given
 * as the caller has them; the list normalises them (lower-cased address, E.164 number, token).
 */
export interface SuppressionList {
  /** Adds an entry; true when it was new, false when the recipient was suppressed already (kept as it was). */
  add(entry: SuppressionInput): Promise<boolean>;
  /** Lifts a suppression (START, UNSTOP, by hand); false when there was none. */
  remove(channel: Channel, recipient: string): Promise<boolean>;
  isSuppressed(channel: Channel, recipient: string): Promise<boolean>;
}

/** One entry as stored. */
export interface SuppressionEntry {
  /** UUID (the listing's keyset tie-breaker). */
  id: string;
  channel: Channel;
  /** Normalised recipient. */
  recipient: string;
  reason: SuppressionReason;
  source: string;
  createdAt: Date;
}

/** An entry as responses show it: the recipient masked. */
export type SuppressionView = Omit<SuppressionEntry, 'recipient'> & { maskedRecipient: string };

/** One page query of the listing, newest first. */
export interface SuppressionPageQuery {
  channel?: Channel;
  limit: number;
  after?: KeysetKey;
}

/** A page of entries and where the next one starts (null when none). */
export interface SuppressionPage {
  entries: SuppressionEntry[];
  nextKey: KeysetKey | null;
}

/** Where entries live: InMemorySuppressionStore or DatabaseSuppressionStore. Inputs are normalised. */
export interface SuppressionStore {
  readonly backend: 'database' | 'memory';
  /** Inserts unless `(channel, recipient)` exists; returns the stored entry and whether it was new. */
  add(entry: SuppressionEntry): Promise<{ entry: SuppressionEntry; created: boolean }>;
  /** Deletes the entry unless its reason is one of `keepReasons`; true when it was deleted. */
  remove(channel: Channel, recipient: string, keepReasons?: readonly SuppressionReason[]): Promise<boolean>;
  /** Which of `recipients` (normalised) are suppressed on `channel`. */
  findSuppressed(channel: Channel, recipients: readonly string[]): Promise<Set<string>>;
  /** The reason of each of `recipients` (normalised) suppressed on `channel` (a user's view). */
  reasonsOf(channel: Channel, recipients: readonly string[]): Promise<Map<string, SuppressionReason>>;
  list(query: SuppressionPageQuery): Promise<SuppressionPage>;
}

/**
 * Where a call of the suppression list was made, the `stage` label of
 * `notification_suppression_lookup_timeouts_total`: the check at submit (the pipeline), the check
 * before an attempt (the worker's claim), or any other call (`api`: AddSuppression,
 * RemoveSuppression, the console, GetUser's `suppressed`, receipts, inbound STOP, provider errors).
 */
export type SuppressionStage = 'submit' | 'claim' | 'api';

/** What the pipeline needs from the list: one query for all recipients of a send. */
export interface SuppressionChecker {
  /**
   * Which of `recipients` (normalised with `normaliseRecipient`) are suppressed on `channel`; `stage`
   * (default `api`) says who asks, for the timeout metric.
   */
  findSuppressed(
    channel: Channel,
    recipients: readonly string[],
    stage?: SuppressionStage,
  ): Promise<Set<string>>;
  /** Counts a send the list stopped (`stopped`) or whose suppressed recipients it left out (`partial`). */
  countStopped(channel: Channel, outcome: 'stopped' | 'partial'): void;
}

const MAX_EMAIL_LENGTH = 254;
const MAX_TOKEN_LENGTH = 4096;
/** Longest `source`, in characters (code points). */
export const MAX_SOURCE_LENGTH = 256;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * The list's key for a recipient: an email address trimmed and lower-cased (the whole address: a
 * bounce is of the mailbox, whatever case a caller used), an SMS number in E.164 with spaces, dashes,
 * dots and parentheses removed, a device token trimmed (tokens are case-sensitive). Bad input is
 * InvalidArgumentError on `field`.
 */
export function normaliseRecipient(channel: Channel, recipient: unknown, field = 'recipient'): string {
  if (typeof recipient !== 'string' || recipient.trim() === '') {
    throw new InvalidArgumentError(`${field} is required`, field);
  }
  const value = recipient.trim();
  if (hasControlCharacters(value))
    throw new InvalidArgumentError(`${field} contains control characters`, field);
  // A lone surrogate would be stored as U+FFFD: a key no send ever matches (and two recipients one key).
  requireStorableText(value, field);
  switch (channel) {
    case 'email': {
      if (value.length > MAX_EMAIL_LENGTH || !EMAIL.test(value)) {
        throw new InvalidArgumentError(`${field} is not an email address`, field);
      }
      return value.toLowerCase();
    }
    case 'sms': {
      const number = value.replace(/[\s\-.()]/g, '');
      if (!isE164(number)) {
        throw new InvalidArgumentError(
          `${field} is not a telephone number in international (E.164) format such as +15551234567`,
          field,
        );
      }
      return number;
    }
    case 'push': {
      if (value.length > MAX_TOKEN_LENGTH || /\s/.test(value)) {
        throw new InvalidArgumentError(`${field} is not a device token`, field);
      }
      return value;
    }
  }
}

/**
 * Leaves the given recipients (normalised with `normaliseRecipient`) out of a channel's payload:
 * the payload and recipient without them, or null when what is left cannot be sent (an email with no
 * `to` left). A channel that cannot leave recipients out has none.
 */
export type WithoutRecipients = (
  payload: unknown,
  suppressed: ReadonlySet<string>,
) => { recipient: string; payload: unknown } | null;

/** One send as the suppression rule sees it, at submit or at claim. */
export interface SuppressionSubject {
  channel: Channel;
  /** Every recipient of the send as given (an email's to, cc and bcc; otherwise the one recipient). */
  recipients: readonly string[];
  payload: unknown;
  /** How the channel leaves recipients out; absent: any suppressed recipient stops the send. */
  withoutRecipients?: WithoutRecipients;
}

/** What the rule decides for one send. */
export type SuppressionVerdict =
  /** No recipient is suppressed: send it as it is. */
  | { kind: 'clear' }
  /** Stopped as a whole: FAILED / recipient_suppressed, no provider contacted. */
  | { kind: 'stopped' }
  /** Sent to the others: this payload and recipient, the suppressed ones named (masked). */
  | {
      kind: 'partial';
      recipient: string;
      maskedRecipient: string;
      payload: unknown;
      suppressedRecipients: string[];
    };

/** The recipients of a stored send: an email's comma-separated addresses, else the one recipient. */
export function recipientsOf(channel: Channel, recipient: string): string[] {
  return channel === 'email' ? recipient.split(',').map((r) => r.trim()) : [recipient];
}

/**
 * THE suppression rule, the same at submit (`DeliveryPipeline`) and before every attempt (the
 * worker's claim): a send none of whose recipients is on the list goes as it is. When some are, a
 * channel that can leave them out (`withoutRecipients`) sends to the others, if what is left can be
 * sent (an email keeps at least one `to`), and the record names the left-out ones, masked; otherwise
 * the send is stopped as a whole. A suppressed recipient is never contacted. One lookup per channel
 * for all `subjects`. Throws when the list cannot be read: the caller must then not send (the worker
 * defers the attempt; a submit is accepted unchecked, its claim checks it).
 */
export async function applySuppressionRule(
  checker: Pick<SuppressionChecker, 'findSuppressed'>,
  subjects: readonly SuppressionSubject[],
  stage: Exclude<SuppressionStage, 'api'>,
): Promise<SuppressionVerdict[]> {
  const wanted = new Map<Channel, Set<string>>();
  const keysOf = subjects.map(({ channel, recipients }) => {
    const keys = new Set<string>();
    for (const r of recipients) {
      try {
        keys.add(normaliseRecipient(channel, r));
      } catch {
        // A form the list cannot hold is never on it: nothing to check.
      }
    }
    let set = wanted.get(channel);
    if (!set) wanted.set(channel, (set = new Set()));
    for (const k of keys) set.add(k);
    return keys;
  });
  const found = new Map<Channel, Set<string>>();
  for (const [channel, keys] of wanted) {
    if (keys.size > 0) found.set(channel, await checker.findSuppressed(channel, [...keys], stage));
  }
  return subjects.map((subject, i): SuppressionVerdict => {
    const { channel } = subject;
    const keys = keysOf[i]!;
    const hits = new Set([...keys].filter((k) => found.get(channel)?.has(k)));
    if (hits.size === 0) return { kind: 'clear' };
    const rest =
      hits.size < keys.size && subject.withoutRecipients
        ? leaveOut(subject.withoutRecipients, subject.payload, hits)
        : null;
    if (!rest) return { kind: 'stopped' };
    return {
      kind: 'partial',
      recipient: rest.recipient,
      maskedRecipient: maskRecipient(channel, rest.recipient),
      payload: rest.payload,
      suppressedRecipients: [...hits].map((r) => maskRecipient(channel, r)),
    };
  });
}

/** `without(payload, hits)`; a payload it cannot read (a malformed stored one) cannot be narrowed: null. */
function leaveOut(
  without: WithoutRecipients,
  payload: unknown,
  hits: ReadonlySet<string>,
): ReturnType<WithoutRecipients> {
  try {
    return without(payload, hits);
  } catch {
    return null;
  }
}

/** The listing filter a page token is bound to. */
function binding(channel: Channel | undefined): string {
  return `suppressions:${channel ?? '*'}`;
}

/** Default page size of `list`. */
export const DEFAULT_SUPPRESSION_PAGE_SIZE = 50;
/** Largest page of `list`; larger requests are capped. */
export const MAX_SUPPRESSION_PAGE_SIZE = 500;

/** Default bound on one suppression lookup at submit and at claim (`delivery.suppression.lookup_timeout_ms`). */
export const DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS = 2000;

/**
 * The suppression list did not answer in time (`timeout`: the call waited longer than the bound, its
 * PostgreSQL statement cancelled) or could not be read at all (`failed`, lookups only). Any call of the
 * list may answer `timeout` (lookups, adds, removals, reasons: see `Suppressions.bounded`); it is
 * UnavailableError, so the RPCs answer UNAVAILABLE and the caller may retry. Its message names neither
 * the recipients nor the SQL (a driver error's text may carry both: knex's default puts the statement
 * with its bindings in it), so it can be logged as it is. Callers never send unchecked on it: a submit
 * is accepted and checked at claim; a claim is deferred.
 */
export class SuppressionLookupError extends UnavailableError {
  constructor(
    readonly reason: 'timeout' | 'failed',
    message: string,
    /** The database's SQLSTATE when it answered one (57014: the statement was cancelled). */
    readonly sqlState?: string,
  ) {
    super(message);
  }
}

/**
 * THE log line of a suppression check that could not be made (at submit: accepted unchecked; at claim:
 * deferred). A timeout is a warning (the bound did its job: the list was busy, e.g. locked by a
 * migration), anything else an error. `messages` say what the caller did instead. `err` is logged as
 * it is: a driver's error reaches the log without the values bound to its statement
 * (shared/logging/logger.ts), and a SuppressionLookupError names no recipient.
 */
export function logUncheckedSuppression(
  log: Logger,
  err: unknown,
  fields: Record<string, unknown>,
  messages: { timeout: string; failed: string },
): void {
  if (err instanceof SuppressionLookupError && err.reason === 'timeout') {
    log.warn({ err, ...fields }, messages.timeout);
  } else {
    log.error({ err, ...fields }, messages.failed);
  }
}

/** Options of Suppressions. */
export interface SuppressionsOptions {
  store: SuppressionStore;
  /** Where the metrics are registered; none means no metrics. */
  registry?: Registry;
  logger?: Logger;
  clock?: Clock;
  /** Grouped lookup queries running at once on the database store (default 1; see `findSuppressed`). */
  maxConcurrentLookups?: number;
  /**
   * Longest wait of one call of the list on the database store, a lookup's time queued included
   * (default DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS): past it the caller gets SuppressionLookupError
   * `timeout`. The store cancels its statement after the same time (DatabaseSuppressionStore
   * `lookupTimeoutMs`).
   */
  lookupTimeoutMs?: number;
  /** Timers of the bound (tests drive them by hand). */
  timers?: Timers;
}

/** Most recipients in one grouped lookup of `Suppressions.findSuppressed`. */
export const MAX_SUPPRESSION_LOOKUP_KEYS = 1000;

/** One caller's lookup, waiting in the grouped lookups of `Suppressions.findSuppressed`. */
interface Lookup {
  channel: Channel;
  recipients: readonly string[];
  stage: SuppressionStage;
  /** Its caller stopped waiting (the bound passed): its group leaves it out of the query. */
  abandoned: boolean;
}

/** The suppression list over a store: the one home of its rules. */
export class Suppressions implements SuppressionList, SuppressionChecker {
  private readonly store: SuppressionStore;
  /** Database lookups, grouped: see `findSuppressed`. */
  private readonly lookups: GroupCommit<Lookup, Set<string>>;
  private readonly clock: () => Date;
  private readonly log: Logger;
  private readonly added?: Counter<'channel' | 'source'>;
  private readonly stopped?: Counter<'channel' | 'outcome'>;
  private readonly timeouts?: Counter<'channel' | 'stage'>;
  private readonly lookupTimeoutMs: number;
  private readonly timers: Timers;

  constructor(options: SuppressionsOptions) {
    this.store = options.store;
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? DEFAULT_SUPPRESSION_LOOKUP_TIMEOUT_MS;
    this.timers = options.timers ?? systemTimers;
    this.clock = dateReader(options.clock);
    this.log = (options.logger ?? silentLogger()).child({ component: 'suppressions' });
    this.lookups = new GroupCommit({
      flush: (batch) => this.flushLookups(batch),
      // Bounded by recipients, not by callers: a query names at most MAX_SUPPRESSION_LOOKUP_KEYS.
      maxBatchSize: MAX_SUPPRESSION_LOOKUP_KEYS,
      maxBatchBytes: MAX_SUPPRESSION_LOOKUP_KEYS,
      sizeOf: (lookup) => lookup.recipients.length,
      maxConcurrentFlushes: options.maxConcurrentLookups ?? 1,
    });
    if (options.registry) {
      this.added = new Counter({
        name: 'notification_suppressions_added_total',
        help: 'Suppression entries added, by channel and source kind (api, provider_error, receipt, inbound, other).',
        labelNames: ['channel', 'source'],
        registers: [options.registry],
      });
      this.stopped = new Counter({
        name: 'notification_suppressed_sends_total',
        help: 'Sends the suppression list stopped (outcome stopped) or left suppressed recipients out of (partial), by channel.',
        labelNames: ['channel', 'outcome'],
        registers: [options.registry],
      });
      this.timeouts = new Counter({
        name: 'notification_suppression_lookup_timeouts_total',
        help: 'Suppression list calls not answered within delivery.suppression.lookup_timeout_ms, by channel and stage: submit (the submit was accepted unchecked, checked at claim), claim (the attempt deferred), api (any other call: AddSuppression, RemoveSuppression, the console, GetUser, receipts, inbound STOP, provider errors; answered UNAVAILABLE or retried).',
        labelNames: ['channel', 'stage'],
        registers: [options.registry],
      });
    }
  }

  /** `memory` or `database`. */
  get backend(): 'database' | 'memory' {
    return this.store.backend;
  }

  /** Validates and adds an entry; false when the recipient was suppressed already. */
  async add(input: SuppressionInput): Promise<boolean> {
    return (await this.addEntry(input)).created;
  }

  /** `add` that also answers the stored entry (the RPC shows it). */
  async addEntry(input: SuppressionInput): Promise<{ entry: SuppressionView; created: boolean }> {
    const channel = checkChannel(input.channel);
    const recipient = normaliseRecipient(channel, input.recipient);
    if (!SUPPRESSION_REASONS.includes(input.reason)) {
      throw new InvalidArgumentError(`reason must be one of ${SUPPRESSION_REASONS.join(', ')}`, 'reason');
    }
    const source = checkText(input.source, 'source', { max: MAX_SOURCE_LENGTH, required: 'non_empty' });
    const result = await this.bounded(
      channel,
      'api',
      this.store.add({
        id: newId(),
        channel,
        recipient,
        reason: input.reason,
        source,
        createdAt: this.clock(),
      }),
    );
    if (result.created) {
      this.added?.inc({ channel, source: sourceKind(source) });
      this.log.info(
        { channel, recipient: maskRecipient(channel, recipient), reason: input.reason, source },
        'recipient suppressed',
      );
    }
    return { entry: toSuppressionView(result.entry), created: result.created };
  }

  async remove(channel: Channel, recipient: string): Promise<boolean> {
    const ch = checkChannel(channel);
    const key = normaliseRecipient(ch, recipient);
    const removed = await this.bounded(ch, 'api', this.store.remove(ch, key));
    if (removed) this.log.info({ channel: ch, recipient: maskRecipient(ch, key) }, 'suppression lifted');
    return removed;
  }

  /**
   * RemoveSuppression: lifts an entry by hand. NotFoundError when there is none;
   * FailedPreconditionError for a reason in RECIPIENT_ONLY_REASONS (the entry stays).
   */
  async removeByHand(channel: Channel, recipient: string, by: string): Promise<void> {
    const ch = checkChannel(channel);
    const key = normaliseRecipient(ch, recipient);
    // One bound for both statements: the caller waits at most lookupTimeoutMs in all.
    const { removed, kept } = await this.bounded(
      ch,
      'api',
      (async () => {
        if (await this.store.remove(ch, key, RECIPIENT_ONLY_REASONS)) return { removed: true, kept: false };
        return { removed: false, kept: (await this.store.findSuppressed(ch, [key])).has(key) };
      })(),
    );
    if (removed) {
      this.log.info({ channel: ch, recipient: maskRecipient(ch, key), by }, 'suppression lifted by hand');
      return;
    }
    if (kept) {
      throw new FailedPreconditionError(
        'the recipient opted out (STOP); only their START lifts it, not RemoveSuppression',
      );
    }
    throw new NotFoundError('recipient is not on the suppression list');
  }

  async isSuppressed(channel: Channel, recipient: string): Promise<boolean> {
    const ch = checkChannel(channel);
    const key = normaliseRecipient(ch, recipient);
    return (await this.bounded(ch, 'api', this.store.findSuppressed(ch, [key]))).has(key);
  }

  /**
   * On the database store, lookups are group-committed (shared/storage/group-commit, the one batcher
   * of the stores, here batching reads): the lookups of one event-loop turn (the SendEmails of that
   * turn, the worker's check of a claim), and those that arrive while an earlier group's query runs,
   * share one query per channel of at most MAX_SUPPRESSION_LOOKUP_KEYS recipients in all. A query
   * per SendEmail was as many statements as the INSERTs it preceded (README, "Durable enqueue
   * (issue 30)"). A failing query rejects every lookup of its channel in that group with
   * SuppressionLookupError `failed` (the driver's text, which names the recipients, is not kept).
   *
   * Each lookup waits at most `lookupTimeoutMs` (`bounded`), its time in the queue included (a hung
   * query holds the groups behind it): past that it is rejected with SuppressionLookupError `timeout`
   * and counted (`notification_suppression_lookup_timeouts_total{channel,stage}`, `stage` as given:
   * `submit`, `claim`, else `api`), and its group leaves it out of the query it had not reached yet.
   * The store cancels the query itself after the same time. The memory store answers at once.
   */
  async findSuppressed(
    channel: Channel,
    recipients: readonly string[],
    stage: SuppressionStage = 'api',
  ): Promise<Set<string>> {
    if (recipients.length === 0) return new Set();
    if (this.store.backend === 'memory') return this.store.findSuppressed(channel, recipients);
    const lookup: Lookup = { channel, recipients, stage, abandoned: false };
    return this.bounded(channel, stage, this.lookups.add(lookup), () => (lookup.abandoned = true));
  }

  /**
   * THE bound on a call of the list (every store call goes through it: lookups, adds, removals,
   * reasons, listing pages): the caller waits for `answer` at most `lookupTimeoutMs`; past it the call is rejected
   * with SuppressionLookupError `timeout`, counted in `notification_suppression_lookup_timeouts_total
   * {channel,stage}`, and `onTimeout` runs (a grouped lookup leaves its group). The statement itself is
   * cancelled in PostgreSQL by the store after the same time (not behind a pooler: there knex drops
   * the connection; not on PGlite: there only this wait is bounded and the statement runs when the one
   * connection is free, so an add or removal may still take effect after its caller was told
   * `timeout`: both are idempotent, a retry agrees). The store's own timeout, which may come first, is
   * counted as well. The memory store answers at once: not bounded.
   */
  private bounded<T>(
    /** The metric's `channel`; `all` for a listing of every channel. */
    channel: Channel | 'all',
    stage: SuppressionStage,
    answer: Promise<T>,
    onTimeout?: () => void,
  ): Promise<T> {
    if (this.store.backend === 'memory') return answer;
    return new Promise<T>((resolve, reject) => {
      let late = false;
      const timer = this.timers.setTimeout(() => {
        late = true;
        onTimeout?.();
        this.timeouts?.inc({ channel, stage });
        reject(this.timedOut(stage));
      }, this.lookupTimeoutMs);
      answer.then(
        (value) => {
          this.timers.clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          this.timers.clearTimeout(timer);
          if (!late && err instanceof SuppressionLookupError && err.reason === 'timeout') {
            this.timeouts?.inc({ channel, stage });
          }
          reject(err);
        },
      );
    });
  }

  private timedOut(stage: SuppressionStage): SuppressionLookupError {
    const what = stage === 'api' ? 'suppression list call' : 'suppression lookup';
    return new SuppressionLookupError('timeout', `${what} not answered within ${this.lookupTimeoutMs} ms`);
  }

  /**
   * One query per channel of the group (its lookups whose callers still wait); each lookup is
   * answered with its own recipients found.
   */
  private async flushLookups(batch: readonly Lookup[]): Promise<PromiseSettledResult<Set<string>>[]> {
    const keys = new Map<Channel, Set<string>>();
    for (const { channel, recipients, abandoned } of batch) {
      if (abandoned) continue;
      let set = keys.get(channel);
      if (!set) keys.set(channel, (set = new Set()));
      for (const r of recipients) set.add(r);
    }
    const channels = [...keys.keys()];
    const answers = await Promise.allSettled(
      channels.map((channel) => this.store.findSuppressed(channel, [...keys.get(channel)!])),
    );
    const byChannel = new Map(
      channels.map((channel, i): [Channel, PromiseSettledResult<Set<string>>] => {
        const answer = answers[i]!;
        return [channel, answer.status === 'rejected' ? this.lookupFailed(channel, answer.reason) : answer];
      }),
    );
    return batch.map(({ channel, recipients, stage, abandoned }): PromiseSettledResult<Set<string>> => {
      const answer = byChannel.get(channel);
      // Nobody waits for an abandoned lookup any more: it was never queried.
      if (abandoned || !answer) return { status: 'rejected', reason: this.timedOut(stage) };
      if (answer.status === 'rejected') return answer;
      return { status: 'fulfilled', value: new Set(recipients.filter((r) => answer.value.has(r))) };
    });
  }

  /** A store's failure as callers see it: SuppressionLookupError without the driver's text. */
  private lookupFailed(channel: Channel, err: unknown): PromiseRejectedResult {
    if (err instanceof SuppressionLookupError) {
      if (err.reason === 'timeout') {
        this.log.warn({ channel }, 'suppression lookup query cancelled: it passed lookup_timeout_ms');
      }
      return { status: 'rejected', reason: err };
    }
    const sqlState = sqlStateOf(err);
    // Logged without `err`: with knex's default (`compileSqlOnError`) a driver error's message carries
    // the statement with its bindings, the recipients. openDatabase turns that off and the logger
    // drops the other value fields, but a store may be handed any knex; the SQLSTATE is what matters.
    this.log.error(
      { channel, sqlState, errorName: err instanceof Error ? err.name : typeof err },
      'suppression lookup failed',
    );
    return {
      status: 'rejected',
      reason: new SuppressionLookupError(
        'failed',
        `suppression lookup failed${sqlState ? ` (SQLSTATE ${sqlState})` : ''}`,
        sqlState,
      ),
    };
  }

  /**
   * Which of `recipients` (as their owner has them: any case, any spacing) are suppressed on
   * `channel`, with the reason, keyed by the recipient as given (GetUser's `suppressed`). Recipients
   * that are not valid for the channel are simply not found; at most MAX_SUPPRESSION_LOOKUP_KEYS.
   */
  async reasonsOf(channel: Channel, recipients: readonly string[]): Promise<Map<string, SuppressionReason>> {
    const ch = checkChannel(channel);
    if (recipients.length > MAX_SUPPRESSION_LOOKUP_KEYS) {
      throw new InvalidArgumentError(`at most ${MAX_SUPPRESSION_LOOKUP_KEYS} recipients per lookup`);
    }
    const keys = new Map<string, string>();
    for (const r of recipients) {
      try {
        keys.set(r, normaliseRecipient(ch, r));
      } catch {
        // Not a recipient of this channel: it cannot be on its list.
      }
    }
    const result = new Map<string, SuppressionReason>();
    if (keys.size === 0) return result;
    const found = await this.bounded(ch, 'api', this.store.reasonsOf(ch, [...new Set(keys.values())]));
    for (const [given, key] of keys) {
      const reason = found.get(key);
      if (reason !== undefined) result.set(given, reason);
    }
    return result;
  }

  countStopped(channel: Channel, outcome: 'stopped' | 'partial'): void {
    this.stopped?.inc({ channel, outcome });
  }

  /**
   * Entries newest first, masked, optionally of one channel. `pageSize` 0 means 50, above 500 is
   * capped; `pageToken` must come from the previous page of the same filter.
   */
  async list(
    channel: Channel | undefined,
    pageToken = '',
    pageSize = 0,
  ): Promise<{ entries: SuppressionView[]; nextPageToken: string }> {
    if (channel !== undefined) checkChannel(channel);
    const limit = resolvePageSize(pageSize, {
      default: DEFAULT_SUPPRESSION_PAGE_SIZE,
      max: MAX_SUPPRESSION_PAGE_SIZE,
    });
    const after = pageToken ? decodeKeysetToken(binding(channel), pageToken) : undefined;
    const page = await this.bounded(channel ?? 'all', 'api', this.store.list({ channel, limit, after }));
    return {
      entries: page.entries.map(toSuppressionView),
      nextPageToken: page.nextKey ? encodeKeysetToken(binding(channel), page.nextKey) : '',
    };
  }
}

/** A PostgreSQL error's SQLSTATE (five characters), if `err` carries one. */
function sqlStateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

function checkChannel(channel: unknown): Channel {
  if (!CHANNELS.includes(channel as Channel)) {
    throw new InvalidArgumentError(`channel must be one of ${CHANNELS.join(', ')}`, 'channel');
  }
  return channel as Channel;
}

function sourceKind(source: string): string {
  const kind = source.split(':', 1)[0]!;
  return (SUPPRESSION_SOURCE_KINDS as readonly string[]).includes(kind) ? kind : 'other';
}

/** An entry with its recipient masked, for responses and logs. */
export function toSuppressionView(entry: SuppressionEntry): SuppressionView {
  const { recipient, ...rest } = entry;
  return { ...rest, maskedRecipient: maskRecipient(entry.channel, recipient) };
}
