import type { Authorize } from "./types.js";

/**
 * An {@link Authorize} that allows every principal every action: for tests and single-tenant
 * hosts where the process boundary is the only trust boundary.
 */
export const allowAll: Authorize = () => true;
