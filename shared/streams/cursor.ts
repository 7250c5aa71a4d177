/**
 * The one cursor rule of every live stream: a cursor is the decimal seq of the last event a reader
 * saw (at most 15 digits, so it is a safe integer). Absent or empty means "start live".
 */
import { InvalidArgumentError } from '../errors';

const CURSOR = /^[0-9]{1,15}$/;

/** How a stream names its cursor in errors: the request field and the message of a malformed one. */
export interface CursorField {
  field: string;
  message: string;
}

/** Parses a resume cursor: null when absent or empty; a malformed one is InvalidArgumentError. */
export function parseStreamCursor(cursor: string | undefined, what: CursorField): number | null {
  if (cursor === undefined || cursor === '') return null;
  if (!CURSOR.test(cursor)) throw new InvalidArgumentError(what.message, what.field);
  return Number(cursor);
}
