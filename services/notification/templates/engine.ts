/**
 * Our LiquidJS: strict (a variable the data lacks and a filter that does not exist are errors, never
 * a blank), with no file system (`include`, `render` and `layout` are refused at parse), bounded
 * (LiquidJS `parseLimit`, `renderLimit`, `memoryLimit`, plus the size of each output), with the
 * locale filters of filters.ts. Two engines share those rules: the HTML one escapes every output
 * (`outputEscape: 'escape'`, so `<script>` in the data arrives as `&lt;script&gt;`), the text one
 * (subjects, SMS, push, inbox) does not.
 *
 * HTML parts get their CSS inlined (juice) once, on the Liquid source, before parsing; Liquid code
 * stays untouched through juice (its `{{ }}` and `{% %}` blocks are protected). Parsed templates are
 * cached in a bounded LRU keyed by their source, so a render costs a render.
 */
import juice from 'juice';
import { Liquid, toValue, type Emitter, type TagToken, type Template as LiquidTemplate } from 'liquidjs';
import { DomainError, InvalidArgumentError } from '../../../shared/errors';
import { cutText } from '../../../shared/text/cut';
import { LOCALE_FILTERS, RENDER_ENV, type RenderEnv } from './filters';

/** A part's source flavour: `html` is CSS-inlined and output-escaped. */
export type PartKind = 'html' | 'text';

/** The bounds of an engine. */
export interface EngineLimits {
  maxSourceBytes: number;
  parseCacheSize: number;
  maxRenderBytes: number;
  renderTimeLimitMs: number;
  renderMemoryLimit: number;
}

// Liquid code inside HTML passes through juice as it is (juice already protects `{{ }}`).
(juice as unknown as { codeBlocks: Record<string, { start: string; end: string }> }).codeBlocks.LIQUID = {
  start: '{%',
  end: '%}',
};

const NO_FILES: Parameters<Liquid['registerTag']>[1] = {
  parse(token: TagToken) {
    throw new Error(`the ${token.name} tag is not available: templates cannot read files`);
  },
  render() {
    return '';
  },
};

interface LiquidLikeError extends Error {
  token?: { getPosition(): [number, number]; getText?(): string };
  originalError?: unknown;
}

function position(err: LiquidLikeError): string {
  const pos = err.token?.getPosition();
  return pos ? `line ${pos[0]}, column ${pos[1]}` : 'position unknown';
}

/** LiquidJS appends ", line:L, col:C" to its messages; we say it our way. */
function bare(message: string): string {
  return message.replace(/, line:\d+, col:\d+$/, '').slice(0, 300);
}

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** LiquidJS's own rule for what an output writes (its `stringify`, which it does not export). */
function outputText(value: unknown): string {
  const v: unknown = toValue(value);
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(outputText).join('');
  return String(v);
}

/**
 * The emitter of every render and of every `capture` (LiquidJS makes one wherever it is not given
 * one): it refuses to grow past `max` UTF-16 units (each unit is at least one UTF-8 byte, so past
 * it the output is past `max` bytes too). Without it the output and a captured variable were only
 * measured after the render: `{% capture s %}{{ s }}{{ s }}{% endcapture %}` 25 times, or a loop
 * writing a 60 KB datum 8,000 times, built a string of hundreds of MB (the memory limit counts
 * filters, not writes) and held the process for seconds past the time limit before the size check
 * refused it.
 */
class BoundedEmitter implements Emitter {
  buffer = '';
  constructor(private readonly max: number) {}
  write(html: unknown): void {
    const text = outputText(html);
    if (this.buffer.length + text.length > this.max) throw new OutputTooLarge(this.max);
    this.buffer += text;
  }
}

/** Thrown by BoundedEmitter; the render answers it as the size check after a render does. */
class OutputTooLarge extends Error {
  constructor(readonly max: number) {
    super(`output over ${max}`);
  }
}

