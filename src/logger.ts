/**
 * The logging seam. Components report through a {@link Logger} given in their options; the
 * default writes nothing, so a library embedded in a host never prints on its own.
 */
export interface Logger {
  info(message: string, data?: Record<string, unknown>): void;
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
}

/** A logger that drops everything. */
export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
};
