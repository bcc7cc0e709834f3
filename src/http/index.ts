/** The host on the network (`workflow-host/http`): HTTP API, wake-ups, metrics, dashboard. */
export { createHttpHandler, type HttpHandlerOptions } from "./http-handler.js";
export { createHostMonitor, type FireRecord, type HostMonitor, type HostMonitorOptions, type LiveEvent } from "./host-monitor.js";
export { loadTokenFile, parseTokenFile, principalExpiresAtMs, replaceableTokens, type Authenticate, type ReplaceableTokens, type TokenAction, type TokenAuth, type TokenPrincipal } from "./http-tokens.js";
export { HTTP_STATUS_BY_CODE, HttpError, errorReply, type ErrorReply, type HttpErrorCode, type HttpOnlyErrorCode } from "./http-errors.js";
export { parseListenAddress, type ListenAddress } from "./listen-address.js";
