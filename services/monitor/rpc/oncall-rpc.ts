/**
 * The OnCallService RPCs (svc/monitor/v1/oncall.proto): wire messages to calls on the on-call
 * schedules (../oncall/schedules.ts) and back. No rules here: the schedules decide who is on call.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { type Timestamp, timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  ListSchedulesResponseSchema,
  type ListSchedulesRequest,
  type OnCallService,
  type OnCallShiftSchema,
  type WhoIsOnCallRequest,
  WhoIsOnCallResponseSchema,
} from '../../../shared/gen/svc/monitor/v1/oncall_pb';
import { InvalidArgumentError } from '../../../shared/errors';
import { type Clock, systemClock, TIME_RANGE_MS } from '../../../shared/runtime/clock';
import type { OnCallShift } from '../oncall/ports';
import type { Schedules } from '../oncall/schedules';

/** The seconds a Timestamp may hold (TIME_RANGE_MS: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z). */
const MIN_SECONDS = BigInt(TIME_RANGE_MS.min / 1000);
const MAX_SECONDS = BigInt(Math.floor(TIME_RANGE_MS.max / 1000));

/** The request's `at`, or now; INVALID_ARGUMENT naming `at` outside the Timestamp range. */
function instantOf(at: Timestamp | undefined, clock: Clock): Date {
  if (!at) return new Date(clock.now());
  if (at.seconds < MIN_SECONDS || at.seconds > MAX_SECONDS || at.nanos < 0 || at.nanos > 999_999_999) {
    throw new InvalidArgumentError('at is not a valid time (0001-01-01 to 9999-12-31)', 'at');
  }
  return timestampDate(at);
}

function shiftToWire(s: OnCallShift | null): MessageInitShape<typeof OnCallShiftSchema> | undefined {
  if (!s) return undefined;
  return {
    userId: s.userId,
    startTime: timestampFromDate(s.start),
    endTime: timestampFromDate(s.end),
    override: s.override,
  };
}

/** OnCallService over the configured schedules. */
export class OnCallRpc implements ServiceImpl<typeof OnCallService> {
  constructor(
    private readonly schedules: Schedules,
    private readonly clock: Clock = systemClock,
  ) {}

  whoIsOnCall(req: WhoIsOnCallRequest) {
    if (req.schedule === '') throw new InvalidArgumentError('schedule is required', 'schedule');
    const at = instantOf(req.at, this.clock);
    const timeZone = this.schedules.timeZone(req.schedule);
    const current = shiftToWire(this.schedules.current(req.schedule, at));
    const next = shiftToWire(this.schedules.next(req.schedule, at));
    return create(WhoIsOnCallResponseSchema, {
      schedule: req.schedule,
      timeZone,
      at: timestampFromDate(at),
      ...(current ? { current } : {}),
      ...(next ? { next } : {}),
    });
  }

  listSchedules(req: ListSchedulesRequest) {
    const at = instantOf(req.at, this.clock);
    return create(ListSchedulesResponseSchema, {
      at: timestampFromDate(at),
      schedules: this.schedules.statuses(at).map((s) => {
        const current = shiftToWire(s.current);
        const next = shiftToWire(s.next);
        return {
          name: s.name,
          timeZone: s.timeZone,
          ...(current ? { current } : {}),
          ...(next ? { next } : {}),
        };
      }),
    });
  }
}
