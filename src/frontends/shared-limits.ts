/**
 * @module frontends/shared-limits
 * What the frontend threads of one server share so that its limits stay the server's: the body
 * budget's words (body-budget.ts) and the connection limit's (connection-limit.ts), one pair
 * for the HTTP threads and one for the gRPC threads (frontends/threads/).
 */
import { sharedBodyBudgetMemory } from './body-budget.js';
import { sharedConnectionLimitMemory } from './connection-limit.js';

export interface SharedFrontendMemory {
  bodyBudget: SharedArrayBuffer;
  connections: SharedArrayBuffer;
}

export function sharedFrontendMemory(): SharedFrontendMemory {
  return { bodyBudget: sharedBodyBudgetMemory(), connections: sharedConnectionLimitMemory() };
}
