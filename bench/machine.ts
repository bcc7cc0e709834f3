/**
 * What machine a result was measured on: cores, memory, CPU model, node version, load.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";

function run(command: string, args: readonly string[]): string {
  try {
    // trimEnd only: `free -h` aligns its header with leading spaces.
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trimEnd();
  } catch {
    return "(unavailable)";
  }
}

function cpuModel(): string {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8")
      .split("\n")
      .find((l) => l.startsWith("model name"));
    if (line !== undefined) return line.slice(line.indexOf(":") + 1).trim();
  } catch {
    // Not Linux: fall back to node's view.
  }
  return cpus()[0]?.model ?? "unknown";
}

/** Markdown lines describing the machine and the moment. */
export function describeMachine(): string[] {
  return [
    `- date: ${new Date().toISOString()}`,
    `- nproc: ${run("nproc", [])}`,
    `- CPU: ${cpuModel()}`,
    `- memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB total; \`free -h\`:`,
    "",
    "```",
    run("free", ["-h"]),
    "```",
    "",
    `- node: ${process.version} (${process.platform} ${process.arch}); git: ${run("git", ["--version"])}`,
    `- load average at start (1/5/15 min): ${loadavg().map((l) => l.toFixed(2)).join(" / ")} — the machine is shared; other jobs ran during the measurement`,
  ];
}
