/**
 * Which parts each channel's template has, and which of them it must have. One home for the rule:
 * the catalog checks upserts with it, the renderer checks overrides with it.
 */
import type { NotifyChannel } from '../notify/config';
import type { TemplateContent } from './types';

/** A part of a template. */
export type PartName = keyof TemplateContent;

/** The parts of each channel. */
export const CHANNEL_PARTS: Readonly<Record<NotifyChannel, readonly PartName[]>> = {
  inbox: ['title', 'body'],
  email: ['subject', 'html', 'text'],
  sms: ['text'],
  push: ['title', 'body', 'data'],
};

/** What a complete template of the channel needs, said for a caller; undefined when `c` has it. */
export function missingPart(channel: NotifyChannel, c: TemplateContent): string | undefined {
  switch (channel) {
    case 'inbox':
      return c.title ? undefined : 'an inbox template needs a title';
    case 'email':
      if (!c.subject) return 'an email template needs a subject';
      return c.html || c.text ? undefined : 'an email template needs html or text';
    case 'sms':
      return c.text ? undefined : 'an SMS template needs a text';
    case 'push':
      return c.title || c.body ? undefined : 'a push template needs a title or a body';
  }
}

/** `c` without its empty parts (proto3 sends '' and an empty Struct for "unset"). */
export function presentParts(c: TemplateContent | undefined): TemplateContent {
  const out: TemplateContent = {};
  if (!c) return out;
  for (const part of ['title', 'body', 'subject', 'html', 'text'] as const) {
    const v = c[part];
    if (typeof v === 'string' && v !== '') out[part] = v;
  }
  if (c.data && Object.keys(c.data).length > 0) out.data = c.data;
  return out;
}
