/** The delivery area: import from here (drivers implement `driver.ts`). */
export type {
  Channel,
  DeliveryDriver,
  DeliveryStatus,
  DriverSendContext,
  OutcomeClass,
  SendOutcome,
} from './driver';
export {
  CHANNELS,
  DELIVERY_STATUSES,
  FINAL_STATUSES,
  QUEUED_STATUSES,
  canTransition,
  toView,
  type DeliveryAttempt,
  type DeliveryFilter,
  type DeliveryPageKey,
  type DeliveryRecord,
  type DeliveryView,
} from './types';
export { DEFAULT_DELIVERY_CONFIG, DeliveryConfigSchema, type DeliveryConfig } from './config';
export * from './store';
export { InMemoryDeliveryStore } from './memory-store';
export { DatabaseDeliveryStore, type DatabaseDeliveryStoreOptions } from './database-store';
export { maskRecipient } from './mask';
export { contentHash, canonicalJson } from './content-hash';
export { RetryPolicy, type RetryDecision, type RetrySettings } from './retry-policy';
export {
  DeliveryWorker,
  MAX_REASON_LENGTH,
  sanitizeReason,
  type DeliveryWorkerOptions,
  type DriverResolver,
} from './worker';
export { DeliveryMetrics } from './metrics';
export {
  DELIVERY_RETENTION_JOB,
  DeliveryRetention,
  type DeliveryRetentionOptions,
  type DeliveryRetentionResult,
} from './retention';
export {
  DEFAULT_PAGE_SIZE,
  DeliveryPipeline,
  MAX_PAGE_SIZE,
  type BackendLookup,
  type DeliveryListPage,
  type DeliveryPipelineOptions,
  type SubmitInput,
  type SubmitResult,
} from './pipeline';
