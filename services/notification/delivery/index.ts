/** The delivery area: import from here (drivers implement `driver.ts`). */
export type {
  Channel,
  DeliveryDriver,
  DeliveryStatus,
  DriverSendContext,
  FailureKind,
  OutcomeClass,
  SendOutcome,
} from './driver';
export { FAILURE_KINDS } from './driver';
export {
  CIRCUIT_STATE_VALUE,
  CircuitBreakers,
  withCircuitState,
  type BackendHealthResult,
  type CircuitBreakerSettings,
  type CircuitSnapshot,
  type CircuitState,
} from './circuit-breaker';
export { BackendRouter, primaryFirst, type NextBackend, type Route } from './routing';
export {
  CHANNELS,
  DELIVERY_STATUSES,
  FINAL_STATUSES,
  QUEUED_STATUSES,
  SUPPRESSED_ERROR,
  canTransition,
  toView,
  type DeliveryAttempt,
  type DeliveryFilter,
  type DeliveryPageKey,
  type DeliveryRecord,
  type DeliveryView,
} from './types';
export {
  DEFAULT_DELIVERY_CONFIG,
  DeliveryConfigSchema,
  ROUTING_MODE,
  type DeliveryConfig,
  type RoutingMode,
} from './config';
export * from './store';
export { InMemoryDeliveryStore } from './memory-store';
export {
  DELIVERY_EVENTS_CHANNEL,
  DatabaseDeliveryStore,
  type DatabaseDeliveryStoreOptions,
} from './database-store';
export {
  eventOf,
  matchesEventFilter,
  type DeliveryEvent,
  type DeliveryEventFilter,
  type DeliveryEventQuery,
  type NewDeliveryEvent,
} from './events';
export {
  DeliveryWatchHub,
  parseDeliveryCursor,
  watchHubOptions,
  type DeliveryWatchFrame,
  type DeliveryWatchHubOptions,
  type DeliveryWatchOptions,
} from './watch-hub';
export { maskRecipient } from './mask';
export {
  MAX_RECEIPTS_PER_DELIVERY,
  foldReceipt,
  type DeliveryReceipt,
  type IncomingReceipt,
  type ReceiptEffect,
} from './receipt';
export { contentHash, canonicalJson } from './content-hash';
export { RetryPolicy, type RetryDecision, type RetrySettings } from './retry-policy';
export { DeliveryWorker, type DeliveryWorkerOptions, type DriverResolver } from './worker';
export { MAX_REASON_LENGTH, failureOf, sanitizeReason } from './outcome-recorder';
export { DeliveryMetrics } from './metrics';
export {
  DEFAULT_SUPPRESSION_PAGE_SIZE,
  MAX_SUPPRESSION_PAGE_SIZE,
  SUPPRESSION_REASONS,
  SUPPRESSION_SOURCE_KINDS,
  Suppressions,
  normaliseRecipient,
  toSuppressionView,
  type SuppressionChecker,
  type SuppressionEntry,
  type SuppressionInput,
  type SuppressionList,
  type SuppressionPage,
  type SuppressionPageQuery,
  type SuppressionReason,
  type SuppressionStore,
  type SuppressionView,
  type SuppressionsOptions,
} from './suppression';
export { DEFAULT_MEMORY_MAX_SUPPRESSIONS, InMemorySuppressionStore } from './suppression-memory-store';
export { DatabaseSuppressionStore } from './suppression-database-store';
export { allObservers, type DeliveryObserver, type DeliveryOutcome } from './observer';
export {
  DELIVERY_TRACER_NAME,
  MAX_TRACE_PARENT_LENGTH,
  contextFromTraceParent,
  currentTraceParent,
} from './trace-context';
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
