/**
 * The one-click unsubscribe round trip on the real notification service: an email built through the
 * email channel's Mailable with the unsubscribe headers goes through a real SMTP peer; the
 * List-Unsubscribe URL is read out of the raw message received and POSTed (no API token, no JWT), and
 * the preference is read back through the admin route. A GET changes nothing; expired, tampered,
 * forged and other users' tokens do what they must.
 */
import { Mailable, toOutboundEmail } from '../../../../services/notification/channels/email/mailable';
import { SmtpMailer } from '../../../../services/notification/channels/email/smtp-mailer';
import type { AdminPreferencesJson } from '../../../../services/notification/admin/gateway';
import {
  MAX_UNSUBSCRIBE_BODY_BYTES,
  UnsubscribeLinks,
} from '../../../../services/notification/users/preferences';
import { silentLogger } from '../../../../shared/logging/logger';
import { ManualClock } from '../../../support/manual-clock';
import { startSmtpPeer, type SmtpPeer } from '../../../support/smtp-peer';
import type { RunningNotificationApp } from '../../../support/notification-app';
import { attempt, FROM, smtpConfig } from '../../channels/email/support';
import { authed, hsToken, startAdminService } from '../../admin/harness';

const KEY = 'unsubscribe-test-signing-key-0123456789abcdef';
const PUBLIC = 'https://notify.example.com';
const CATEGORIES = [
  { name: 'security', channels: ['inbox', 'email'], required: true },
  { name: 'news', channels: ['email', 'sms'], defaults: { sms: false }, description: 'Product news' },
  { name: 'comments', channels: ['inbox', 'email'] },
] as const;

let svc: RunningNotificationApp;
let peer: SmtpPeer;
let mailer: SmtpMailer;

/** What Notify holds: links signed with the service's configured key. */
function links(clock?: ManualClock, key = KEY): UnsubscribeLinks {
  return new UnsubscribeLinks({
    config: { signing_key: key, token_ttl_days: 30, public_base_url: PUBLIC },
    categories: CATEGORIES.map((c) => ({
      required: false,
      defaults: {},
      description: '',
      ...c,
      channels: [...c.channels],
    })),
    logger: silentLogger(),
    clock,
  });
}

/** The public URL as the service's HTTP port sees it (a TLS proxy in front forwards the path). */
function local(publicUrl: string): string {
  const url = new URL(publicUrl);
  return `${svc.baseUrl}${url.pathname}${url.search}`;
}

function urlOf(headers: Record<string, string>): string {
  return /^<([^>]+)>$/.exec(headers['List-Unsubscribe']!)![1]!;
}

function post(
  url: string,
  body = 'List-Unsubscribe=One-Click',
  type = 'application/x-www-form-urlencoded',
): Promise<Response> {
  return fetch(local(url), { method: 'POST', headers: { 'Content-Type': type }, body });
}

async function emailChannel(
  userId: string,
  category: string,
): Promise<{ enabled: boolean; chosen: boolean }> {
  const res = await fetch(`${svc.baseUrl}/admin/notifications/preferences`, authed(await hsToken(userId)));
  expect(res.status).toBe(200);
  const body = (await res.json()) as AdminPreferencesJson;
  const found = body.categories
    .find((c) => c.name === category)!
    .channels.find((c) => c.channel === 'email')!;
  return { enabled: found.enabled, chosen: found.chosen };
}

beforeAll(async () => {
  peer = await startSmtpPeer();
  mailer = new SmtpMailer({ name: 'relay', fromEmail: FROM, config: smtpConfig(peer.port) });
  svc = await startAdminService({
    // RPCs are closed: the unsubscribe routes must still answer without any token.
    server: { api_tokens: ['rpc-token-that-the-link-never-carries'] },
    notify: {
      categories: CATEGORIES.map((c) => ({ ...c, channels: [...c.channels] })),
      unsubscribe: { signing_key: KEY, public_base_url: PUBLIC, token_ttl_days: 30 },
    },
  });
});

afterAll(async () => {
  await svc?.close();
  await mailer?.close();
  await peer?.close();
});

