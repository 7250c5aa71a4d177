import { smsSegments, splitSegments } from '../../../services/notification/templates/sms-segments';

describe('SMS segments', () => {
  test('Plain ASCII of 160 characters is one GSM-7 message; 161 is two segments of at most 153', () => {
    expect(smsSegments('a'.repeat(160))).toEqual({ encoding: 'GSM-7', segments: 1, units: 160 });
    expect(smsSegments('a'.repeat(161))).toEqual({ encoding: 'GSM-7', segments: 2, units: 161 });
    expect(splitSegments('a'.repeat(161)).parts.map((p) => p.length)).toEqual([153, 8]);
    expect(smsSegments('a'.repeat(306))).toMatchObject({ segments: 2 });
    expect(smsSegments('a'.repeat(307))).toMatchObject({ segments: 3 });
  });

  test('An empty text is one message of no units', () => {
    expect(smsSegments('')).toEqual({ encoding: 'GSM-7', segments: 1, units: 0 });
  });

  test('The euro sign stays GSM-7 through the extension table and counts two septets', () => {
    expect(smsSegments('€')).toEqual({ encoding: 'GSM-7', segments: 1, units: 2 });
    // 159 + 2 = 161 septets: no longer one message
    expect(smsSegments(`${'a'.repeat(159)}€`)).toEqual({ encoding: 'GSM-7', segments: 2, units: 161 });
    expect(smsSegments(`${'a'.repeat(158)}€`)).toEqual({ encoding: 'GSM-7', segments: 1, units: 160 });
  });

  test('An extension character is never split across segments', () => {
    // 152 septets, then € (2): it does not fit in the first segment's 153 and moves whole.
    const { parts } = splitSegments(`${'a'.repeat(152)}€${'b'.repeat(20)}`);
    expect(parts[0]).toBe('a'.repeat(152));
    expect(parts[1]!.startsWith('€')).toBe(true);
  });

  test('An emoji makes the text UCS-2 and counts two units', () => {
    expect(smsSegments('hi 😀')).toEqual({ encoding: 'UCS-2', segments: 1, units: 5 });
    expect(smsSegments('😀'.repeat(35))).toEqual({ encoding: 'UCS-2', segments: 1, units: 70 });
    expect(smsSegments('😀'.repeat(36))).toEqual({ encoding: 'UCS-2', segments: 2, units: 72 });
  });

  test('A surrogate pair is never split across segments', () => {
    // 66 units then an emoji (2): the 67-unit segment cannot hold it whole.
    const text = `${'ж'.repeat(66)}😀${'ж'.repeat(10)}`;
    const { encoding, parts } = splitSegments(text);
    expect(encoding).toBe('UCS-2');
    expect(parts[0]).toBe('ж'.repeat(66));
    expect(parts[1]!.startsWith('😀')).toBe(true);
    expect(parts.join('')).toBe(text);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(67);
  });

  test('Arabic and CJK are UCS-2: 70 in one message, 71 in two', () => {
    expect(smsSegments('م'.repeat(70))).toEqual({ encoding: 'UCS-2', segments: 1, units: 70 });
    expect(smsSegments('م'.repeat(71))).toEqual({ encoding: 'UCS-2', segments: 2, units: 71 });
    expect(smsSegments('漢'.repeat(134))).toMatchObject({ encoding: 'UCS-2', segments: 2 });
    expect(smsSegments('漢'.repeat(135))).toMatchObject({ encoding: 'UCS-2', segments: 3 });
  });

  test('GSM-7 letters beyond ASCII (é, ñ, Ω) stay GSM-7; a ç (not in the table, only Ç) does not', () => {
    expect(smsSegments('Señor éΩ Ç').encoding).toBe('GSM-7');
    expect(smsSegments('ça').encoding).toBe('UCS-2');
  });
});
