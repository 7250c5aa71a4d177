/**
 * Validated once, at the loader: one E.164 rule, one "unique names" refinement, one ZodError ->
 * ConfigError for sections written in code, and channels take the loader's validated sections as they
 * are instead of parsing them again.
 */
import { z } from 'zod';
import { ConfigError, e164, parseSectionInCode, uniqueNames } from '../../../shared/config';
import { isE164 } from '../../../shared/text/e164';
import { loadNotificationConfig } from '../../../services/notification/config';
import { MailerConfigSchema } from '../../../services/notification/channels/email/config';
import { SmsBackendsSchema } from '../../../services/notification/channels/sms/config';
import { MailerModule } from '../../../services/notification/channels/email/mailer-module';
import { NotificationModule } from '../../../services/notification/channels/notification-module';
import { SmsChannel } from '../../../services/notification/channels/sms/sms-channel';
import { checkSmsNumber } from '../../../services/notification/channels/sms/sms-message';
import { normaliseRecipient } from '../../../services/notification/delivery/suppression';

const smsGateway = { account_sid: 'AC123', auth_token: '<AUTH_TOKEN>', from_number: '+15551234567' };

describe('one E.164 rule', () => {
  it.each(['+15551234567', '+12', '+861234567890123'])('%s is E.164 for config, SMS and suppression', (n) => {
    expect(isE164(n)).toBe(true);
    expect(e164().safeParse(n).success).toBe(true);
    expect(checkSmsNumber(n, 'to')).toBe(n);
    expect(normaliseRecipient('sms', n, 'recipient')).toBe(n);
  });

  it.each(['15551234567', '+0123', '+1', '+1234567890123456', '+1 555', '+١٢٣٤', '+1555😀'])(
    '%s is not E.164 anywhere',
    (n) => {
      expect(isE164(n)).toBe(false);
      expect(e164().safeParse(n).success).toBe(false);
      expect(() => checkSmsNumber(n, 'to')).toThrow(/E\.164/);
    },
  );
});

describe('one unique-names refinement', () => {
  it('names the duplicate entry and the one it repeats', () => {
    const schema = z.array(z.object({ name: z.string() })).superRefine(uniqueNames('target'));
    const result = schema.safeParse([{ name: 'a' }, { name: 'b' }, { name: 'a' }]);
    expect(result.success).toBe(false);
    expect(result.error!.issues).toEqual([
      expect.objectContaining({
        path: [2, 'name'],
        message: 'duplicate target name "a" (already used by entry [0])',
      }),
    ]);
  });
});

describe('one ZodError -> ConfigError for sections written in code', () => {
  const schema = z.strictObject({ port: z.number().int() });

  it('names each bad key under its section and path, from code, with its env var', () => {
    let caught: unknown;
    try {
      parseSectionInCode(schema, { port: 'x' }, 'notification', ['mailer']);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).issues).toEqual([
      expect.objectContaining({
        key: 'notification.mailer.port',
        source: 'code',
        envVar: 'SVC_NOTIFICATION__MAILER__PORT',
      }),
    ]);
  });

  it("returns the loader's validated section as it is, without parsing it again", () => {
    const config = loadNotificationConfig(
      { sms_backends: [{ name: 'sms', sms_gateway: smsGateway }] },
      { file: null, env: {} },
    );
    const parse = jest.spyOn(SmsBackendsSchema, 'safeParse');
    try {
      expect(
        parseSectionInCode(SmsBackendsSchema, config.sms_backends, 'notification', ['sms_backends']),
      ).toBe(config.sms_backends);
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });
});

describe('channels take the validated config as it is', () => {
  const config = loadNotificationConfig(
    { sms_backends: [{ name: 'sms', sms_gateway: smsGateway }] },
    { file: null, env: {} },
  );

  it('the SMS channel, the notification module and the mailer do not parse it again', async () => {
    const sms = jest.spyOn(SmsBackendsSchema, 'safeParse');
    const mailer = jest.spyOn(MailerConfigSchema, 'safeParse');
    try {
      const channel = SmsChannel.configure(config.sms_backends);
      const module = NotificationModule.configure(config);
      const mailers = MailerModule.configure(config.mailer);
      expect(channel.names).toEqual(['sms']);
      expect(module.sms.names).toEqual(['sms']);
      expect(sms).not.toHaveBeenCalled();
      expect(mailer).not.toHaveBeenCalled();
      await Promise.all([channel.close(), module.close(), mailers.close()]);
    } finally {
      sms.mockRestore();
      mailer.mockRestore();
    }
  });

  it('a list written in code is still checked: a ConfigError naming the key', () => {
    expect(() => SmsChannel.configure([{ name: 'bad name', sms_gateway: smsGateway }])).toThrow(
      /notification\.sms_backends\[0\]\.name/,
    );
  });
});
