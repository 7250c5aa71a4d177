/**
 * The templates area's records and its port: what `Notify` and the RPC layer use. Domain types only
 * (no wire types): `rpc/template-rpc.ts` maps them.
 *
 * This file is the contract the areas built in parallel agreed on; the templates area implements
 * `TemplateRenderer` and `TemplateCatalog` (memory and database stores behind them).
 */
import type { NotifyChannel } from '../notify/config';

/** The Liquid source of each part a channel has (unset parts are absent). */
export interface TemplateContent {
  /** inbox, push */
  title?: string;
  /** inbox, push */
  body?: string;
  /** email */
  subject?: string;
  /** email */
  html?: string;
  /** email (optional: derived from html), SMS */
  text?: string;
  /** push: a JSON object whose string values are Liquid */
  data?: Record<string, unknown>;
}

/** One stored template. */
export interface Template {
  category: string;
  channel: NotifyChannel;
  /** Canonical BCP 47. */
  locale: string;
  content: TemplateContent;
  updatedAt: Date;
}

/** A template rendered for one recipient: only the channel's parts are set. */
export interface RenderedContent {
  title?: string;
  body?: string;
  subject?: string;
  /** Email HTML, CSS inlined. */
  html?: string;
  /** Email text part (given or derived), or the SMS text. */
  text?: string;
  /** Push data, every string value rendered. */
  data?: Record<string, unknown>;
}

/** What a render reads. */
export interface RenderInput {
  category: string;
  channel: NotifyChannel;
  /** The recipient's locale ('' = default); the fallback `es-MX` -> `es` -> default applies. */
  locale: string;
  /** The recipient's IANA zone ('' = UTC): dates are formatted in it. */
  timeZone: string;
  /** The event data, read as `data`. */
  data: Record<string, unknown>;
  /** The user, read as `user` (`user.user_id`, `user.attributes`...); absent in previews. */
  user?: Record<string, unknown>;
  /** Liquid parts replacing the template's (Notify's per-channel override). */
  override?: TemplateContent;
}

/** A render's result. */
export interface Rendered {
  content: RenderedContent;
  /** The locale of the template used, after fallback. */
  locale: string;
}

/**
 * Renders templates. `render` resolves undefined when no template of the category and channel exists
 * in any locale of the fallback (and no override gives every part); throws InvalidArgumentError
 * naming the variable when the data lacks one (strict mode: never a blank).
 */
export interface TemplateRenderer {
  render(input: RenderInput): Promise<Rendered | undefined>;
}
