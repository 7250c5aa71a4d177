/**
 * The UserService RPCs (gRPC and Connect): translate wire messages to UserDirectory and
 * PreferenceBook calls and back. No business rules here: validation and bounds live in the domain
 * (../users, ../users/preferences).
 */
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  DevicePlatform as WirePlatform,
  type QuietHours as WireQuietHours,
  type DeviceSchema,
  type QuietHoursSchema,
  type UserSchema,
  type UserService,
} from '../../../shared/gen/svc/notification/v1/users_pb';
import type { PreferenceBook } from '../users/preferences/types';
import { preferenceRpcHandlers, type PreferenceRpcHandlers } from './preferences-rpc';
import {
  type Device,
  type DevicePlatform,
  type QuietHours,
  type SuppressedContact,
  type SuppressionReasons,
  type User,
  type UserDirectory,
  suppressedContacts,
} from '../users';
import { wireTimestamp } from './inbox-rpc';

const PLATFORMS: Record<DevicePlatform, WirePlatform> = {
  apns: WirePlatform.APNS,
  fcm: WirePlatform.FCM,
};

/** Wire platform to domain; UNSPECIFIED (or an unknown number) is left for the domain to refuse. */
function platformOf(platform: WirePlatform): DevicePlatform {
  if (platform === WirePlatform.APNS) return 'apns';
  if (platform === WirePlatform.FCM) return 'fcm';
  return '' as DevicePlatform;
}

function toWireDevice(d: Device): MessageInitShape<typeof DeviceSchema> {
  return {
    token: d.token,
    platform: PLATFORMS[d.platform],
    backend: d.backend ?? '',
    registeredAt: wireTimestamp(d.registeredAt),
  };
}

function toWireQuietHours(q: QuietHours): MessageInitShape<typeof QuietHoursSchema> {
  return {
    windows: q.windows.map((w) => ({ days: [...w.days], start: w.start, end: w.end })),
    holdEmail: q.holdEmail,
  };
}

/** Wire quiet hours to domain; unset is none (UpsertUser replaces them whole). */
function quietHoursOf(q: WireQuietHours | undefined): QuietHours | undefined {
  if (!q) return undefined;
  return {
    windows: q.windows.map((w) => ({ days: [...w.days], start: w.start, end: w.end })),
    holdEmail: q.holdEmail,
  };
}

function toWireUser(u: User, suppressed: SuppressedContact[] = []): MessageInitShape<typeof UserSchema> {
  return {
    userId: u.userId,
    emails: u.emails,
    phones: u.phones,
    locale: u.locale,
    timeZone: u.timeZone,
    attributes: u.attributes as JsonObject,
    devices: u.devices.map(toWireDevice),
    quietHours: toWireQuietHours(u.quietHours),
    suppressed,
    createdAt: wireTimestamp(u.createdAt),
    updatedAt: wireTimestamp(u.updatedAt),
  };
}

/** UserService over the user directory, the preference book and the suppression list. */
export class UserRpc implements ServiceImpl<typeof UserService> {
  constructor(
    private readonly users: UserDirectory,
    preferences: PreferenceBook,
    private readonly suppressions: SuppressionReasons,
  ) {
    this.preferenceHandlers = preferenceRpcHandlers(preferences);
  }

  private readonly preferenceHandlers: PreferenceRpcHandlers;

  async upsertUser(req: {
    userId: string;
    emails: string[];
    phones: string[];
    locale: string;
    timeZone: string;
    attributes?: JsonObject;
    quietHours?: WireQuietHours;
  }) {
    const { user, created } = await this.users.upsertUser({
      userId: req.userId,
      emails: req.emails,
      phones: req.phones,
      locale: req.locale,
      timeZone: req.timeZone,
      attributes: req.attributes ?? {},
      quietHours: quietHoursOf(req.quietHours),
    });
    return { user: toWireUser(user, await suppressedContacts(user, this.suppressions)), created };
  }

  async getUser(req: { userId: string }) {
    const user = await this.users.getUser(req.userId);
    return { user: toWireUser(user, await suppressedContacts(user, this.suppressions)) };
  }

  async deleteUser(req: { userId: string }) {
    await this.users.deleteUser(req.userId);
    return {};
  }

  async registerDevice(req: { userId: string; token: string; platform: WirePlatform; backend: string }) {
    const device = await this.users.registerDevice(req.userId, {
      token: req.token,
      platform: platformOf(req.platform),
      ...(req.backend ? { backend: req.backend } : {}),
    });
    return { device: toWireDevice(device) };
  }

  async unregisterDevice(req: { userId: string; token: string }) {
    await this.users.unregisterDevice(req.userId, req.token);
    return {};
  }

  async subscribeTopic(req: { topic: string; userIds: string[] }) {
    return { added: await this.users.subscribeTopic(req.topic, req.userIds) };
  }

  async unsubscribeTopic(req: { topic: string; userIds: string[] }) {
    return { removed: await this.users.unsubscribeTopic(req.topic, req.userIds) };
  }

  async listTopicSubscribers(req: { topic: string; pageSize: number; pageToken: string }) {
    const page = await this.users.listTopicSubscribers(req.topic, req.pageSize, req.pageToken || undefined);
    return { userIds: page.userIds, nextPageToken: page.nextPageToken ?? '' };
  }

  // GetPreferences / UpdatePreferences: the one mapping of rpc/preferences-rpc.ts.
  getPreferences: PreferenceRpcHandlers['getPreferences'] = (req) =>
    this.preferenceHandlers.getPreferences(req);
  updatePreferences: PreferenceRpcHandlers['updatePreferences'] = (req) =>
    this.preferenceHandlers.updatePreferences(req);
}
