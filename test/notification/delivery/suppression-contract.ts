/**
 * The one behaviour suite every SuppressionStore passes (with the DeliveryStore of the same kind):
 * the list's rules through `Suppressions`, and the pipeline's use of it (a suppressed send recorded
 * FAILED / recipient_suppressed without a provider call, an email's suppressed recipients left out,
 * a provider error adding an entry). Manual clock, worker polled by hand: nothing depends on timers.
 */
import { Registry } from 'prom-client';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import type { DeliveryStore } from '../../../services/notification/delivery/store';
import {
  Suppressions,
  type SuppressionReason,
  type SuppressionStore,
} from '../../../services/notification/delivery/suppression';
import type { Channel } from '../../../services/notification/delivery/driver';
import { SUPPRESSED_ERROR } from '../../../services/notification/delivery/types';
import { withoutSuppressed } from '../../../services/notification/channels/email/email-sender';
import type { OutboundEmail } from '../../../services/notification/channels/email/mailable';
import { ManualClock, ScriptedDriver, lookupOf, newBackend, pollAndSettle, testConfig } from './support';

/** What a backend's test file provides to the contract. */
export interface SuppressionContractBackend {
  suppressions: SuppressionStore;
  deliveries: DeliveryStore;
  close(): Promise<void>;
}

/** A recipient no other test uses (tests share a database per file). */
function uniqueNumber(): string {
  return `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
}
function uniqueAddress(prefix = 'x'): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}@Example.COM`;
}

function email(to: string[], cc: string[] = [], bcc: string[] = []): OutboundEmail {
  const list = (a: string[]) => a.map((e) => ({ email: e }));
  return {
    to: list(to),
    cc: list(cc),
    bcc: list(bcc),
    subject: 's',
    text: 't',
    headers: {},
    attachments: [],
    messageId: '<m@example.com>',
  };
}

