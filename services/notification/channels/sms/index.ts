/** The SMS channel: the `sms_gateway` driver, its outcome table, `SmsChannel` and `SmsSender`. */
export * from './config';
export * from './sms-channel';
export * from './sms-driver';
export * from './sms-gateway-driver';
export * from './sms-gateway-outcomes';
export * from './sms-message';
export * from './sms-sender';
