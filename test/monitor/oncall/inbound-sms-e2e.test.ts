/**
 * Acknowledging by SMS end to end: the real notification process (dist, its own PostgreSQL database)
 * receives a signed inbound webhook `ACK 4821`; the monitor (in-process, on its own PostgreSQL
 * database, `oncall.inbound_sms` enabled with a fake PageAcknowledger) reads it from WatchInboundSms
 * and calls acknowledgeByCode('4821', '+1555...') once. The same webhook replayed calls nothing; a
 * reply that arrives while the monitor is down is acknowledged after its restart, and nothing handled
 * before the restart is handled again. Build first (`npm run build`).
 */
import { randomBytes } from 'node:crypto';
import type { AckOutcome, PageAcknowledger } from '../../../services/monitor/oncall/ports';
import { createTestDatabase } from '../../support/database';
import { startMonitorOnDatabase, type RunningMonitorApp } from '../../support/monitor-app';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { SMS_BACKEND, smsServiceEnv } from '../../support/sms-service';
import { until, waitFor } from '../../support/wait';
import { postSignedForm } from '../../notification/channels/sms/twilio-peer';

const TOKEN = 'monitor-inbound-token-0123456789abcdef';
const FROM = '+15551230001';

class RecordingAcknowledger implements PageAcknowledger {
  readonly calls: Array<[string, string]> = [];
  async acknowledgeByCode(code: string, from: string): Promise<AckOutcome> {
    this.calls.push([code, from]);
    return 'acknowledged';
  }
}

describe('ACK <code> by SMS, from the notification process to the monitor', () => {
  let notificationDb: { url: string; drop(): Promise<void> };
  let monitorDb: { url: string; drop(): Promise<void> };
  let notification: ServiceProcess;
  let monitor: RunningMonitorApp | undefined;
  const acks = new RecordingAcknowledger();

  beforeAll(async () => {
    [notificationDb, monitorDb] = await Promise.all([
      createTestDatabase('ack_notification'),
      createTestDatabase('ack_monitor'),
    ]);
    notification = await startServiceProcess('notification', {
      SVC_NOTIFICATION__SERVER__API_TOKENS: JSON.stringify([
        { name: 'monitor', token: TOKEN, scopes: ['sms:inbound'] },
      ]),
      SVC_NOTIFICATION__DATABASE__URL: notificationDb.url,
      SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'database',
      ...smsServiceEnv({ baseUrl: 'http://127.0.0.1:9' }),
    });
  });

  afterAll(async () => {
    await monitor?.close();
    await notification?.stop();
    await notificationDb?.drop();
    await monitorDb?.drop();
  });

  const startMonitor = () =>
    startMonitorOnDatabase(
      monitorDb.url,
      {
        oncall: {
          inbound_sms: {
            enabled: true,
            grpc_address: `127.0.0.1:${notification.grpcPort}`,
            api_token: TOKEN,
            reconnect_min_ms: 50,
            reconnect_max_ms: 500,
          },
        },
      },
      undefined,
      { pageAcknowledger: acks },
    );

  /** The id the monitor keeps, from its database. */
  async function cursor(m: RunningMonitorApp): Promise<number | null> {
    const { rows } = (await m.app.storage!.knex.raw('SELECT after_id FROM oncall_inbound_sms_cursor')) as {
      rows: { after_id: number }[];
    };
    return rows[0]?.after_id ?? null;
  }

  /** Posts an inbound SMS to the notification process's webhook, signed as Twilio signs it. */
  async function inbound(body: string, messageSid = `SM${randomBytes(16).toString('hex')}`) {
    const url = `http://127.0.0.1:${notification.httpPort}/webhooks/sms/${SMS_BACKEND}/inbound`;
    const answer = await postSignedForm(url, url, {
      MessageSid: messageSid,
      From: FROM,
      To: '+15550001111',
      Body: body,
    });
    expect(answer.status).toBe(200);
    return messageSid;
  }

  it('ACK 4821 is acknowledged once; the replayed webhook calls nothing more', async () => {
    monitor = await startMonitor();
    const m = monitor;
    // Connected: the first connection's live id is kept.
    await until(async () => (await cursor(m)) !== null, 'the consumer connected', 60_000);
    const sid = await inbound('ACK 4821');
    await waitFor(() => acks.calls.length === 1, 'the acknowledgment', 30_000);
    expect(acks.calls).toEqual([['4821', FROM]]);
    // The same signed request again, then a plain reply: the stream is ordered, so once the plain
    // reply is handled, a replayed ACK would have been too.
    await inbound('ACK 4821', sid);
    const handled = m.app.inboundSms!.handledCount;
    await inbound('thanks, looking');
    await waitFor(() => m.app.inboundSms!.handledCount === handled + 1, 'the plain reply', 30_000);
    expect(acks.calls).toEqual([['4821', FROM]]);
  });

  it('after a restart nothing is handled twice, and a reply sent while the monitor was down is acknowledged', async () => {
    const before = await cursor(monitor!);
    await monitor!.close();
    monitor = undefined;
    await inbound('ＡＣＫ　７７７７');
    monitor = await startMonitor();
    const m = monitor;
    await waitFor(() => acks.calls.length === 2, 'the acknowledgment after the restart', 30_000);
    expect(acks.calls).toEqual([
      ['4821', FROM],
      ['7777', FROM],
    ]);
    // Only the one message after the kept id was read again.
    expect(m.app.inboundSms!.handledCount).toBe(1);
    await until(async () => (await cursor(m))! > before!, 'the cursor moved on', 30_000);
  });
});
