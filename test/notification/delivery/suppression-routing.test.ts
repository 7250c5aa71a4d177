/**
 * The suppression list is checked before a backend is chosen: with fallback routing over two real
 * SMTP mailers (smtp-server peers), a suppressed address reaches neither relay, while an ordinary
 * send in the same setup does fail over from the dead primary to the second relay.
 */
import { SmtpMailer } from '../../../services/notification/channels/email/smtp-mailer';
import { withoutSuppressed } from '../../../services/notification/channels/email/email-sender';
import { InMemoryDeliveryStore } from '../../../services/notification/delivery/memory-store';
import { DeliveryPipeline } from '../../../services/notification/delivery/pipeline';
import { Suppressions } from '../../../services/notification/delivery/suppression';
import { InMemorySuppressionStore } from '../../../services/notification/delivery/suppression-memory-store';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { FROM, outbound, smtpConfig } from '../channels/email/support';
import { ManualClock, lookupOf, pollAndSettle, testConfig } from './support';

describe('suppression with fallback routing over real SMTP relays', () => {
  let relays: SmtpPeer[];
  let mailers: SmtpMailer[];

  beforeEach(async () => {
    relays = [await startSmtpPeer(), await startSmtpPeer()];
    mailers = relays.map(
      (r, i) => new SmtpMailer({ name: `relay${i}`, fromEmail: FROM, config: smtpConfig(r.port) }),
    );
  });

  afterEach(async () => {
    for (const m of mailers) await m.close();
    for (const r of relays) await r.close();
  });

  function submission(to: string) {
    return {
      channel: 'email' as const,
      recipient: to,
      recipients: [to],
      withoutRecipients: withoutSuppressed,
      payload: outbound((m) => m.to(to).text('hi')),
      scope: 's',
    };
  }

  it('when the primary relay is down and an address is suppressed, neither relay is contacted for it', async () => {
    const clock = new ManualClock();
    const suppressions = new Suppressions({ store: new InMemorySuppressionStore(), clock: clock });
    const pipeline = new DeliveryPipeline({
      store: new InMemoryDeliveryStore(),
      lookup: lookupOf(...mailers),
      config: testConfig({ routing: { email: 'fallback', sms: 'primary', push: 'primary' } }),
      clock: clock,
      random: () => 0.5,
      suppression: suppressions,
    });
    await suppressions.add({
      channel: 'email',
      recipient: 'Bounced@Example.com',
      reason: 'hard_bounce',
      source: 'receipt:relay0',
    });
    await relays[0]!.stop();

    const stopped = await pipeline.submit(submission('bounced@example.com'));
    const control = await pipeline.submit(submission('fine@example.com'));
    await pollAndSettle(pipeline); // the control fails on relay0 and moves to relay1 at once
    await pollAndSettle(pipeline);

    expect(await pipeline.get(stopped.delivery.id)).toMatchObject({
      status: 'failed',
      failure: 'recipient_suppressed',
      attempts: [],
    });
    const sent = await pipeline.get(control.delivery.id);
    expect(sent).toMatchObject({ status: 'sent', backend: 'relay1' });
    expect(sent.attempts.map((a) => a.backend)).toEqual(['relay0', 'relay1']);
    expect(relays[1]!.received.map((m) => m.recipients)).toEqual([['fine@example.com']]);
    expect(relays[0]!.dataCount).toBe(0);
  });
});
