/**
 * A placeholder PreferenceBook until the preferences area is merged: every call is UNIMPLEMENTED.
 * The composition root and the users tests pass it to UserRpc; the lead replaces it at merge.
 */
import { UnimplementedError } from '../../../shared/errors';
import type { PreferenceBook } from '../preferences/types';

const pending = (): never => {
  throw new UnimplementedError('preferences are not available yet');
};

/** The placeholder PreferenceBook (UNIMPLEMENTED on every call). */
export const pendingPreferences: PreferenceBook = {
  get: async () => pending(),
  update: async () => pending(),
  isEnabled: async () => pending(),
  eraseUser: async () => pending(),
};
