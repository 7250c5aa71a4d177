/**
 * Scheduling and CancelNotification through the real service (Connect clients, the real inbox,
 * delivery pipeline, SMTP and SMS peers, the due runner polling): the wire fields of issue 26 —
 * `send_at` / `delay`, SCHEDULED / CANCELLED, and held, throttled and digested lines. The users,
 * preferences, templates and time-rule ports are the fakes of fakes.ts.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { randomUUID } from 'node:crypto';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  HoldReason,
  NotificationStatus,
  SkipReason,
} from '../../../shared/gen/svc/notification/v1/notify_pb';
import { TemplateChannel } from '../../../shared/gen/svc/notification/v1/templates_pb';
import type { QuietHoursEnd } from '../../../services/notification/users/types';
import { FakeCapLedger, FakeDigestBook } from './fakes';
import { startNotifyHarness, waitForAsync, type NotifyHarness } from './support';

let h: NotifyHarness;
const caps = new FakeCapLedger();
const digests = new FakeDigestBook({ now: () => Date.now(), monotonic: () => performance.now() }, 3_600_000);
/** Quiet for users whose id starts with "quiet-": until an hour from now. */
const QUIET_UNTIL = new Date(Date.now() + 3_600_000);
const quietHoursEnd: QuietHoursEnd = (quiet) => (quiet.windows.length > 0 ? QUIET_UNTIL : null);

beforeAll(async () => {
  h = await startNotifyHarness(
    {
      notify: {
        categories: [
          { name: 'comments', channels: ['inbox', 'email', 'sms'] },
          { name: 'digested', channels: ['inbox', 'email'], digest: { email: { window: '1h' } } },
        ],
      },
    } as never,
    { dueRunner: { pollMs: 50 }, notifyTiming: { caps, digests, quietHoursEnd } },
  );
  for (const category of ['comments', 'digested']) {
    h.renderer.set(category, 'inbox', 'en', { title: 'Hi {{ data.name }}', body: '{{ data.name }}' });
    h.renderer.set(category, 'email', 'en', { subject: 'Hi {{ data.name }}', text: '{{ data.name }}' });
  }
  h.renderer.set('comments', 'sms', 'en', { text: 'Hi {{ data.name }}' });
});

afterAll(async () => {
  await h?.close();
});

const data = { name: 'Zoë 😀 你好 שלום' };

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

function user(prefix = 'user') {
  return h.directory.add({
    userId: `${prefix}-${randomUUID()}`,
    emails: ['ana@example.com'],
    phones: ['+15550100001'],
  });
}

