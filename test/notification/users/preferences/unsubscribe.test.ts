/**
 * One-click unsubscribe tokens and headers (RFC 8058): signed, expiring, bound to one user and one
 * category; the key rules of `notify.unsubscribe` at config load.
 */
import { Mailable } from '../../../../services/notification/channels/email/mailable';
import { loadNotificationConfig } from '../../../../services/notification/config';
import { UnsubscribeLinks } from '../../../../services/notification/users/preferences';
import { redactSecrets } from '../../../../shared/config/redact';
import { silentLogger } from '../../../../shared/logging/logger';
import { ManualClock } from '../../../support/manual-clock';
import { TEST_CATEGORIES } from './support';

const KEY = 'k'.repeat(32);
const BASE = 'https://notify.example.com';

function links(
  options: {
    key?: string;
    base?: string;
    ttlDays?: number;
    clock?: ManualClock;
    logger?: ReturnType<typeof silentLogger>;
  } = {},
): UnsubscribeLinks {
  return new UnsubscribeLinks({
    config: {
      signing_key: options.key ?? KEY,
      token_ttl_days: options.ttlDays ?? 60,
      public_base_url: options.base ?? BASE,
    },
    categories: TEST_CATEGORIES,
    logger: options.logger ?? silentLogger(),
    clock: options.clock,
  });
}

function tokenOf(headers: Record<string, string>): string {
  const match = /^<(https:\/\/[^>]+)>$/.exec(headers['List-Unsubscribe'] ?? '');
  if (!match) throw new Error(`no List-Unsubscribe URL in ${JSON.stringify(headers)}`);
  return new URL(match[1]!).searchParams.get('token')!;
}