function tooLarge(part: string, max: number): InvalidArgumentError {
  return new InvalidArgumentError(`${part} renders to more than ${max} bytes`, 'data');
}

/**
 * The most CSS inlining an `html` part may ask of juice, as selectors x elements: juice runs every
 * selector of the part's `<style>` blocks over the whole document, synchronously, so a 35 KB part of
 * 500 selectors and 4,000 elements held the event loop (every RPC of the process) 7 s and a 64 KiB
 * one over 30 s, at each upsert and at each Notify whose override gives that html (a new source
 * each call misses the parse cache). 250,000 keeps a framework stylesheet of a few hundred selectors
 * over a few hundred elements.
 */
export const MAX_CSS_INLINE_WORK = 250_000;

/** Selectors in a style sheet: each rule's comma-separated selectors (and each at-rule), comments out. */
function countSelectors(css: string): number {
  let count = 0;
  let commas = 0;
  for (let i = 0; i < css.length; i++) {
    const ch = css[i];
    if (ch === '/' && css[i + 1] === '*') {
      const end = css.indexOf('*/', i + 2);
      if (end < 0) break;
      i = end + 1;
    } else if (ch === ',') commas++;
    else if (ch === '{') {
      count += commas + 1;
      commas = 0;
    } else if (ch === '}') commas = 0;
  }
  return count;
}

/** What juice would do for `source`: its `<style>` selectors times the elements of the rest. */
export function cssInlineWork(source: string): { selectors: number; elements: number } {
  const lower = source.toLowerCase();
  let selectors = 0;
  let elements = 0;
  const countElements = (from: number, to: number) => {
    for (let i = lower.indexOf('<', from); i >= 0 && i < to; i = lower.indexOf('<', i + 1)) {
      const next = lower.charCodeAt(i + 1);
      if (next >= 97 && next <= 122) elements++;
    }
  };
  let at = 0;
  for (;;) {
    const open = lower.indexOf('<style', at);
    if (open < 0) {
      countElements(at, lower.length);
      break;
    }
    countElements(at, open);
    const start = lower.indexOf('>', open);
    if (start < 0) break;
    const close = lower.indexOf('</style', start);
    selectors += countSelectors(source.slice(start + 1, close < 0 ? source.length : close));
    if (close < 0) break;
    at = close + '</style'.length;
  }
  return { selectors, elements };
}

/** A bounded least-recently-used map (Map keeps insertion order). */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value as string);
    this.map.set(key, value);
  }
  get size(): number {
    return this.map.size;
  }
}

/** Parses (cached) and renders Liquid parts. */
export class TemplateEngine {
  private readonly html: Liquid;
  private readonly text: Liquid;
  /** Keyed by the source itself (its hash is kept by the string), one entry per source for both kinds. */
  private readonly cache: Lru<Partial<Record<PartKind, LiquidTemplate[]>>>;

  constructor(private readonly limits: EngineLimits) {
    const options = {
      strictVariables: true,
      strictFilters: true,
      // Only the data's own properties: never `constructor`, prototypes or getters of classes.
      ownPropertyOnly: true,
      // `{% if data.optional %}` tests a variable the data may lack without an error.
      lenientIf: true,
      // No file system: every lookup goes to an empty in-memory set (and the tags are refused).
      templates: {},
      parseLimit: limits.maxSourceBytes,
      renderLimit: limits.renderTimeLimitMs,
      memoryLimit: limits.renderMemoryLimit,
      cache: false,
    };
    this.html = new Liquid({ ...options, outputEscape: 'escape' });
    this.text = new Liquid(options);
    for (const engine of [this.html, this.text]) {
      const renderer = engine.renderer;
      const renderTemplates = renderer.renderTemplates.bind(renderer);
      renderer.renderTemplates = (templates, ctx, emitter) =>
        renderTemplates(templates, ctx, emitter ?? new BoundedEmitter(limits.maxRenderBytes));
      for (const tag of ['include', 'render', 'layout']) engine.registerTag(tag, NO_FILES);
      for (const [name, fn] of Object.entries(LOCALE_FILTERS)) engine.registerFilter(name, fn);
    }
    this.cache = new Lru(limits.parseCacheSize);
  }

