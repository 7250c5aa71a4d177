/** The email channel: Mailable, the mailers (smtp, http_api), their outcome tables, MailerModule. */
export * from './config';
export * from './mailable';
export * from './mailer';
export * from './mailer-module';
export { SmtpMailer, SMTP_PROBE_TIMEOUT_MS } from './smtp-mailer';
export { HttpApiMailer, HTTP_API_PROBE_TIMEOUT_MS } from './http-api-mailer';
export { MAX_ANSWER_BYTES } from '../http-request';
export { SMTP_REPLY_OUTCOMES, SMTP_ERROR_OUTCOMES, classifySmtpFailure } from './smtp-outcomes';
export {
  HTTP_API_STATUS_OUTCOMES,
  HTTP_API_ERROR_OUTCOMES,
  classifyHttpApiAnswer,
} from './http-api-outcomes';
export { EmailSender, emailRequestBytes, emailSubmission } from './email-sender';
export type { EmailSendResult, SendEmailInput } from './email-sender';
export { RetryingMailer, type EmailDelivery, type RetryingMailerOptions } from './retrying-mailer';
