/**
 * The TemplateService RPCs (gRPC and Connect): translate wire messages to the templates area's
 * catalog and renderer and back. No business rules here: validation, fallback and limits live in
 * the domain (../templates).
 */
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { InvalidArgumentError } from '../../../shared/errors';
import {
  type TemplateChannel,
  type TemplateContent as WireContent,
  type TemplateSchema,
  type TemplateService as TemplateServiceDesc,
} from '../../../shared/gen/svc/notification/v1/templates_pb';
import type { NotifyChannel } from '../notify/config';
import type { Template, TemplateCatalog, TemplateContent, TemplateRendering } from '../templates';
import { wireTimestamp } from './inbox-rpc';
import { TEMPLATE_CHANNEL_WIRE } from './channel-wire';

const TO_WIRE = TEMPLATE_CHANNEL_WIRE.toWire;

function channelOf(channel: TemplateChannel): NotifyChannel {
  const found = TEMPLATE_CHANNEL_WIRE.fromWire.get(channel);
  if (!found) throw new InvalidArgumentError('channel must be INBOX, EMAIL, SMS or PUSH', 'channel');
  return found;
}

function contentOf(c: Partial<WireContent> | undefined): TemplateContent {
  return {
    title: c?.title,
    body: c?.body,
    subject: c?.subject,
    html: c?.html,
    text: c?.text,
    data: c?.data as Record<string, unknown> | undefined,
  };
}

function toWireTemplate(t: Template): MessageInitShape<typeof TemplateSchema> {
  const c = t.content;
  return {
    category: t.category,
    channel: TO_WIRE[t.channel],
    locale: t.locale,
    content: {
      title: c.title ?? '',
      body: c.body ?? '',
      subject: c.subject ?? '',
      html: c.html ?? '',
      text: c.text ?? '',
      data: c.data as JsonObject | undefined,
    },
    updatedAt: wireTimestamp(t.updatedAt),
  };
}

/** TemplateService over the templates area. */
export class TemplateRpc implements ServiceImpl<typeof TemplateServiceDesc> {
  constructor(
    private readonly catalog: TemplateCatalog,
    private readonly renderer: TemplateRendering,
  ) {}

  async upsertTemplate(req: {
    category: string;
    channel: TemplateChannel;
    locale: string;
    content?: WireContent;
  }) {
    const { template, created } = await this.catalog.upsert({
      category: req.category,
      channel: channelOf(req.channel),
      locale: req.locale,
      content: contentOf(req.content),
    });
    return { template: toWireTemplate(template), created };
  }

  async getTemplate(req: { category: string; channel: TemplateChannel; locale: string }) {
    return {
      template: toWireTemplate(await this.catalog.get(req.category, channelOf(req.channel), req.locale)),
    };
  }

  async listTemplates(req: { category: string; pageSize: number; pageToken: string }) {
    const page = await this.catalog.list(req);
    return { templates: page.templates.map(toWireTemplate), nextPageToken: page.nextPageToken };
  }

  async deleteTemplate(req: { category: string; channel: TemplateChannel; locale: string }) {
    await this.catalog.delete(req.category, channelOf(req.channel), req.locale);
    return {};
  }

  async renderTemplate(req: {
    category: string;
    channel: TemplateChannel;
    locale: string;
    data?: JsonObject;
    timeZone: string;
  }) {
    const preview = await this.renderer.preview({
      category: req.category,
      channel: channelOf(req.channel),
      locale: req.locale,
      timeZone: req.timeZone,
      data: (req.data ?? {}) as Record<string, unknown>,
    });
    const c = preview.content;
    return {
      content: {
        title: c.title ?? '',
        body: c.body ?? '',
        subject: c.subject ?? '',
        html: c.html ?? '',
        text: c.text ?? '',
        data: c.data as JsonObject | undefined,
      },
      locale: preview.locale,
      smsSegments: preview.smsSegments,
    };
  }
}