describe('scheduled Notify on the wire', () => {
  it('a delay gives SCHEDULED with send_at and no lines; when due the runner fans it out (FANNED_OUT, send_at kept)', async () => {
    const u = user();
    const before = Date.now();
    const { notification } = await h.notify.notify({
      userId: u.userId,
      category: 'comments',
      data,
      delay: { seconds: 1n, nanos: 0 },
    });
    expect(notification!.status).toBe(NotificationStatus.SCHEDULED);
    expect(notification!.channels).toEqual([]);
    const sendAt = timestampDate(notification!.sendAt!).getTime();
    expect(sendAt).toBeGreaterThanOrEqual(before + 1000);
    const got = await h.notify.getNotification({ id: notification!.id });
    expect(got.notification!.status).toBe(NotificationStatus.SCHEDULED);
    await waitForAsync(
      async () =>
        (await h.notify.getNotification({ id: notification!.id })).notification!.status ===
        NotificationStatus.FANNED_OUT,
      'the scheduled notification to fan out',
    );
    const done = (await h.notify.getNotification({ id: notification!.id })).notification!;
    expect(timestampDate(done.sendAt!).getTime()).toBe(sendAt);
    expect(done.channels.map((l) => [l.channel, l.skipped])).toEqual([
      [TemplateChannel.INBOX, SkipReason.UNSPECIFIED],
      [TemplateChannel.EMAIL, SkipReason.UNSPECIFIED],
      [TemplateChannel.SMS, SkipReason.UNSPECIFIED],
    ]);
    expect(done.channels.every((l) => l.messageId !== '')).toBe(true);
  });

  it('send_at and delay together, a negative delay and a time beyond max_schedule_ahead are INVALID_ARGUMENT', async () => {
    const u = user();
    const both = await refusal(
      h.notify.notify({
        userId: u.userId,
        category: 'comments',
        data,
        sendAt: timestampFromDate(new Date(Date.now() + 60_000)),
        delay: { seconds: 60n, nanos: 0 },
      }),
    );
    expect(both.code).toBe(Code.InvalidArgument);
    const negative = await refusal(
      h.notify.notify({ userId: u.userId, category: 'comments', data, delay: { seconds: -1n, nanos: 0 } }),
    );
    expect(negative.code).toBe(Code.InvalidArgument);
    const far = await refusal(
      h.notify.notify({
        userId: u.userId,
        category: 'comments',
        data,
        sendAt: timestampFromDate(new Date(Date.now() + 31 * 24 * 3_600_000)),
      }),
    );
    expect(far.code).toBe(Code.InvalidArgument);
    expect(far.rawMessage).toContain('max_schedule_ahead');
    expect((await h.notify.listNotifications({ userId: u.userId })).notifications).toEqual([]);
  });

  it('CancelNotification by idempotency key: CANCELLED, cancelled 1, nothing ever sent; again the same answer with 0; an unknown id is NOT_FOUND, neither id nor key INVALID_ARGUMENT', async () => {
    const u = user();
    const key = `k-${randomUUID()}`;
    const { notification } = await h.notify.notify({
      userId: u.userId,
      category: 'comments',
      data,
      idempotencyKey: key,
      delay: { seconds: 1n, nanos: 0 },
    });
    const first = await h.notify.cancelNotification({ idempotencyKey: key });
    expect(first.cancelled).toBe(1);
    expect(first.notification!.id).toBe(notification!.id);
    expect(first.notification!.status).toBe(NotificationStatus.CANCELLED);
    const again = await h.notify.cancelNotification({ id: notification!.id });
    expect(again.cancelled).toBe(0);
    expect(again.notification!.status).toBe(NotificationStatus.CANCELLED);
    expect((await refusal(h.notify.cancelNotification({ id: randomUUID() }))).code).toBe(Code.NotFound);
    expect((await refusal(h.notify.cancelNotification({}))).code).toBe(Code.InvalidArgument);
    await new Promise((r) => setTimeout(r, 1500));
    // Past its send time (the runner polls every 50 ms): nothing reached the user.
    expect((await h.running.app.inbox.getInbox(u.userId)).messages).toEqual([]);
    expect((await h.notify.getNotification({ id: notification!.id })).notification!.channels).toEqual([]);
  });
});

describe('held, throttled and digested lines on the wire', () => {
  it('a held line shows held_until and HOLD_REASON_QUIET_HOURS; a throttled one SKIP_REASON_THROTTLED with throttled_by; cancel makes the held line SKIP_REASON_CANCELLED', async () => {
    const quiet = h.directory.add({
      ...user('quiet'),
      quietHours: { windows: [{ days: [], start: '00:00', end: '23:59' }], holdEmail: false },
    });
    const { notification } = await h.notify.notify({ userId: quiet.userId, category: 'comments', data });
    const sms = notification!.channels.find((l) => l.channel === TemplateChannel.SMS)!;
    expect(sms.holdReason).toBe(HoldReason.QUIET_HOURS);
    expect(timestampDate(sms.heldUntil!).getTime()).toBe(QUIET_UNTIL.getTime());
    expect(sms.messageId).toBe('');
    const cancelled = await h.notify.cancelNotification({ id: notification!.id });
    expect(cancelled.cancelled).toBe(1);
    const line = cancelled.notification!.channels.find((l) => l.channel === TemplateChannel.SMS)!;
    expect(line.skipped).toBe(SkipReason.CANCELLED);
    expect(line.heldUntil).toBeUndefined();
    expect(line.holdReason).toBe(HoldReason.UNSPECIFIED);

    const capped = user();
    caps.limit('sms', 0, 'sms 0/1h', new Date(Date.now() + 3_600_000));
    const throttled = await h.notify.notify({ userId: capped.userId, category: 'comments', data });
    caps.limit('sms', 1_000_000, 'sms', new Date());
    const t = throttled.notification!.channels.find((l) => l.channel === TemplateChannel.SMS)!;
    expect(t.skipped).toBe(SkipReason.THROTTLED);
    expect(t.throttledBy).toBe('sms 0/1h');
  });

  it('a digested line shows digest_id', async () => {
    const u = user();
    const { notification } = await h.notify.notify({ userId: u.userId, category: 'digested', data });
    const email = notification!.channels.find((l) => l.channel === TemplateChannel.EMAIL)!;
    expect(email.digestId).not.toBe('');
    expect(digests.digests.get(email.digestId)).toMatchObject({ count: 1, status: 'open' });
  });
});
