import { ConfigError } from '../../../shared/config';
import { FailedPreconditionError } from '../../../shared/errors';
import { NotificationModule } from '../../../services/notification/channels/notification-module';

const SMS = {
  name: 'twilio',
  driver: 'sms_gateway' as const,
  sms_gateway: { account_sid: 'AC1', auth_token: 'secret-token', from_number: '+15550001111' },
};
const SMS_2 = { ...SMS, name: 'backup', primary: true };

describe('NotificationModule', () => {
  it('registers the SMS backends by name, and the primary serves unnamed use', async () => {
    const module = NotificationModule.configure({ sms_backends: [SMS, SMS_2] });
    try {
      expect(module.sms.names).toEqual(['twilio', 'backup']);
      expect(module.sms.get().name).toBe('backup');
      expect(module.sms.get('twilio').name).toBe('twilio');
      expect(module.push.names).toEqual([]);
    } finally {
      await module.close();
    }
  });

  it('with no backend marked primary, the first one serves unnamed use', async () => {
    const module = NotificationModule.configure({ sms_backends: [SMS, { ...SMS, name: 'second' }] });
    try {
      expect(module.sms.get().name).toBe('twilio');
    } finally {
      await module.close();
    }
  });

  it('stub() has no backends: a send fails with FAILED_PRECONDITION naming the channel', async () => {
    const module = NotificationModule.stub();
    expect(() => module.sms.get()).toThrow(new FailedPreconditionError('no SMS backend configured'));
    expect(() => module.push.get()).toThrow(new FailedPreconditionError('no push backend configured'));
    await module.close();
  });

  it('refuses an invalid section written in code with a ConfigError naming the key', () => {
    const bad = { ...SMS, sms_gateway: { ...SMS.sms_gateway, from_number: '555' } };
    let err: unknown;
    try {
      NotificationModule.configure({ sms_backends: [bad] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('notification.sms_backends[0].sms_gateway.from_number');
    expect((err as Error).message).not.toContain('secret-token');
  });
});
