/** Shared by the dispatch kill scenario and its child host. */
export const KILL_CONSUMER = "kill-test";
export const KILL_MAX_ATTEMPTS = 3;
export const KILL_REPO = "killed";
export const KILL_CONCURRENCY = 8;
export const KILL_MAX_UNRECORDED = 16;