  /** Parsed templates held now (for tests of the bound). */
  get cachedCount(): number {
    return this.cache.size;
  }

  /**
   * Parses `source` (CSS inlined first for `html`), from the cache when seen before. A syntax error
   * or an unknown filter is InvalidArgumentError on `field` with its line and column.
   */
  parse(source: string, kind: PartKind, field: string): LiquidTemplate[] {
    const entry = this.cache.get(source);
    const hit = entry?.[kind];
    if (hit) return hit;
    if (utf8Bytes(source) > this.limits.maxSourceBytes) {
      throw new InvalidArgumentError(`${field} is longer than ${this.limits.maxSourceBytes} bytes`, field);
    }
    let prepared = source;
    if (kind === 'html') {
      const { selectors, elements } = cssInlineWork(source);
      if (selectors * elements > MAX_CSS_INLINE_WORK) {
        throw new InvalidArgumentError(
          `${field}: its CSS is too costly to inline (${selectors} selectors x ${elements} elements, at most ${MAX_CSS_INLINE_WORK}); use fewer selectors or inline the styles`,
          field,
        );
      }
      try {
        prepared = juice(source);
      } catch {
        throw new InvalidArgumentError(`${field}: its CSS cannot be inlined`, field);
      }
    }
    let parsed: LiquidTemplate[];
    try {
      parsed = (kind === 'html' ? this.html : this.text).parse(prepared);
    } catch (err) {
      const e = err as LiquidLikeError;
      throw new InvalidArgumentError(`${field}: ${bare(e.message)} (${position(e)})`, field);
    }
    this.cache.set(source, { ...entry, [kind]: parsed });
    return parsed;
  }

  /**
   * Renders a parsed part for `scope` in `env`. A variable the data lacks is InvalidArgumentError
   * naming it; an output over `maxRenderBytes`, or a render over the limits, InvalidArgumentError.
   */
  async render(
    parsed: LiquidTemplate[],
    kind: PartKind,
    part: string,
    scope: Record<string, unknown>,
    env: RenderEnv,
  ): Promise<string> {
    let out: string;
    try {
      out = (await (kind === 'html' ? this.html : this.text).render(parsed, scope, {
        globals: { [RENDER_ENV]: env },
      })) as string;
    } catch (err) {
      throw renderError(err as LiquidLikeError, part);
    }
    if (out.length > this.limits.maxRenderBytes / 3 && utf8Bytes(out) > this.limits.maxRenderBytes) {
      throw tooLarge(part, this.limits.maxRenderBytes);
    }
    return out;
  }
}

function renderError(err: LiquidLikeError, part: string): InvalidArgumentError {
  const where = `${part}, ${position(err)}`;
  if (err.name === 'UndefinedVariableError') {
    // LiquidJS names the first segment that is missing (`data.order`); the token is the whole
    // expression the template wrote (`data.order.id`): say both.
    const missing = /undefined variable: ([^,]+)/.exec(err.message)?.[1] ?? 'a variable';
    const written = cutText(err.token?.getText?.() ?? missing, 200, { unit: 'code_point' });
    const detail = written === missing ? '' : `${missing} is missing; `;
    return new InvalidArgumentError(
      `the data lacks the variable ${written} (${detail}used in ${where})`,
      'data',
    );
  }
  const cause = err.originalError;
  if (cause instanceof OutputTooLarge) return tooLarge(part, cause.max);
  if (cause instanceof DomainError) return new InvalidArgumentError(`${cause.message} (${where})`, 'data');
  if (/limit exceeded/.test(err.message)) {
    return new InvalidArgumentError(`${part} exceeds the render limits: ${bare(err.message)}`, 'data');
  }
  return new InvalidArgumentError(`${part} cannot be rendered: ${bare(err.message)} (${where})`, 'data');
}
