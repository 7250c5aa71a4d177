/** The one SSE writer: frames a browser's EventSource parses the same from both services. */
import { SSE_HEADERS, SSE_RETRY_MS, sseComment, sseFrame, sseRetry } from '../../../shared/streams/sse';

describe('SSE writer', () => {
  it('when data holds line breaks, emoji, CJK and RTL text, the frame keeps data on one line and the text intact', () => {
    const text = sseFrame({ id: '42', event: 'message', data: { title: 'a\nb\r\nc 😀 你好 שלום' } });
    expect(text).toBe('id: 42\nevent: message\ndata: {"title":"a\\nb\\r\\nc 😀 你好 שלום"}\n\n');
    const dataLine = text.split('\n').find((l) => l.startsWith('data: '))!;
    expect(JSON.parse(dataLine.slice('data: '.length))).toEqual({ title: 'a\nb\r\nc 😀 你好 שלום' });
  });

  it('when a frame has only an id, it sets Last-Event-ID without dispatching an event', () => {
    expect(sseFrame({ id: '7' })).toBe('id: 7\n\n');
  });

  it('when the data is already serialised, it is sent as given', () => {
    expect(sseFrame({ event: 'slos', json: '{"slos":[]}' })).toBe('event: slos\ndata: {"slos":[]}\n\n');
  });

  it('comments, the retry advice and the headers are those of an event stream', () => {
    expect(sseComment('heartbeat')).toBe(': heartbeat\n\n');
    expect(sseRetry()).toBe(`retry: ${SSE_RETRY_MS}\n\n`);
    expect(SSE_HEADERS['Content-Type']).toBe('text/event-stream; charset=utf-8');
    expect(SSE_HEADERS['Cache-Control']).toBe('no-store');
  });
});
