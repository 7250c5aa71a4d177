/**
 * The Activity section on deliveries a Notify fan-out made (real app, SMTP and Twilio stand-ins):
 * each delivery carries the category and user, the category filter finds them, the timeline names
 * the notification, and the notification routes list it with its deliveries' timelines.
 */
import { CONSOLE_API_PATH } from '../../../../services/notification/admin/console/console-gateway';
import { waitForAsync, startNotifyHarness, type NotifyHarness } from '../../notify/support';
import { adminAuthConfig, operatorToken } from '../harness';

describe('console activity on Notify deliveries', () => {
  let h: NotifyHarness;
  let token: string;
  const userId = 'مستخدم-用户-😀';

  beforeAll(async () => {
    h = await startNotifyHarness({ admin: { auth: adminAuthConfig() } });
    token = await operatorToken('ops-ann');
    h.renderer.set('security', 'inbox', 'en', { title: 'Security notice', body: '{{ data.what }}' });
    h.renderer.set('security', 'email', 'en', { subject: 'Security notice', text: '{{ data.what }}' });
    h.renderer.set('security', 'sms', 'en', { text: 'Security: {{ data.what }}' });
    h.renderer.set('comments', 'email', 'en', { subject: 'Comment', text: '{{ data.what }}' });
  });
  afterAll(() => h?.close());

  const json = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${h.running.baseUrl}${CONSOLE_API_PATH}/activity/${path}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return (await res.json()) as T;
  };

  it('deliveries of a notification carry its category and user; the timeline and the notification routes show it', async () => {
    h.directory.add({ userId, emails: ['Ana@Example.com'], phones: ['+15551234567'] });
    h.directory.add({ userId: 'other-user', emails: ['other@example.com'] });
    const { notification } = await h.notify.notify({
      userId,
      category: 'security',
      data: { what: 'sign-in 😀 你好 שלום' },
    });
    await h.notify.notify({ userId: 'other-user', category: 'comments', data: { what: 'x' } });
    const id = notification!.id;
    type Row = { id: string; channel: string; category: string; user_id: string; status: string };
    let rows: Row[] = [];
    await waitForAsync(async () => {
      rows = (await json<{ items: Row[] }>(`deliveries?category=security&user=${encodeURIComponent(userId)}`))
        .items;
      return rows.length === 2 && rows.every((r) => r.status === 'sent');
    }, 'both deliveries sent');
    expect(rows.map((r) => [r.channel, r.category, r.user_id]).sort()).toEqual([
      ['email', 'security', userId],
      ['sms', 'security', userId],
    ]);
    expect((await json<{ items: Row[] }>('deliveries?user=other-user')).items.map((r) => r.category)).toEqual(
      ['comments'],
    );
    const byAddress = await json<{ items: Row[] }>(
      `deliveries?recipient=${encodeURIComponent(' ana@EXAMPLE.com ')}`,
    );
    expect(byAddress.items.map((r) => r.channel)).toEqual(['email']);

    const sms = rows.find((r) => r.channel === 'sms')!;
    const t = await json<{
      timeline: Array<{ kind: string }>;
      notification: {
        id: string;
        category: string;
        user_id: string;
        channels: Array<{ message_id: string | null }>;
      };
    }>(`deliveries/${sms.id}/timeline`);
    expect(t.notification).toMatchObject({ id, category: 'security', user_id: userId });
    expect(t.notification.channels.map((c) => c.message_id)).toContain(sms.id);
    expect(t.timeline.map((e) => e.kind)).toEqual(['notified', 'submitted', 'attempt', 'sent']);

    const list = await json<{ items: Array<{ id: string; delivery_ids: string[] }> }>(
      `notifications?user=${encodeURIComponent(userId)}&category=security`,
    );
    expect(list.items.map((n) => n.id)).toEqual([id]);
    expect([...list.items[0]!.delivery_ids].sort()).toEqual(rows.map((r) => r.id).sort());
    const one = await json<{ notification: { id: string }; deliveries: Array<{ timeline: unknown[] }> }>(
      `notifications/${id}`,
    );
    expect(one.notification.id).toBe(id);
    expect(one.deliveries).toHaveLength(2);
    expect(JSON.stringify(one)).not.toMatch(/ana@example\.com|1234567/i);
  });
});
