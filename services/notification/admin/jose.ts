/** jose's one loader lives in shared/auth/jose.ts (the push drivers sign with it too); kept for imports. */
export { loadJose, type Jose } from '../../../shared/auth/jose';
