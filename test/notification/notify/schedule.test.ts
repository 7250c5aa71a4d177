/**
 * When to notify (issue 26), the notify area's rules with a fake clock: scheduled and delayed sends,
 * CancelNotification, the one runner of due work, and the fan-out's time rules (digest, quiet hours,
 * caps) over the real Notifier, FanOut, in-memory store and runners. The ports of the parts built
 * beside it (CapLedger, DigestBook, quietHoursEnd) and the send targets are the fakes of fakes.ts.
 */
import { randomUUID } from 'node:crypto';
import { NotifyConfigSchema } from '../../../services/notification/notify/config';
import { InMemoryNotificationStore } from '../../../services/notification/notify/memory-store';
import { Notifier, type NotifyInput } from '../../../services/notification/notify/notifier';
import { DueRunner } from '../../../services/notification/notify/schedule/due-runner';
import { TopicFanOut } from '../../../services/notification/notify/topic-fan-out';
import { isDomainError } from '../../../shared/errors';
import { MAX_THROTTLED_BY } from '../../../services/notification/notify/fan-out';
import { textLength, wellFormed } from '../../../shared/text/cut';
import { ManualClock } from '../../support/manual-clock';
import {
  FakeCapLedger,
  FakeDigestBook,
  FakeDirectory,
  FakePreferences,
  FakeRenderer,
  fakeQuietHoursEnd,
  fakeUnsubscribeHeaders,
  RecordingTargets,
} from './fakes';

const MINUTE = 60_000;

interface Setup {
  clock: ManualClock;
  store: InMemoryNotificationStore;
  directory: FakeDirectory;
  renderer: FakeRenderer;
  preferences: FakePreferences;
  targets: RecordingTargets;
  caps: FakeCapLedger;
  digests: FakeDigestBook;
  notifier: Notifier;
  runner: DueRunner;
  topics: TopicFanOut;
}

function setup(
  opts: { caps?: boolean; digests?: boolean; quiet?: boolean; categories?: unknown[] } = {},
): Setup {
  // 09:00 UTC on a Monday.
  const clock = new ManualClock(new Date('2026-11-30T09:00:00.000Z'));
  const store = new InMemoryNotificationStore(clock);
  const directory = new FakeDirectory();
  const renderer = new FakeRenderer();
  renderer.set('comments', 'inbox', 'en', { title: 'Comment by {{ data.author }}', body: '{{ data.text }}' });
  renderer.set('comments', 'inbox', 'es', {
    title: 'Comentario de {{ data.author }}',
    body: '{{ data.text }}',
  });
  renderer.set('comments', 'email', 'en', {
    subject: 'Comment by {{ data.author }}',
    text: '{{ data.text }}',
  });
  renderer.set('comments', 'sms', 'en', { text: '{{ data.author }}: {{ data.text }}' });
  renderer.set('comments', 'push', 'en', { title: '{{ data.author }}', body: '{{ data.text }}' });
  renderer.set('security', 'inbox', 'en', { title: 'Security', body: '{{ data.text }}' });
  renderer.set('security', 'sms', 'en', { text: 'Security: {{ data.text }}' });
  renderer.set('comments.digest', 'email', 'en', {
    subject: '{{ data.count }} new comments',
    text: '{% for e in data.events %}{{ e.author }}: {{ e.text }}\n{% endfor %}',
  });
  const targets = new RecordingTargets();
  const caps = new FakeCapLedger();
  const digests = new FakeDigestBook(clock);
  const config = NotifyConfigSchema.parse({
    max_schedule_ahead: '1d',
    categories: opts.categories ?? [
      { name: 'comments', channels: ['inbox', 'email', 'sms', 'push'] },
      { name: 'security', channels: ['inbox', 'sms'], required: true },
    ],
  });
  const preferences = new FakePreferences();
  const notifier = new Notifier({
    config,
    store,
    directory,
    preferences,
    renderer,
    unsubscribeHeaders: fakeUnsubscribeHeaders,
    targets,
    deliveries: { get: async (id: string) => ({ id, status: 'queued' }) as never },
    clock,
    ...(opts.caps ? { caps } : {}),
    ...(opts.digests ? { digests } : {}),
    ...(opts.quiet ? { quietHoursEnd: fakeQuietHoursEnd } : {}),
  });
  const runner = new DueRunner({ store, work: notifier, ...(opts.digests ? { digests } : {}) });
  const topics = new TopicFanOut({
    store,
    directory,
    fanOut: notifier.fanOut,
    category: (name) => notifier.category(name),
    pageSize: 10,
    clock,
  });
  return { clock, store, directory, renderer, preferences, targets, caps, digests, notifier, runner, topics };
}

