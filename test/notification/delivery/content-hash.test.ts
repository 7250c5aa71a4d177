/**
 * The content hash is what stored idempotency keys compare against: its value for a given input must
 * never change (a change would make every retried call with a stored key look like other content).
 */
import { canonicalJson, contentHash } from '../../../services/notification/delivery/content-hash';

/** Emoji, CJK and right-to-left text; computed with this implementation on 29 November 2026. */
const PINNED_PAYLOAD = {
  to: [{ email: 'jane@example.com', name: 'Jane 😀 東京 שלום' }],
  cc: [],
  bcc: [],
  subject: '🎉 会議 — مرحبا بالعالم',
  text: 'שלום עולם\nこんにちは 👋🏽 "quoted" \\ back',
  headers: { 'X-Campaign': 'نشرة 🗞' },
  attachments: [{ filename: '報告.txt', contentType: 'text/plain', contentBase64: 'w7bDpA==' }],
  fromName: undefined,
};
const PINNED_TEXT =
  '{"attachments":[{"contentBase64":"w7bDpA==","contentType":"text/plain","filename":"報告.txt"}],' +
  '"bcc":[],"cc":[],"headers":{"X-Campaign":"نشرة 🗞"},"subject":"🎉 会議 — مرحبا بالعالم",' +
  '"text":"שלום עולם\\nこんにちは 👋🏽 \\"quoted\\" \\\\ back","to":[{"email":"jane@example.com","name":"Jane 😀 東京 שלום"}]}';
const PINNED_HASH = '5ce8f29bbe80c4bb369cacd998f9a2de6686d078d35aa97bc8d51bc453149b04';
const PARTS = { channel: 'email', backend: 'smtp-main', recipient: 'jane@example.com' };

describe('content hash', () => {
  it('when a payload has emoji, CJK and right-to-left text, its canonical text and hash are the pinned ones', () => {
    expect(canonicalJson(PINNED_PAYLOAD)).toBe(PINNED_TEXT);
    expect(contentHash({ ...PARTS, payload: PINNED_PAYLOAD })).toBe(PINNED_HASH);
  });

  it('when keys come in another order, the hash is the same', () => {
    const reordered = Object.fromEntries(Object.entries(PINNED_PAYLOAD).reverse());
    expect(
      contentHash({
        recipient: PARTS.recipient,
        payload: reordered,
        backend: PARTS.backend,
        channel: 'email',
      }),
    ).toBe(PINNED_HASH);
  });
});