describe('one-click unsubscribe on the HTTP port', () => {
  it('the List-Unsubscribe URL of a received email, POSTed with One-Click, turns that category email off', async () => {
    const headers = links().unsubscribeHeaders('jane', 'news');
    const mailable = new Mailable().to('jane@example.com').subject('This week at Acme').text('Our news.');
    for (const [name, value] of Object.entries(headers)) mailable.header(name, value);
    await mailer.send(toOutboundEmail(mailable.build(), FROM), attempt());

    const raw = peer.received.at(-1)!.raw.toString('latin1');
    const headerBlock = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
    expect(headerBlock).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    const url = /^List-Unsubscribe: <([^>]+)>$/m.exec(headerBlock)![1]!;
    expect(url.startsWith(`${PUBLIC}/unsubscribe?token=`)).toBe(true);

    expect(await emailChannel('jane', 'news')).toEqual({ enabled: true, chosen: false });
    const res = await post(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('You will no longer receive “news” emails.');
    expect(await emailChannel('jane', 'news')).toEqual({ enabled: false, chosen: true });

    // Replayed: harmless, still off, same answer.
    const again = await post(url);
    expect(again.status).toBe(200);
    expect(await emailChannel('jane', 'news')).toEqual({ enabled: false, chosen: true });
  });

  it('a GET shows a confirm form that posts the one-click body and changes nothing', async () => {
    const url = urlOf(links().unsubscribeHeaders('jane', 'comments'));
    for (let i = 0; i < 3; i++) {
      const res = await fetch(local(url));
      expect(res.status).toBe(200);
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('content-security-policy')).toContain("form-action 'self'");
      const html = await res.text();
      expect(html).toMatch(/<form method="post" action="\?token=[^"]+">/);
      expect(html).toContain('<input type="hidden" name="List-Unsubscribe" value="One-Click">');
    }
    expect(await emailChannel('jane', 'comments')).toEqual({ enabled: true, chosen: false });
  });

  it('a multipart One-Click body (what some mail clients send) works too', async () => {
    const form = new FormData();
    form.set('List-Unsubscribe', 'One-Click');
    const url = urlOf(links().unsubscribeHeaders('maria', 'comments'));
    const res = await fetch(local(url), { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(await emailChannel('maria', 'comments')).toEqual({ enabled: false, chosen: true });
  });

  it("another user's token changes only that user's preference", async () => {
    await post(urlOf(links().unsubscribeHeaders('bob', 'comments')));
    expect(await emailChannel('bob', 'comments')).toEqual({ enabled: false, chosen: true });
    expect(await emailChannel('jane', 'comments')).toEqual({ enabled: true, chosen: false });
  });

  it('expired, tampered and forged tokens get the same 400 page and change nothing', async () => {
    const past = new ManualClock(new Date(Date.now() - 31 * 86_400_000));
    const expired = urlOf(links(past).unsubscribeHeaders('carl', 'news'));
    const good = urlOf(links().unsubscribeHeaders('carl', 'news'));
    const token = new URL(good).searchParams.get('token')!;
    const flipped = token.slice(0, 5) + (token[5] === 'A' ? 'B' : 'A') + token.slice(6);
    const tampered = `${PUBLIC}/unsubscribe?token=${flipped}`;
    const forged = urlOf(
      links(undefined, 'another-key-of-at-least-32-bytes-xxxxxxxx').unsubscribeHeaders('carl', 'news'),
    );
    const pages: string[] = [];
    for (const url of [expired, tampered, forged, `${PUBLIC}/unsubscribe`, `${PUBLIC}/unsubscribe?token=`]) {
      for (const res of [await post(url), await fetch(local(url))]) {
        expect(res.status).toBe(400);
        pages.push(await res.text());
      }
    }
    expect(new Set(pages).size).toBe(1);
    expect(pages[0]).toContain('not valid or has expired');
    expect(pages[0]).not.toMatch(/signature|hmac|carl|stack/i);
    expect(await emailChannel('carl', 'news')).toEqual({ enabled: true, chosen: false });
  });

  it('a POST without the One-Click body is 400 and changes nothing; an oversized body is 413', async () => {
    const url = urlOf(links().unsubscribeHeaders('dana', 'news'));
    expect((await post(url, '')).status).toBe(400);
    expect((await post(url, 'List-Unsubscribe=Yes')).status).toBe(400);
    expect((await post(url, '{"List-Unsubscribe":"One-Click"}', 'application/json')).status).toBe(400);
    expect((await post(url, `List-Unsubscribe=One-Click&pad=${'x'.repeat(4096)}`)).status).toBe(413);
    expect(await emailChannel('dana', 'news')).toEqual({ enabled: true, chosen: false });
  });

  it('a body of exactly 2 KiB is read; one byte more is 413', async () => {
    const url = urlOf(links().unsubscribeHeaders('erin', 'news'));
    const base = 'List-Unsubscribe=One-Click&pad=';
    const over = await post(url, base + 'x'.repeat(MAX_UNSUBSCRIBE_BODY_BYTES + 1 - base.length));
    expect(over.status).toBe(413);
    expect(await emailChannel('erin', 'news')).toEqual({ enabled: true, chosen: false });
    const at = await post(url, base + 'x'.repeat(MAX_UNSUBSCRIBE_BODY_BYTES - base.length));
    expect(at.status).toBe(200);
    expect(await emailChannel('erin', 'news')).toEqual({ enabled: false, chosen: true });
  });

  it('a user id with emoji, CJK and RTL text round-trips through the link', async () => {
    for (const userId of ['😀-ana', '用户-李', 'مستخدم']) {
      expect((await post(urlOf(links().unsubscribeHeaders(userId, 'news')))).status).toBe(200);
      expect(await emailChannel(userId, 'news')).toEqual({ enabled: false, chosen: true });
    }
  });
});