/** Registers the contract suite for one store kind. */
export function describeSuppressionContract(
  name: string,
  open: () => Promise<SuppressionContractBackend>,
): void {
  describe(`${name}: suppression contract`, () => {
    let backend: SuppressionContractBackend;

    beforeAll(async () => {
      backend = await open();
    });
    afterAll(async () => {
      await backend?.close();
    });

    function setup(channel: 'sms' | 'email' | 'push' = 'sms') {
      const clock = new ManualClock();
      const registry = new Registry();
      // `unreadable.on`: the list cannot be read (findSuppressed throws, as a database that is down).
      const unreadable = { on: false };
      const store: SuppressionStore = {
        backend: backend.suppressions.backend,
        add: (entry) => backend.suppressions.add(entry),
        remove: (ch, r, keep) => backend.suppressions.remove(ch, r, keep),
        list: (q) => backend.suppressions.list(q),
        reasonsOf: (ch, recipients) => backend.suppressions.reasonsOf(ch, recipients),
        findSuppressed: (ch: Channel, recipients: readonly string[]) =>
          unreadable.on
            ? Promise.reject(new Error('suppression list unavailable'))
            : backend.suppressions.findSuppressed(ch, recipients),
      };
      const list = new Suppressions({ store, clock: clock, registry });
      const drivers = [
        new ScriptedDriver(newBackend('p'), channel),
        new ScriptedDriver(newBackend('s'), channel),
      ];
      const pipeline = new DeliveryPipeline({
        store: backend.deliveries,
        lookup: lookupOf(...drivers),
        config: testConfig({ routing: { email: 'fallback', sms: 'fallback', push: 'fallback' } }),
        clock: clock,
        random: () => 0.5,
        suppression: list,
        // What the composition root wires for email: the claim-time check leaves addresses out too.
        withoutRecipients: { email: withoutSuppressed },
      });
      return { clock, registry, list, drivers, pipeline, unreadable };
    }

    async function metric(registry: Registry, name: string, labels: Record<string, string>) {
      const m = await registry.getSingleMetric(name)!.get();
      const v = m.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
      return v?.value ?? 0;
    }

    it('when an address is added in any case, the lower-cased address is suppressed, once', async () => {
      const { list } = setup();
      const address = uniqueAddress('Jane');
      expect(
        await list.add({ channel: 'email', recipient: address, reason: 'hard_bounce', source: 'receipt:x' }),
      ).toBe(true);
      expect(await list.isSuppressed('email', address.toLowerCase())).toBe(true);
      expect(await list.isSuppressed('email', ` ${address.toUpperCase()} `)).toBe(true);
      // A second add keeps the first entry (its reason and source).
      const again = await list.addEntry({
        channel: 'email',
        recipient: address,
        reason: 'manual',
        source: 'api:a',
      });
      expect(again.created).toBe(false);
      expect(again.entry).toMatchObject({ reason: 'hard_bounce', source: 'receipt:x' });
      expect(again.entry.maskedRecipient).toBe(`j***@${address.split('@')[1]!.toLowerCase()}`);
    });

    it('reasonsOf answers each suppressed recipient of the list given, as given, with its reason', async () => {
      const { list } = setup();
      const bounced = uniqueAddress('Bounced');
      const clean = uniqueAddress('clean');
      const number = uniqueNumber();
      await list.add({ channel: 'email', recipient: bounced, reason: 'hard_bounce', source: 'receipt:x' });
      await list.add({ channel: 'sms', recipient: number, reason: 'stop_keyword', source: 'inbound:t' });
      // The user's own spelling (case kept in the local part) finds the lower-cased entry.
      const found = await list.reasonsOf('email', [bounced, clean, 'not an address']);
      expect([...found]).toEqual([[bounced, 'hard_bounce']]);
      expect([...(await list.reasonsOf('sms', [number]))]).toEqual([[number, 'stop_keyword']]);
      expect((await list.reasonsOf('push', [number])).size).toBe(0);
      expect((await list.reasonsOf('sms', [])).size).toBe(0);
    });

    it('when a number is added with spaces and dashes, its E.164 form is suppressed, on that channel only', async () => {
      const { list } = setup();
      const number = uniqueNumber();
      const spaced = `${number.slice(0, 2)} ${number.slice(2, 5)}-${number.slice(5)}`;
      await list.add({ channel: 'sms', recipient: spaced, reason: 'stop_keyword', source: 'inbound:t' });
      expect(await list.isSuppressed('sms', number)).toBe(true);
      expect(await list.isSuppressed('push', number)).toBe(false);
      expect(await list.remove('sms', number)).toBe(true);
      expect(await list.isSuppressed('sms', number)).toBe(false);
      expect(await list.remove('sms', number)).toBe(false);
    });

    it('removeByHand lifts any reason but a STOP, which stays (FailedPreconditionError); none: NotFoundError', async () => {
      const { list } = setup();
      const stopped = uniqueNumber();
      const bounced = uniqueNumber();
      await list.add({ channel: 'sms', recipient: stopped, reason: 'stop_keyword', source: 'inbound:t' });
      await list.add({ channel: 'sms', recipient: bounced, reason: 'manual', source: 'api:t' });
      await expect(list.removeByHand('sms', stopped, 'api:t')).rejects.toBeInstanceOf(
        FailedPreconditionError,
      );
      expect(await list.isSuppressed('sms', stopped)).toBe(true);
      await list.removeByHand('sms', bounced, 'api:t');
      expect(await list.isSuppressed('sms', bounced)).toBe(false);
      await expect(list.removeByHand('sms', bounced, 'api:t')).rejects.toBeInstanceOf(NotFoundError);
      // The recipient's own START (the inbound webhook) lifts a STOP.
      expect(await list.remove('sms', stopped)).toBe(true);
    });

    it('when input is bad, add is InvalidArgumentError naming the field and nothing is stored', async () => {
      const { list } = setup();
      const bad: [Parameters<Suppressions['add']>[0], string][] = [
        [
          { channel: 'fax' as never, recipient: '+15551234567', reason: 'manual', source: 'api:a' },
          'channel',
        ],
        [{ channel: 'sms', recipient: '5551234567', reason: 'manual', source: 'api:a' }, 'recipient'],
        [{ channel: 'email', recipient: 'no-at-sign', reason: 'manual', source: 'api:a' }, 'recipient'],
        [{ channel: 'push', recipient: 'has space', reason: 'manual', source: 'api:a' }, 'recipient'],
        [{ channel: 'push', recipient: 't'.repeat(4097), reason: 'manual', source: 'api:a' }, 'recipient'],
        [
          { channel: 'sms', recipient: '+15551234567', reason: 'whim' as SuppressionReason, source: 'api:a' },
          'reason',
        ],
        [{ channel: 'sms', recipient: '+15551234567', reason: 'manual', source: '' }, 'source'],
        [{ channel: 'sms', recipient: '+15551234567', reason: 'manual', source: 'a\nb' }, 'source'],
        [{ channel: 'sms', recipient: '+15551234567', reason: 'manual', source: '😀'.repeat(257) }, 'source'],
        [{ channel: 'sms', recipient: '+15551234567', reason: 'manual', source: '中'.repeat(257) }, 'source'],
      ];
      for (const [input, field] of bad) {
        const err = await list.add(input).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).field).toBe(field);
      }
      expect(await list.isSuppressed('sms', '+15551234567')).toBe(false);
    });

    it('takes a source of 256 characters in emoji or CJK (code points), as the refusal above counts them', async () => {
      const { list } = setup();
      for (const source of ['😀'.repeat(256), '𠀀'.repeat(256)]) {
        const recipient = uniqueAddress('source');
        const added = await list.addEntry({ channel: 'email', recipient, reason: 'manual', source });
        expect(added.entry.source).toBe(source);
      }
    });

    it('lists newest first in keyset pages, masked, filtered by channel; a token of another filter is refused', async () => {
      const { list, clock } = setup();
      const tokens: string[] = [];
      // Two entries per instant: the id breaks the tie, and no page repeats or skips one.
      for (let i = 0; i < 7; i++) {
        const token = `tok${i}-${Math.random().toString(36).slice(2, 12)}abcdef`;
        tokens.push(token);
        await list.add({ channel: 'push', recipient: token, reason: 'unregistered_token', source: 'api:a' });
        if (i % 2 === 1) clock.advance(1000);
      }
      clock.advance(1000);
      await list.add({ channel: 'sms', recipient: uniqueNumber(), reason: 'manual', source: 'api:a' });
      const seen: string[] = [];
      let pageToken = '';
      let pages = 0;
      do {
        const page = await list.list('push', pageToken, 3);
        expect(page.entries.length).toBeLessThanOrEqual(3);
        for (const e of page.entries) {
          expect(e.channel).toBe('push');
          expect(e).not.toHaveProperty('recipient');
          seen.push(e.maskedRecipient);
        }
        pageToken = page.nextPageToken;
        pages++;
      } while (pageToken && pages < 100);
      const ours = tokens.map((t) => `${t.slice(0, 4)}…${t.slice(-4)}`);
      // Other tests of this file add push entries too; ours appear newest first, each once.
      const mine = seen.filter((m) => ours.includes(m));
      expect(mine).toHaveLength(7);
      expect(new Set(seen).size).toBe(seen.length);
      const firstPage = await list.list('push', '', 1);
      await expect(list.list('sms', firstPage.nextPageToken, 1)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(list.list(undefined, 'garbage', 1)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(list.list('push', '', -1)).rejects.toBeInstanceOf(InvalidArgumentError);
    });

    it('when a number is suppressed, its send is FAILED / recipient_suppressed at once and no backend is called', async () => {
      const { list, drivers, pipeline, registry } = setup('sms');
      const number = uniqueNumber();
      await list.add({ channel: 'sms', recipient: number, reason: 'stop_keyword', source: 'inbound:t' });
      const submit = () =>
        pipeline.submit({
          channel: 'sms',
          recipient: number,
          payload: { to: number },
          scope: 's',
          idempotencyKey: `k-${number}`,
        });
      const { delivery, created } = await submit();
      expect(created).toBe(true);
      expect(delivery).toMatchObject({
        status: 'failed',
        failure: 'recipient_suppressed',
        lastError: SUPPRESSED_ERROR,
        nextAttemptAt: null,
        attempts: [],
      });
      expect(delivery.finishedAt).not.toBeNull();
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
      // The same call again (same key, same content) answers the same record.
      const again = await submit();
      expect(again).toMatchObject({ created: false, delivery: { id: delivery.id, status: 'failed' } });
      expect(
        (await pipeline.list({ failure: 'recipient_suppressed', backend: drivers[0]!.name })).deliveries.map(
          (d) => d.id,
        ),
      ).toEqual([delivery.id]);
      expect(
        await metric(registry, 'notification_suppressed_sends_total', { channel: 'sms', outcome: 'stopped' }),
      ).toBe(1);
      expect(
        await metric(registry, 'notification_suppressions_added_total', {
          channel: 'sms',
          source: 'inbound',
        }),
      ).toBe(1);
    });

    it('when a batch holds a suppressed token, only that one is stopped', async () => {
      const { list, drivers, pipeline } = setup('push');
      const dead = `dead-${Math.random().toString(36).slice(2)}-token`;
      const live = `live-${Math.random().toString(36).slice(2)}-token`;
      await list.add({ channel: 'push', recipient: dead, reason: 'unregistered_token', source: 'api:a' });
      const results = await pipeline.submitBatch(
        [dead, live].map((t) => ({ channel: 'push' as const, recipient: t, payload: { t }, scope: 's' })),
      );
      expect(results.map((r) => r.delivery.status)).toEqual(['failed', 'pending']);
      await pollAndSettle(pipeline);
      expect(drivers[0]!.calls.map((c) => c.payload)).toEqual([{ t: live }]);
      expect((await pipeline.get(results[1]!.delivery.id)).status).toBe('sent');
    });

    it('when some addresses of an email are suppressed, the others get it and the record names the left-out ones', async () => {
      const { list, drivers, pipeline, registry } = setup('email');
      const [to1, to2, cc, bcc] = [
        uniqueAddress('a'),
        uniqueAddress('b'),
        uniqueAddress('c'),
        uniqueAddress('d'),
      ];
      await list.add({ channel: 'email', recipient: to2, reason: 'hard_bounce', source: 'receipt:x' });
      await list.add({ channel: 'email', recipient: bcc, reason: 'spam_complaint', source: 'receipt:x' });
      const payload = email([to1, to2], [cc], [bcc]);
      const { delivery } = await pipeline.submit({
        channel: 'email',
        recipient: [to1, to2, cc, bcc].join(', '),
        recipients: [to1, to2, cc, bcc],
        withoutRecipients: withoutSuppressed,
        payload,
        scope: 's',
      });
      expect(delivery.status).toBe('pending');
      expect(delivery.suppressedRecipients.sort()).toEqual(
        [to2, bcc].map((a) => `${a[0]}***@${a.split('@')[1]!.toLowerCase()}`).sort(),
      );
      expect(delivery.maskedRecipient.split(', ')).toHaveLength(2);
      await pollAndSettle(pipeline);
      const sent = drivers[0]!.calls[0]!.payload as OutboundEmail;
      expect(sent.to.map((a) => a.email)).toEqual([to1]);
      expect(sent.cc.map((a) => a.email)).toEqual([cc]);
      expect(sent.bcc).toEqual([]);
      expect((await pipeline.get(delivery.id)).suppressedRecipients).toHaveLength(2);
      expect(
        await metric(registry, 'notification_suppressed_sends_total', {
          channel: 'email',
          outcome: 'partial',
        }),
      ).toBe(1);
    });

    it('when every "to" address of an email is suppressed, the send is stopped even with copies left', async () => {
      const { list, drivers, pipeline } = setup('email');
      const [to, cc] = [uniqueAddress('t'), uniqueAddress('c')];
      await list.add({ channel: 'email', recipient: to, reason: 'unsubscribed', source: 'receipt:x' });
      const { delivery } = await pipeline.submit({
        channel: 'email',
        recipient: `${to}, ${cc}`,
        recipients: [to, cc],
        withoutRecipients: withoutSuppressed,
        payload: email([to], [cc]),
        scope: 's',
      });
      expect(delivery).toMatchObject({ status: 'failed', failure: 'recipient_suppressed' });
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
    });

    it('when a provider answers a recipient failure that says suppress, the recipient is added and the next send stopped', async () => {
      const { list, drivers, pipeline, registry } = setup('sms');
      const number = uniqueNumber();
      drivers[0]!.script({
        class: 'recipient_failure',
        failure: 'recipient_unsubscribed',
        suppress: 'unsubscribed',
        reason: 'STOP',
      });
      const first = await pipeline.submit({
        channel: 'sms',
        recipient: number,
        payload: { n: 1 },
        scope: 's',
      });
      await pollAndSettle(pipeline);
      expect(await pipeline.get(first.delivery.id)).toMatchObject({
        status: 'failed',
        failure: 'recipient_unsubscribed',
      });
      expect(await list.isSuppressed('sms', number)).toBe(true);
      const [entry] = (await list.list('sms', '', 500)).entries.filter(
        (e) => e.source === `provider_error:${drivers[0]!.name}`,
      );
      expect(entry).toMatchObject({ reason: 'unsubscribed' });
      expect(
        await metric(registry, 'notification_suppressions_added_total', {
          channel: 'sms',
          source: 'provider_error',
        }),
      ).toBe(1);
      const second = await pipeline.submit({
        channel: 'sms',
        recipient: number,
        payload: { n: 2 },
        scope: 's',
      });
      expect(second.delivery.failure).toBe('recipient_suppressed');
      await pollAndSettle(pipeline);
      // Neither the primary (again) nor the fallback backend saw the second send.
      expect(drivers[0]!.calls).toHaveLength(1);
      expect(drivers[1]!.calls).toHaveLength(0);
    });

    it('when a number is suppressed while its delivery waits to fail over, no backend is contacted again', async () => {
      const { list, drivers, pipeline, registry } = setup('sms');
      const number = uniqueNumber();
      drivers[0]!.script({ class: 'retryable', reason: 'provider down' });
      const { delivery } = await pipeline.submit({
        channel: 'sms',
        recipient: number,
        payload: { n: 1 },
        scope: 's',
      });
      await pollAndSettle(pipeline);
      // The retry was moved to the second backend, due at once.
      expect(await pipeline.get(delivery.id)).toMatchObject({
        status: 'retrying',
        backend: drivers[1]!.name,
      });
      await list.add({ channel: 'sms', recipient: number, reason: 'stop_keyword', source: 'inbound:t' });
      await pollAndSettle(pipeline);
      const stopped = await pipeline.get(delivery.id);
      expect(stopped).toMatchObject({
        status: 'failed',
        failure: 'recipient_suppressed',
        lastError: SUPPRESSED_ERROR,
        nextAttemptAt: null,
      });
      expect(stopped.attempts).toHaveLength(1);
      expect(drivers[0]!.calls).toHaveLength(1);
      expect(drivers[1]!.calls).toHaveLength(0);
      expect(
        await metric(registry, 'notification_suppressed_sends_total', { channel: 'sms', outcome: 'stopped' }),
      ).toBe(1);
    });

    it('when a recipient failure does not say suppress, nothing is added', async () => {
      const { list, drivers, pipeline } = setup('sms');
      const number = uniqueNumber();
      drivers[0]!.script({ class: 'recipient_failure', reason: 'invalid number' });
      await pipeline.submit({ channel: 'sms', recipient: number, payload: { n: 1 }, scope: 's' });
      await pollAndSettle(pipeline);
      expect(await list.isSuppressed('sms', number)).toBe(false);
    });

    /** An email submitted before any of its addresses was suppressed. */
    async function acceptedEmail(
      pipeline: DeliveryPipeline,
      to: string[],
      cc: string[] = [],
      bcc: string[] = [],
    ) {
      const all = [...to, ...cc, ...bcc];
      return pipeline.submit({
        channel: 'email',
        recipient: all.join(', '),
        recipients: all,
        withoutRecipients: withoutSuppressed,
        payload: email(to, cc, bcc),
        scope: 's',
      });
    }

    it('at claim, the same rule as at submit: a "to" suppressed after acceptance is left out, the others get it', async () => {
      const { list, drivers, pipeline, registry } = setup('email');
      const [to1, to2, cc] = [uniqueAddress('a'), uniqueAddress('b'), uniqueAddress('c')];
      const { delivery } = await acceptedEmail(pipeline, [to1, to2], [cc]);
      expect(delivery.suppressedRecipients).toEqual([]);
      await list.add({ channel: 'email', recipient: to2, reason: 'hard_bounce', source: 'receipt:x' });
      await pollAndSettle(pipeline);
      expect(drivers[0]!.calls).toHaveLength(1);
      const sent = drivers[0]!.calls[0]!.payload as OutboundEmail;
      expect(sent.to.map((a) => a.email)).toEqual([to1]);
      expect(sent.cc.map((a) => a.email)).toEqual([cc]);
      const record = await pipeline.get(delivery.id);
      expect(record.status).toBe('sent');
      expect(record.suppressedRecipients).toEqual([`b***@${to2.split('@')[1]!.toLowerCase()}`]);
      expect(record.maskedRecipient.split(', ')).toHaveLength(2);
      expect(
        await metric(registry, 'notification_suppressed_sends_total', {
          channel: 'email',
          outcome: 'partial',
        }),
      ).toBe(1);
    });

    it('at claim, an email whose every "to" was suppressed after acceptance is stopped, copies left or not', async () => {
      const { list, drivers, pipeline } = setup('email');
      const [to, cc, bcc] = [uniqueAddress('t'), uniqueAddress('c'), uniqueAddress('d')];
      const { delivery } = await acceptedEmail(pipeline, [to], [cc], [bcc]);
      await list.add({ channel: 'email', recipient: to, reason: 'unsubscribed', source: 'receipt:x' });
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
      expect(await pipeline.get(delivery.id)).toMatchObject({
        status: 'failed',
        failure: 'recipient_suppressed',
        lastError: SUPPRESSED_ERROR,
        attempts: [],
      });
    });

    /**
     * A pipeline with a backend on every channel; `queries` counts the store's lookups by channel
     * (on a database store, the lookups of one turn share one query per channel).
     */
    function setupChannels() {
      const clock = new ManualClock();
      const unreadable = { on: false };
      const queries: Channel[] = [];
      const store: SuppressionStore = {
        backend: backend.suppressions.backend,
        add: (entry) => backend.suppressions.add(entry),
        remove: (ch, r, keep) => backend.suppressions.remove(ch, r, keep),
        list: (q) => backend.suppressions.list(q),
        reasonsOf: (ch, recipients) => backend.suppressions.reasonsOf(ch, recipients),
        findSuppressed: (ch: Channel, recipients: readonly string[]) => {
          queries.push(ch);
          return unreadable.on
            ? Promise.reject(new Error('suppression list unavailable'))
            : backend.suppressions.findSuppressed(ch, recipients);
        },
      };
      const list = new Suppressions({ store, clock });
      const drivers = {
        email: new ScriptedDriver(newBackend('e'), 'email'),
        sms: new ScriptedDriver(newBackend('s'), 'sms'),
        push: new ScriptedDriver(newBackend('p'), 'push'),
      };
      const pipeline = new DeliveryPipeline({
        store: backend.deliveries,
        lookup: lookupOf(drivers.email, drivers.sms, drivers.push),
        config: testConfig({ routing: { email: 'fallback', sms: 'fallback', push: 'fallback' } }),
        clock,
        random: () => 0.5,
        suppression: list,
        withoutRecipients: { email: withoutSuppressed },
      });
      return { clock, list, drivers, pipeline, unreadable, queries };
    }

    /** Addresses with emoji, CJK and right-to-left text (an email address may hold them). */
    function wideAddress(prefix: string): string {
      return `${prefix}-😀-東京-שלום-${Math.random().toString(36).slice(2, 8)}@Example.COM`;
    }

    /** The sends of the multi-channel tests: suppressed and clear, single and multi-recipient. */
    /** What `mixedSends` lets through: the narrowed email to okTo and okCc only, the clear SMS and push. */
    function expectOnlyClearSent(
      drivers: ReturnType<typeof setupChannels>['drivers'],
      clear: { okTo: string; okCc: string; okNumber: string; liveToken: string },
    ): void {
      const sentEmails = drivers.email.calls.map((c) => c.payload as OutboundEmail);
      const narrowed = sentEmails.find((e) => e.cc.length > 0)!;
      expect(narrowed.to.map((a) => a.email)).toEqual([clear.okTo]);
      expect(narrowed.cc.map((a) => a.email)).toEqual([clear.okCc]);
      expect(narrowed.bcc).toEqual([]);
      expect(drivers.sms.calls.map((c) => c.payload)).toEqual([{ n: clear.okNumber }]);
      expect(drivers.push.calls.map((c) => c.payload)).toEqual([{ t: clear.liveToken }]);
    }

    async function mixedSends(list: Suppressions) {
      const [goneTo, okTo, okCc, goneBcc, loneGone, allGoneTo, keptCc] = [
        wideAddress('gone'),
        wideAddress('ok'),
        uniqueAddress('cc'),
        wideAddress('bcc'),
        wideAddress('lone'),
        wideAddress('allgone'),
        uniqueAddress('kept'),
      ];
      const [stopNumber, okNumber] = [uniqueNumber(), uniqueNumber()];
      const [deadToken, liveToken] = [`dead-🔔-東-ש-${newBackend('t')}`, `live-🔔-東-ש-${newBackend('t')}`];
      for (const [channel, recipient] of [
        ['email', goneTo],
        ['email', goneBcc],
        ['email', loneGone],
        ['email', allGoneTo],
        ['sms', stopNumber],
        ['push', deadToken],
      ] as const) {
        // An address added in another case: the list keeps it lower-cased (tokens are case-sensitive).
        const given = channel === 'email' ? recipient.toUpperCase() : recipient;
        await list.add({ channel, recipient: given, reason: 'manual', source: 'api:t' });
      }
      const emailOf = (to: string[], cc: string[] = [], bcc: string[] = []) => ({
        channel: 'email' as const,
        recipient: [...to, ...cc, ...bcc].join(', '),
        recipients: [...to, ...cc, ...bcc],
        withoutRecipients: withoutSuppressed,
        payload: email(to, cc, bcc),
        scope: 's',
      });
      const inputs = [
        emailOf([goneTo, okTo], [okCc], [goneBcc]), // 0: narrowed to okTo and okCc
        emailOf([loneGone]), // 1: stopped
        emailOf([okTo]), // 2: clear
        emailOf([allGoneTo], [keptCc]), // 3: stopped (no "to" left)
        { channel: 'sms' as const, recipient: stopNumber, payload: { n: stopNumber }, scope: 's' }, // 4: stopped
        { channel: 'sms' as const, recipient: okNumber, payload: { n: okNumber }, scope: 's' }, // 5: clear
        { channel: 'push' as const, recipient: deadToken, payload: { t: deadToken }, scope: 's' }, // 6: stopped
        { channel: 'push' as const, recipient: liveToken, payload: { t: liveToken }, scope: 's' }, // 7: clear
      ];
      return { inputs, okTo, okCc, goneTo, goneBcc, okNumber, liveToken };
    }

    it('when suppressed and clear sends on every channel are submitted in one turn, each gets its own verdict', async () => {
      const { list, drivers, pipeline, queries } = setupChannels();
      const { inputs, okTo, okCc, goneTo, goneBcc, okNumber, liveToken } = await mixedSends(list);
      queries.length = 0;
      const results = await Promise.all(inputs.map((input) => pipeline.submit(input)));
      expect(results.map((r) => r.delivery.status)).toEqual([
        'pending',
        'failed',
        'pending',
        'failed',
        'failed',
        'pending',
        'failed',
        'pending',
      ]);
      for (const i of [1, 3, 4, 6]) expect(results[i]!.delivery.failure).toBe('recipient_suppressed');
      expect(results[0]!.delivery.suppressedRecipients.sort()).toEqual(
        [goneTo, goneBcc].map((a) => `${a[0]}***@example.com`).sort(),
      );
      for (const i of [2, 5, 7]) expect(results[i]!.delivery.suppressedRecipients).toEqual([]);
      if (backend.suppressions.backend === 'database') {
        // The eight lookups of the turn: one query per channel.
        expect([...queries].sort()).toEqual(['email', 'push', 'sms']);
      }
      await pollAndSettle(pipeline);
      const sentEmails = drivers.email.calls.map((c) => c.payload as OutboundEmail);
      expect(sentEmails).toHaveLength(2);
      expectOnlyClearSent(drivers, { okTo, okCc, okNumber, liveToken });
    });

    it('when the list cannot be read, the sends of one turn are all accepted pending; the claim stops the suppressed ones', async () => {
      const { list, drivers, pipeline, unreadable, clock } = setupChannels();
      const { inputs, okTo, okCc, okNumber, liveToken } = await mixedSends(list);
      unreadable.on = true;
      const results = await Promise.all(inputs.map((input) => pipeline.submit(input)));
      expect(results.map((r) => [r.created, r.delivery.status])).toEqual(inputs.map(() => [true, 'pending']));
      for (const r of results) expect(r.delivery.suppressedRecipients).toEqual([]);
      // Claimed while the list is still down: deferred, nothing sent.
      await pollAndSettle(pipeline);
      expect(Object.values(drivers).flatMap((d) => d.calls)).toEqual([]);
      unreadable.on = false;
      clock.advance(10 * 60_000);
      await pollAndSettle(pipeline);
      const records = await Promise.all(results.map((r) => pipeline.get(r.delivery.id)));
      expect(records.map((r) => r.status)).toEqual([
        'sent',
        'failed',
        'sent',
        'failed',
        'failed',
        'sent',
        'failed',
        'sent',
      ]);
      for (const i of [1, 3, 4, 6]) {
        expect(records[i]).toMatchObject({ failure: 'recipient_suppressed', attempts: [] });
      }
      expectOnlyClearSent(drivers, { okTo, okCc, okNumber, liveToken });
    });

    it('at claim, a list that cannot be read defers the attempt: nothing is sent until it can, then the rule applies', async () => {
      const { list, drivers, pipeline, unreadable, clock } = setup('sms');
      const [stopNumber, okNumber] = [uniqueNumber(), uniqueNumber()];
      const stop = await pipeline.submit({
        channel: 'sms',
        recipient: stopNumber,
        payload: { n: 1 },
        scope: 's',
      });
      const ok = await pipeline.submit({
        channel: 'sms',
        recipient: okNumber,
        payload: { n: 2 },
        scope: 's',
      });
      await list.add({ channel: 'sms', recipient: stopNumber, reason: 'stop_keyword', source: 'inbound:t' });
      unreadable.on = true;
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
      for (const id of [stop.delivery.id, ok.delivery.id]) {
        const r = await pipeline.get(id);
        expect(r).toMatchObject({ status: 'pending', attempts: [] });
        // Deferred: a later attempt, not a busy loop on the same poll.
        expect(r.nextAttemptAt!.getTime()).toBeGreaterThan(clock.date().getTime());
      }
      // Due again, the list still down: still nothing sent.
      clock.advance(10 * 60_000);
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
      unreadable.on = false;
      clock.advance(10 * 60_000);
      await pollAndSettle(pipeline);
      expect(drivers[0]!.calls.map((c) => c.payload)).toEqual([{ n: 2 }]);
      expect(await pipeline.get(stop.delivery.id)).toMatchObject({
        status: 'failed',
        failure: 'recipient_suppressed',
        attempts: [],
      });
      expect((await pipeline.get(ok.delivery.id)).status).toBe('sent');
    });

    it('at submit, a list that cannot be read accepts the send unchecked; the claim-time check stops it before any provider', async () => {
      const { list, drivers, pipeline, unreadable, clock } = setup('sms');
      const number = uniqueNumber();
      await list.add({ channel: 'sms', recipient: number, reason: 'stop_keyword', source: 'inbound:t' });
      unreadable.on = true;
      const { delivery, created } = await pipeline.submit({
        channel: 'sms',
        recipient: number,
        payload: { n: 1 },
        scope: 's',
      });
      expect(created).toBe(true);
      expect(delivery.status).toBe('pending');
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
      unreadable.on = false;
      clock.advance(10 * 60_000);
      await pollAndSettle(pipeline);
      expect(drivers.flatMap((d) => d.calls)).toEqual([]);
      expect(await pipeline.get(delivery.id)).toMatchObject({
        status: 'failed',
        failure: 'recipient_suppressed',
        attempts: [],
      });
    });
  });
}