describe('unsubscribeHeaders', () => {
  it('for a non-required category, gives an HTTPS List-Unsubscribe URL and the One-Click post header', () => {
    const headers = links().unsubscribeHeaders('jane', 'news');
    expect(Object.keys(headers).sort()).toEqual(['List-Unsubscribe', 'List-Unsubscribe-Post']);
    expect(headers['List-Unsubscribe']).toMatch(
      /^<https:\/\/notify\.example\.com\/unsubscribe\?token=[A-Za-z0-9_.-]+>$/,
    );
    expect(headers['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
  });

  it('keeps a path prefix of public_base_url and drops its trailing slash', () => {
    const headers = links({ base: 'https://example.com/notify/' }).unsubscribeHeaders('jane', 'news');
    expect(headers['List-Unsubscribe']).toMatch(/^<https:\/\/example\.com\/notify\/unsubscribe\?token=/);
  });

  it('gives no header for a required category, an unknown one, one without email, or without public_base_url', () => {
    expect(links().unsubscribeHeaders('jane', 'security')).toEqual({});
    expect(links().unsubscribeHeaders('jane', 'promos')).toEqual({});
    const noEmail = new UnsubscribeLinks({
      config: { signing_key: KEY, token_ttl_days: 60, public_base_url: BASE },
      categories: [{ name: 'chat', channels: ['push'], required: false, defaults: {}, description: '' }],
      logger: silentLogger(),
    });
    expect(noEmail.unsubscribeHeaders('jane', 'chat')).toEqual({});
    expect(links({ base: '' }).unsubscribeHeaders('jane', 'news')).toEqual({});
  });

  it('is a function that works detached from its object (Notify passes it around)', () => {
    const { unsubscribeHeaders } = links();
    expect(unsubscribeHeaders('jane', 'news')['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
  });
});

describe('the email channel takes the headers', () => {
  function build(headers: Record<string, string>): Record<string, string> {
    const m = new Mailable().to('jane@example.com').subject('News').text('Hi');
    for (const [name, value] of Object.entries(headers)) m.header(name, value);
    return m.build().headers;
  }

  it('the Mailable keeps both RFC 8058 headers as given', () => {
    const headers = links().unsubscribeHeaders('jane', 'news');
    expect(build(headers)).toEqual(headers);
  });

  it('the Mailable still refuses a CR or LF in their values and other non-X- names', () => {
    expect(() => build({ 'List-Unsubscribe': '<https://x.example/u>\r\nBcc: evil@example.com' })).toThrow(
      /List-Unsubscribe/,
    );
    expect(() => build({ 'List-Id': 'news' })).toThrow(/a header name must be X-/);
  });
});

describe('unsubscribe tokens', () => {
  it('a token verifies to its user and category, user ids in emoji, CJK and RTL included', () => {
    const l = links();
    for (const userId of ['jane', '😀'.repeat(128), '用户', 'مستخدم']) {
      expect(l.verify(tokenOf(l.unsubscribeHeaders(userId, 'comments')))).toEqual({
        userId,
        category: 'comments',
      });
    }
  });

  it('a token expires after token_ttl_days, and works until then', () => {
    const clock = new ManualClock();
    const l = links({ clock, ttlDays: 2 });
    const token = tokenOf(l.unsubscribeHeaders('jane', 'news'));
    clock.advance(2 * 86_400_000 - 1000);
    expect(l.verify(token)).toEqual({ userId: 'jane', category: 'news' });
    clock.advance(2000);
    expect(l.verify(token)).toBeUndefined();
  });

  it('a token signed with another key, or changed in any character, does not verify', () => {
    const token = tokenOf(links().unsubscribeHeaders('jane', 'news'));
    expect(links({ key: 'x'.repeat(32) }).verify(token)).toBeUndefined();
    const l = links();
    for (let i = 0; i < token.length; i++) {
      const c = token[i] === 'A' ? 'B' : 'A';
      const changed = token.slice(0, i) + c + token.slice(i + 1);
      if (changed !== token) expect(l.verify(changed)).toBeUndefined();
    }
  });

  it('the payload of one token under the signature of another does not verify (no user swap)', () => {
    const l = links();
    const [payloadA] = tokenOf(l.unsubscribeHeaders('alice', 'news')).split('.');
    const [, macB] = tokenOf(l.unsubscribeHeaders('bob', 'news')).split('.');
    expect(l.verify(`${payloadA}.${macB}`)).toBeUndefined();
  });

  it('garbage, empty, huge and non-ASCII tokens do not verify and do not throw', () => {
    const l = links();
    for (const bad of ['', '.', 'a.b.c', 'abc', '😀.😀', 'x'.repeat(100_000), '..', '%00.%00']) {
      expect(l.verify(bad)).toBeUndefined();
    }
  });

  it('without a signing key, a random key is used and a warning says links stop working at restart', () => {
    const warnings: string[] = [];
    const logger = silentLogger();
    logger.warn = ((obj: unknown, msg?: string) => {
      warnings.push(typeof obj === 'string' ? obj : (msg ?? ''));
    }) as typeof logger.warn;
    const a = links({ key: '', logger });
    const b = links({ key: '', logger });
    const token = tokenOf(a.unsubscribeHeaders('jane', 'news'));
    expect(a.verify(token)).toEqual({ userId: 'jane', category: 'news' });
    expect(b.verify(token)).toBeUndefined();
    expect(warnings.some((w) => /signing_key/.test(w))).toBe(true);
    // Without public_base_url no email carries a link: nothing to warn about.
    warnings.length = 0;
    links({ key: '', base: '', logger });
    expect(warnings).toEqual([]);
  });
});

describe('notify.unsubscribe config', () => {
  function load(unsubscribe: Record<string, unknown>): unknown {
    return loadNotificationConfig({ notify: { unsubscribe } }, { env: {}, file: null });
  }

  it('refuses a signing key under 32 bytes, naming the key and never printing it', () => {
    const secret = 'short-secret-31-bytes-long-abcd';
    expect(() => load({ signing_key: secret })).toThrow(/notify\.unsubscribe\.signing_key/);
    try {
      load({ signing_key: secret });
    } catch (err) {
      expect(String((err as Error).message)).not.toContain(secret);
    }
  });

  it('takes a key of 32 bytes (counted in UTF-8) and an empty one', () => {
    expect(() => load({ signing_key: 'é'.repeat(16) })).not.toThrow();
    expect(() => load({ signing_key: '' })).not.toThrow();
  });

  it('hides the signing key in a config dump', () => {
    const config = load({ signing_key: KEY }) as { notify: { unsubscribe: { signing_key: string } } };
    expect(redactSecrets(config).notify.unsubscribe.signing_key).toBe('[REDACTED]');
  });

  it('refuses a public_base_url that is not an https URL', () => {
    expect(() => load({ public_base_url: 'http://notify.example.com' })).toThrow(/public_base_url/);
    expect(() => load({ public_base_url: 'not a url' })).toThrow(/public_base_url/);
    expect(() => load({ public_base_url: 'https://notify.example.com' })).not.toThrow();
  });
});
