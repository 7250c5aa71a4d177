/**
 * The SLO definitions' text limits count characters as code points (an emoji or a supplementary CJK
 * ideograph is one character, though two UTF-16 units): at the bound a definition is taken, one
 * character more is refused. Text the store could not keep (a lone surrogate) is refused too.
 */
import { invalidArgument } from '../../support/call-errors';
import { buildRatioSlo, SELECTOR_LIMITS } from '../../../services/monitor/slo/ratio-definition';
import { checkSloString, SLO_FIELD_LIMITS } from '../../../services/monitor/slo/slo-area';

const CHARACTERS = [
  ['emoji', '😀'],
  ['supplementary CJK', '𠀀'],
  ['BMP CJK', '中'],
  ['RTL (Arabic)', 'م'],
] as const;

describe('SLO text limits', () => {
  test.each(CHARACTERS)('%s: every field is taken at its bound and refused one character over', (_n, c) => {
    for (const [field, max] of Object.entries(SLO_FIELD_LIMITS) as [
      keyof typeof SLO_FIELD_LIMITS,
      number,
    ][]) {
      expect(() => checkSloString(field, field, c.repeat(max), true)).not.toThrow();
      const over = invalidArgument(() => checkSloString(field, field, c.repeat(max + 1), true));
      expect(over.message).toBe(`${field} must be at most ${max} characters`);
    }
  });

  test.each(CHARACTERS)('%s: a selector label value is taken at its bound and refused one over', (_n, c) => {
    const def = (value: string) => ({
      name: 'checkout',
      target: 0.99,
      metricSource: {
        good: { metric: 'requests_total', labels: { code: value } },
        total: { metric: 'requests_total', labels: {} },
      },
    });
    expect(() => buildRatioSlo(def(c.repeat(SELECTOR_LIMITS.labelValue)))).not.toThrow();
    expect(invalidArgument(() => buildRatioSlo(def(c.repeat(SELECTOR_LIMITS.labelValue + 1)))).message).toBe(
      `metric_source.good.labels.code: at most ${SELECTOR_LIMITS.labelValue} characters`,
    );
  });

  test('a lone surrogate in a name is refused as broken text, a whole emoji is not', () => {
    expect(invalidArgument(() => checkSloString('name', 'name', 'checkout\ud83d', true)).message).toBe(
      'name must not contain NUL characters or broken text (a lone surrogate)',
    );
    expect(() => checkSloString('name', 'name', 'checkout 😀', true)).not.toThrow();
  });
});
