/** `serve --dispatch` output: one line per dispatch report except deliveries (see `serve --help`). */
import type { DispatchReport } from "../../../seams/dispatch/dispatch-types.js";
import { replacer } from "../cli-logger.js";
import type { CliIo } from "../io.js";
import { printLine } from "../io.js";

export function printDispatchReport(io: CliIo, report: DispatchReport, json: boolean): void {
  if (report.type === "delivered") return;
  const ts = io.clock().toISOString();
  if (json) {
    const { type, ...rest } = report;
    printLine(io, JSON.stringify({ ts, event: `dispatch-${type.replace("_", "-")}`, ...rest }, replacer));
    return;
  }
  const line = (what: string, text: string): void => printLine(io, `${ts} ${what.padEnd(13)} ${text}`);
  switch (report.type) {
    case "attempt_failed":
      line("retry", `${report.consumer} ${report.idempotencyKey} attempt ${report.attempt} failed, next in ${report.retryInMs} ms: ${String(report.error)}`);
      break;
    case "parked":
      line("parked", `${report.consumer} ${report.idempotencyKey} (${report.repoId} ${report.runId}/${report.seq}) after ${report.attempts} attempts: ${String(report.error)}`);
      break;
    case "released":
      line("released", `${report.consumer} ${report.idempotencyKey} (${report.repoId} ${report.runId}/${report.seq})`);
      break;
    case "checkpoint_failed":
      line("checkpoint-failed", `${report.consumer} in ${report.repoId}, retry in ${report.retryInMs} ms: ${String(report.error)}`);
      break;
    case "lane_failed":
      line("consumer-failed", `${report.consumer} in ${report.repoId}, retry in ${report.retryInMs} ms: ${String(report.error)}`);
      break;
  }
}