const data = { author: 'Zoë 😀', text: '你好 שלום' };

function input(over: Partial<NotifyInput>): NotifyInput {
  return {
    userId: '',
    topic: '',
    category: 'comments',
    data,
    overrides: [],
    priority: 'normal',
    idempotencyKey: '',
    ...over,
  };
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (isDomainError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected the call to fail');
}

function addUser(
  s: Setup,
  over: Parameters<FakeDirectory['add']>[0] extends infer U ? Partial<U> : never = {},
) {
  return s.directory.add({
    userId: `user-${randomUUID()}`,
    emails: ['ana@example.com'],
    phones: ['+15550100001'],
    devices: [{ token: 'device-token-0123456789', platform: 'fcm', registeredAt: new Date() }],
    ...over,
  });
}

/** Runs the due runner until it finds nothing (a pass, as its loop does). */
async function drain(s: Setup): Promise<void> {
  while (await s.runner.runOnce()) {
    // next batch
  }
}

describe('scheduled and delayed Notify', () => {
  it('a delayed notification is SCHEDULED with its send_at and sends nothing until due; then the runner fans it out once', async () => {
    const s = setup();
    const user = addUser(s);
    const { notification } = await s.notifier.notify(
      input({ userId: user.userId, delayMs: 10 * MINUTE }),
      'c',
    );
    expect(notification.status).toBe('scheduled');
    expect(notification.sendAt).toEqual(new Date(s.clock.now() + 10 * MINUTE));
    expect(notification.channels).toEqual([]);
    await drain(s);
    expect(s.targets.sent).toEqual([]);
    s.clock.advance(10 * MINUTE - 1);
    await drain(s);
    expect(s.targets.sent).toEqual([]);
    s.clock.advance(1);
    await drain(s);
    expect(s.targets.sent.map((x) => x.channel).sort()).toEqual(['email', 'inbox', 'push', 'sms']);
    const after = await s.notifier.get(notification.id, 'c');
    expect(after.status).toBe('fanned_out');
    expect(after.sendAt).toEqual(notification.sendAt);
    expect(after.channels.map((l) => l.channel)).toEqual(['inbox', 'email', 'sms', 'push']);
    s.clock.advance(60 * MINUTE);
    await drain(s);
    expect(s.targets.sent).toHaveLength(4);
  });

  it('send_at in the future schedules; a send_at not in the future sends now (no send_at recorded)', async () => {
    const s = setup();
    const user = addUser(s);
    const at = new Date(s.clock.now() + 5 * MINUTE);
    const later = await s.notifier.notify(input({ userId: user.userId, sendAt: at }), 'c');
    expect(later.notification).toMatchObject({ status: 'scheduled', sendAt: at });
    const now = await s.notifier.notify(input({ userId: user.userId, sendAt: new Date(s.clock.now()) }), 'c');
    expect(now.notification.status).toBe('fanned_out');
    expect(now.notification.sendAt).toBeNull();
    expect(s.targets.of('inbox')).toHaveLength(1);
  });

  it('refuses both send_at and delay, a negative delay and a time beyond notify.max_schedule_ahead (INVALID_ARGUMENT), recording nothing', async () => {
    const s = setup();
    const user = addUser(s);
    const both = await refusal(
      s.notifier.notify(
        input({ userId: user.userId, sendAt: new Date(s.clock.now() + MINUTE), delayMs: MINUTE }),
        'c',
      ),
    );
    expect(both).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(both.message).toContain('at most one of send_at and delay');
    expect(await refusal(s.notifier.notify(input({ userId: user.userId, delayMs: -1 }), 'c'))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const far = await refusal(
      s.notifier.notify(input({ userId: user.userId, delayMs: 24 * 60 * MINUTE + 1 }), 'c'),
    );
    expect(far).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(far.message).toContain('max_schedule_ahead');
    // At the bound exactly: accepted.
    const edge = await s.notifier.notify(input({ userId: user.userId, delayMs: 24 * 60 * MINUTE }), 'c');
    expect(edge.notification.status).toBe('scheduled');
    expect((await s.notifier.list(user.userId, 'c')).notifications).toHaveLength(1);
  });

  it('validates and renders strictly at call time: a missing variable refuses the call and nothing is recorded', async () => {
    const s = setup();
    const user = addUser(s);
    const missing = await refusal(
      s.notifier.notify(input({ userId: user.userId, data: { author: 'x' }, delayMs: MINUTE }), 'c'),
    );
    expect(missing).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(missing.message).toContain('data.text');
    expect((await s.notifier.list(user.userId, 'c')).notifications).toEqual([]);
    expect(await refusal(s.notifier.notify(input({ userId: 'nobody', delayMs: MINUTE }), 'c'))).toMatchObject(
      {
        code: 'NOT_FOUND',
      },
    );
  });

  it('renders again when due, with the user as they are then (their locale and contact points)', async () => {
    const s = setup();
    const user = addUser(s, { locale: 'en' });
    await s.notifier.notify(input({ userId: user.userId, delayMs: MINUTE }), 'c');
    s.directory.add({ ...user, locale: 'es', phones: ['+15550100099'] });
    s.clock.advance(MINUTE);
    await drain(s);
    expect(s.targets.of('inbox')[0]!.title).toBe('Comentario de Zoë 😀');
    expect(s.targets.of('sms').map((x) => x.to)).toEqual(['+15550100099']);
  });

  it('a user deleted before the send time gets nothing; the notification ends with no lines', async () => {
    const s = setup();
    const user = addUser(s);
    const { notification } = await s.notifier.notify(input({ userId: user.userId, delayMs: MINUTE }), 'c');
    s.directory.users.delete(user.userId);
    s.clock.advance(MINUTE);
    await drain(s);
    expect(s.targets.sent).toEqual([]);
    expect(await s.notifier.get(notification.id, 'c')).toMatchObject({ status: 'fanned_out', channels: [] });
  });

  it('idempotency: the same key and schedule answers the same notification; another send_at or delay is ALREADY_EXISTS', async () => {
    const s = setup();
    const user = addUser(s);
    const key = `k-${randomUUID()}`;
    const first = await s.notifier.notify(
      input({ userId: user.userId, delayMs: MINUTE, idempotencyKey: key }),
      'c',
    );
    const again = await s.notifier.notify(
      input({ userId: user.userId, delayMs: MINUTE, idempotencyKey: key }),
      'c',
    );
    expect(again).toMatchObject({ created: false });
    expect(again.notification.id).toBe(first.notification.id);
    expect(
      await refusal(
        s.notifier.notify(input({ userId: user.userId, delayMs: 2 * MINUTE, idempotencyKey: key }), 'c'),
      ),
    ).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(
      await refusal(s.notifier.notify(input({ userId: user.userId, idempotencyKey: key }), 'c')),
    ).toMatchObject({ code: 'ALREADY_EXISTS' });
  });

  it('a scheduled topic notification starts its job only when due', async () => {
    const s = setup();
    const a = addUser(s);
    const b = addUser(s);
    s.directory.subscribe('launch', [a.userId, b.userId]);
    const { notification } = await s.notifier.notify(input({ topic: 'launch', delayMs: 5 * MINUTE }), 'c');
    expect(notification.status).toBe('scheduled');
    expect(await s.topics.runOnce()).toBe(false);
    expect(s.targets.sent).toEqual([]);
    s.clock.advance(5 * MINUTE);
    expect(await s.topics.runOnce()).toBe(true);
    expect(
      s.targets
        .of('inbox')
        .map((x) => x.userId)
        .sort(),
    ).toEqual([a.userId, b.userId].sort());
    expect((await s.notifier.get(notification.id, 'c')).status).toBe('fanned_out');
  });
});

describe('CancelNotification', () => {
  it('a SCHEDULED notification becomes CANCELLED (1) and never fans out; again the same answer with 0; by idempotency key too', async () => {
    const s = setup();
    const user = addUser(s);
    const key = `k-${randomUUID()}`;
    const { notification } = await s.notifier.notify(
      input({ userId: user.userId, delayMs: MINUTE, idempotencyKey: key }),
      'c',
    );
    const first = await s.notifier.cancel({ id: notification.id, idempotencyKey: '' }, 'c');
    expect(first.cancelled).toBe(1);
    expect(first.notification.status).toBe('cancelled');
    s.clock.advance(2 * MINUTE);
    await drain(s);
    expect(s.targets.sent).toEqual([]);
    const again = await s.notifier.cancel({ id: '', idempotencyKey: key }, 'c');
    expect(again.cancelled).toBe(0);
    expect(again.notification).toEqual(first.notification);
  });

  it('another caller’s notification is NOT_FOUND; neither or both of id and key is INVALID_ARGUMENT', async () => {
    const s = setup();
    const user = addUser(s);
    const { notification } = await s.notifier.notify(input({ userId: user.userId, delayMs: MINUTE }), 'c');
    expect(
      await refusal(s.notifier.cancel({ id: notification.id, idempotencyKey: '' }, 'other')),
    ).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await refusal(s.notifier.cancel({ id: '', idempotencyKey: 'nope' }, 'c'))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await refusal(s.notifier.cancel({ id: '', idempotencyKey: '' }, 'c'))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await refusal(s.notifier.cancel({ id: notification.id, idempotencyKey: 'k' }, 'c'))).toMatchObject(
      {
        code: 'INVALID_ARGUMENT',
      },
    );
    expect(await refusal(s.notifier.cancel({ id: 'not-a-uuid', idempotencyKey: '' }, 'c'))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect((await s.notifier.get(notification.id, 'c')).status).toBe('scheduled');
  });

  it('a cancelled scheduled topic notification never starts its job', async () => {
    const s = setup();
    const a = addUser(s);
    s.directory.subscribe('news', [a.userId]);
    const { notification } = await s.notifier.notify(input({ topic: 'news', delayMs: MINUTE }), 'c');
    expect((await s.notifier.cancel({ id: notification.id, idempotencyKey: '' }, 'c')).cancelled).toBe(1);
    s.clock.advance(MINUTE);
    expect(await s.topics.runOnce()).toBe(false);
    expect(s.targets.sent).toEqual([]);
    expect((await s.notifier.get(notification.id, 'c')).status).toBe('cancelled');
  });
});

/** A user whose quiet hours cover 08:00-10:00 UTC (the fake rule reads windows within one UTC day). */
function quietUser(s: Setup, holdEmail = false) {
  return addUser(s, { quietHours: { windows: [{ days: [], start: '08:00', end: '10:00' }], holdEmail } });
}

describe('time rules: quiet hours', () => {
  it('SMS and push are HELD until the window ends, the inbox and email go at once; the runner releases them then and clears the hold', async () => {
    const s = setup({ quiet: true });
    const user = quietUser(s);
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    const end = new Date('2026-11-30T10:00:00.000Z');
    expect(notification.channels.map((l) => [l.channel, l.heldUntil ?? null, l.holdReason ?? null])).toEqual([
      ['inbox', null, null],
      ['email', null, null],
      ['sms', end, 'quiet_hours'],
      ['push', end, 'quiet_hours'],
    ]);
    expect(s.targets.sent.map((x) => x.channel).sort()).toEqual(['email', 'inbox']);
    s.clock.advance(59 * MINUTE);
    await drain(s);
    expect(s.targets.of('sms')).toEqual([]);
    s.clock.advance(MINUTE);
    await drain(s);
    expect(s.targets.of('sms')).toHaveLength(1);
    expect(s.targets.of('push')).toHaveLength(1);
    const after = await s.notifier.get(notification.id, 'c');
    expect(after.channels.map((l) => [l.channel, l.heldUntil ?? null, l.messageId !== null])).toEqual([
      ['inbox', null, true],
      ['email', null, true],
      ['sms', null, true],
      ['push', null, true],
    ]);
    expect(after.channels[2]!.contact).not.toBe('');
    // Released once: nothing more later.
    s.clock.advance(24 * 60 * MINUTE);
    await drain(s);
    expect(s.targets.sent).toHaveLength(4);
  });

  it('email is held too when the user says so (holdEmail)', async () => {
    const s = setup({ quiet: true });
    const user = quietUser(s, true);
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    expect(notification.channels.find((l) => l.channel === 'email')).toMatchObject({
      holdReason: 'quiet_hours',
    });
    expect(s.targets.of('email')).toEqual([]);
  });

  it('CRITICAL and a required category go at once inside quiet hours', async () => {
    const s = setup({ quiet: true });
    const user = quietUser(s);
    await s.notifier.notify(input({ userId: user.userId, priority: 'critical' }), 'c');
    expect(s.targets.of('sms')).toHaveLength(1);
    await s.notifier.notify(input({ userId: user.userId, category: 'security' }), 'c');
    expect(s.targets.of('sms')).toHaveLength(2);
  });

  it('a held line of a user deleted before the release sends nothing', async () => {
    const s = setup({ quiet: true });
    const user = quietUser(s);
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    s.directory.users.delete(user.userId);
    s.clock.advance(60 * MINUTE);
    await drain(s);
    expect(s.targets.of('sms')).toEqual([]);
    const after = await s.notifier.get(notification.id, 'c');
    expect(after.channels.find((l) => l.channel === 'sms')).toMatchObject({
      heldUntil: null,
      error: 'user deleted',
    });
  });

  it('a scheduled notification due inside quiet hours is held from its send time', async () => {
    const s = setup({ quiet: true });
    const user = quietUser(s);
    s.clock.advance(-2 * 60 * MINUTE); // 07:00
    await s.notifier.notify(input({ userId: user.userId, delayMs: 90 * MINUTE }), 'c');
    s.clock.advance(90 * MINUTE); // 08:30: quiet
    await drain(s);
    expect(s.targets.sent.map((x) => x.channel).sort()).toEqual(['email', 'inbox']);
    s.clock.advance(90 * MINUTE); // 10:00
    await drain(s);
    expect(s.targets.of('sms')).toHaveLength(1);
  });

  it('cancel takes held lines back (SKIP_REASON_CANCELLED), the sent ones keep their delivery, and nothing goes at the window’s end', async () => {
    const s = setup({ quiet: true });
    const user = quietUser(s);
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    const result = await s.notifier.cancel({ id: notification.id, idempotencyKey: '' }, 'c');
    expect(result.cancelled).toBe(2);
    expect(result.notification.channels.map((l) => [l.channel, l.skipped, l.messageId !== null])).toEqual([
      ['inbox', null, true],
      ['email', null, true],
      ['sms', 'cancelled', false],
      ['push', 'cancelled', false],
    ]);
    s.clock.advance(2 * 60 * MINUTE);
    await drain(s);
    expect(s.targets.of('sms')).toEqual([]);
    expect((await s.notifier.cancel({ id: notification.id, idempotencyKey: '' }, 'c')).cancelled).toBe(0);
  });
});

describe('time rules: caps', () => {
  it('a throttling cap skips the line THROTTLED with the cap; the inbox still has the message', async () => {
    const s = setup({ caps: true });
    const user = addUser(s);
    s.caps.limit('sms', 1, 'sms 1/1h', new Date(s.clock.now() + 60 * MINUTE));
    await s.notifier.notify(input({ userId: user.userId }), 'c');
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    expect(notification.channels.find((l) => l.channel === 'sms')).toMatchObject({
      skipped: 'throttled',
      throttledBy: 'sms 1/1h',
      messageId: null,
    });
    expect(s.targets.of('sms')).toHaveLength(1);
    expect(s.targets.of('inbox')).toHaveLength(2);
  });

  it('a deferring category holds the line until the next free slot (CAP_DEFERRED); the runner sends it then', async () => {
    const s = setup({
      caps: true,
      categories: [{ name: 'comments', channels: ['inbox', 'email', 'sms', 'push'], on_cap: 'defer' }],
    });
    const user = addUser(s);
    const free = new Date(s.clock.now() + 30 * MINUTE);
    s.caps.limit('sms', 1, 'sms 1/1h', free);
    await s.notifier.notify(input({ userId: user.userId }), 'c');
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    expect(notification.channels.find((l) => l.channel === 'sms')).toMatchObject({
      heldUntil: free,
      holdReason: 'cap_deferred',
    });
    // Released at the slot but the cap is still full (another send took it): held again to the next.
    const next = new Date(free.getTime() + 30 * MINUTE);
    s.caps.limit('sms', 1, 'sms 1/1h', next);
    s.clock.advance(30 * MINUTE);
    await drain(s);
    expect(s.targets.of('sms')).toHaveLength(1);
    expect(
      (await s.notifier.get(notification.id, 'c')).channels.find((l) => l.channel === 'sms'),
    ).toMatchObject({ heldUntil: next, holdReason: 'cap_deferred' });
    s.clock.advance(30 * MINUTE);
    s.caps.free();
    await drain(s);
    expect(s.targets.of('sms')).toHaveLength(2);
    const after = await s.notifier.get(notification.id, 'c');
    expect(after.channels.find((l) => l.channel === 'sms')).toMatchObject({
      heldUntil: null,
      holdReason: null,
    });
  });

  it('throttled_by is cut at MAX_THROTTLED_BY code points, never inside a surrogate pair', async () => {
    const s = setup({ caps: true });
    const user = addUser(s);
    s.caps.limit('sms', 0, '😀字ש'.repeat(100), new Date(s.clock.now() + MINUTE));
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    const by = notification.channels.find((l) => l.channel === 'sms')!.throttledBy!;
    expect(textLength(by, 'code_point')).toBe(MAX_THROTTLED_BY);
    expect(wellFormed(by)).toBe(by);
  });

  it('CRITICAL, required categories and the inbox never take from a cap', async () => {
    const s = setup({ caps: true });
    const user = addUser(s);
    await s.notifier.notify(input({ userId: user.userId, priority: 'critical' }), 'c');
    await s.notifier.notify(input({ userId: user.userId, category: 'security' }), 'c');
    expect(s.caps.taken).toEqual([]);
    await s.notifier.notify(input({ userId: user.userId }), 'c');
    expect(s.caps.taken.map((k) => k.split('/')[1]).sort()).toEqual(['email', 'push', 'sms']);
  });

  it('a cap ledger failing is recorded on its line ("internal error"); the other channels go on', async () => {
    const s = setup({ caps: true });
    const user = addUser(s);
    s.caps.take = async (_userId, channel) => {
      if (channel === 'sms') throw new Error('ledger down');
      return { taken: true };
    };
    const { notification } = await s.notifier.notify(input({ userId: user.userId }), 'c');
    expect(notification.channels.find((l) => l.channel === 'sms')).toMatchObject({
      contact: '',
      messageId: null,
      skipped: null,
      error: 'internal error',
    });
    expect(s.targets.sent.map((x) => x.channel).sort()).toEqual(['email', 'inbox', 'push']);
  });

  it('quiet hours come before caps: a held line takes no cap slot until it is released', async () => {
    const s = setup({ caps: true, quiet: true });
    const user = quietUser(s);
    await s.notifier.notify(input({ userId: user.userId }), 'c');
    expect(s.caps.taken.map((k) => k.split('/')[1])).toEqual(['email']);
    s.clock.advance(60 * MINUTE);
    await drain(s);
    expect(s.caps.taken.map((k) => k.split('/')[1]).sort()).toEqual(['email', 'push', 'sms']);
  });
});

describe('time rules: digests', () => {
  const digestCategories = [
    {
      name: 'comments',
      channels: ['inbox', 'email', 'sms'],
      digest: { email: { window: '15m', key: 'thread' } },
    },
  ];

  it('digested lines show the digest; events of one key make one digest, rendered by the digest template with the events oldest first and their count, sent once; the inbox gets each', async () => {
    const s = setup({ digests: true, categories: digestCategories });
    const user = addUser(s);
    const ids: string[] = [];
    for (const [i, author] of ['Ana 😀', 'Ben 字', 'Dov ש'].entries()) {
      const { notification } = await s.notifier.notify(
        input({ userId: user.userId, data: { author, text: `t${i}`, thread: 7 } }),
        'c',
      );
      ids.push(notification.id);
      s.clock.advance(MINUTE);
    }
    const other = await s.notifier.notify(
      input({ userId: user.userId, data: { author: 'Eve', text: 'x', thread: 'other' } }),
      'c',
    );
    const first = await s.notifier.get(ids[0]!, 'c');
    const line = first.channels.find((l) => l.channel === 'email')!;
    expect(line).toMatchObject({ contact: '', messageId: null, skipped: null });
    expect(line.digestId).toBeTruthy();
    expect(other.notification.channels.find((l) => l.channel === 'email')!.digestId).not.toBe(line.digestId);
    expect(s.targets.of('inbox')).toHaveLength(4);
    expect(s.targets.of('sms')).toHaveLength(4);
    expect(s.targets.of('email')).toEqual([]);
    s.clock.advance(15 * MINUTE);
    await drain(s);
    const emails = s.targets.of('email');
    expect(emails).toHaveLength(2);
    const three = emails.find((e) => e.subject === '3 new comments')!;
    expect(three.text).toBe('Ana 😀: t0\nBen 字: t1\nDov ש: t2\n');
    expect(s.digests.digests.get(line.digestId!)).toMatchObject({ status: 'sent', messageId: three.id });
    // GetNotification shows the digest's delivery on each digested line once it went.
    for (const id of ids) {
      const got = await s.notifier.get(id, 'c');
      expect(got.channels.find((l) => l.channel === 'email')).toMatchObject({
        digestId: line.digestId,
        messageId: three.id,
      });
    }
  });

  it('a due digest inside quiet hours is deferred to the window’s end; a throttling cap finishes it with the error', async () => {
    const s = setup({ digests: true, quiet: true, caps: true, categories: digestCategories });
    const user = quietUser(s, true);
    const { notification } = await s.notifier.notify(
      input({ userId: user.userId, data: { ...data, thread: 1 } }),
      'c',
    );
    const digestId = notification.channels.find((l) => l.channel === 'email')!.digestId!;
    s.clock.advance(15 * MINUTE); // 09:15: quiet until 10:00
    await drain(s);
    expect(s.digests.digests.get(digestId)).toMatchObject({
      status: 'open',
      flushAt: new Date('2026-11-30T10:00:00.000Z'),
    });
    expect(s.targets.of('email')).toEqual([]);
    s.caps.limit('email', 0, 'email 0/1h', new Date(s.clock.now() + 60 * MINUTE));
    s.clock.advance(45 * MINUTE);
    await drain(s);
    expect(s.digests.digests.get(digestId)).toMatchObject({
      status: 'sent',
      messageId: null,
      error: 'throttled by email 0/1h',
    });
    expect(s.targets.of('email')).toEqual([]);
    // GetNotification says why the digested line sent nothing.
    const got = await s.notifier.get(notification.id, 'c');
    expect(got.channels.find((l) => l.channel === 'email')).toMatchObject({
      digestId,
      messageId: null,
      error: 'throttled by email 0/1h',
    });
  });

  it('a due digest of a channel the user turned off since finishes with the reason, nothing sent', async () => {
    const s = setup({ digests: true, categories: digestCategories });
    const user = addUser(s);
    const { notification } = await s.notifier.notify(
      input({ userId: user.userId, data: { ...data, thread: 1 } }),
      'c',
    );
    const digestId = notification.channels.find((l) => l.channel === 'email')!.digestId!;
    s.preferences.turnOff(user.userId, 'comments', 'email');
    s.clock.advance(15 * MINUTE);
    await drain(s);
    expect(s.digests.digests.get(digestId)).toMatchObject({
      status: 'sent',
      error: 'turned off by the user',
    });
    expect(s.targets.of('email')).toEqual([]);
  });

  it('no digest template for the locale chain: the digest finishes with an error, nothing sent', async () => {
    const s = setup({ digests: true, categories: digestCategories });
    s.renderer.templates.delete('comments.digest/email/en');
    const user = addUser(s);
    const { notification } = await s.notifier.notify(
      input({ userId: user.userId, data: { ...data, thread: 1 } }),
      'c',
    );
    const digestId = notification.channels.find((l) => l.channel === 'email')!.digestId!;
    s.clock.advance(15 * MINUTE);
    await drain(s);
    expect(s.digests.digests.get(digestId)!.status).toBe('sent');
    expect(s.digests.digests.get(digestId)!.error).toContain('no digest template');
    expect(s.targets.of('email')).toEqual([]);
  });

  it('the digest key is the named data field (stringified), or the category when the field is absent; CRITICAL is never digested', async () => {
    const s = setup({ digests: true, categories: digestCategories });
    const user = addUser(s);
    await s.notifier.notify(input({ userId: user.userId, data: { ...data, thread: { id: 'ת-1' } } }), 'c');
    await s.notifier.notify(input({ userId: user.userId, data }), 'c');
    expect([...s.digests.digests.values()].map((d) => d.key).sort()).toEqual(['comments', '{"id":"ת-1"}']);
    await s.notifier.notify(
      input({ userId: user.userId, data: { ...data, thread: 2 }, priority: 'critical' }),
      'c',
    );
    expect(s.targets.of('email')).toHaveLength(1);
  });

  it('cancel takes a notification’s event out of its open digest and its line is CANCELLED; the digest then sends without it', async () => {
    const s = setup({ digests: true, categories: digestCategories });
    const user = addUser(s);
    const keep = await s.notifier.notify(
      input({ userId: user.userId, data: { author: 'A', text: 'keep', thread: 1 } }),
      'c',
    );
    const drop = await s.notifier.notify(
      input({ userId: user.userId, data: { author: 'B', text: 'drop', thread: 1 } }),
      'c',
    );
    const result = await s.notifier.cancel({ id: drop.notification.id, idempotencyKey: '' }, 'c');
    expect(result.cancelled).toBe(1);
    expect(result.notification.channels.find((l) => l.channel === 'email')).toMatchObject({
      skipped: 'cancelled',
    });
    s.clock.advance(15 * MINUTE);
    await drain(s);
    expect(s.targets.of('email').map((e) => e.subject)).toEqual(['1 new comments']);
    expect(s.targets.of('email')[0]!.text).toBe('A: keep\n');
    const kept = await s.notifier.get(keep.notification.id, 'c');
    expect(kept.channels.find((l) => l.channel === 'email')!.messageId).toBe(s.targets.of('email')[0]!.id);
    // Once the digest went, a cancel takes nothing back.
    expect((await s.notifier.cancel({ id: keep.notification.id, idempotencyKey: '' }, 'c')).cancelled).toBe(
      0,
    );
  });
});

describe('the due runner', () => {
  it('stopped while working, it finishes what it holds (saved, lease given back) and takes nothing more', async () => {
    const s = setup();
    const user = addUser(s);
    for (let i = 0; i < 3; i++) await s.notifier.notify(input({ userId: user.userId, delayMs: MINUTE }), 'c');
    s.clock.advance(MINUTE);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const runner = new DueRunner({
      store: s.store,
      work: {
        runDue: async (due, owner) => {
          started++;
          await gate;
          await s.notifier.runDue(due, owner);
        },
        sendDigest: async () => undefined,
      },
      batch: 1,
      concurrency: 1,
      pollMs: 60_000,
    });
    runner.start();
    await waitUntil(() => started === 1);
    const stopped = runner.stop();
    release();
    await stopped;
    expect(started).toBe(1);
    const all = (await s.notifier.list(user.userId, 'c')).notifications;
    expect(all.map((n) => n.status).sort()).toEqual(['fanned_out', 'scheduled', 'scheduled']);
    // Nothing leased is left behind: another runner takes the other two at once.
    await drain(s);
    expect(
      (await s.notifier.list(user.userId, 'c')).notifications.every((n) => n.status === 'fanned_out'),
    ).toBe(true);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setImmediate(r));
  if (!condition()) throw new Error('condition never held');
}
