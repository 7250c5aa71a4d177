/** The push channel: backends, drivers, payload checks. */
export * from './config';
export * from './push-channel';
export * from './push-driver';
export * from './push-payload';
export { ApnsDriver } from './apns-driver';
export { FcmDriver } from './fcm-driver';
export { PushSender, type PushSendOptions } from './push-sender';
