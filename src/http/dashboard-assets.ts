/**
 * The dashboard's static files (`dashboard/` at the package root, shipped as they are: no build
 * step). Read once when the handler is created.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface DashboardAsset {
  readonly url: string;
  readonly contentType: string;
  readonly body: Buffer;
}

const FILES: readonly { file: string; url: string; contentType: string }[] = [
  { file: "index.html", url: "/", contentType: "text/html; charset=utf-8" },
  { file: "dashboard.js", url: "/dashboard.js", contentType: "text/javascript; charset=utf-8" },
  { file: "dashboard.css", url: "/dashboard.css", contentType: "text/css; charset=utf-8" },
];

/** Finds `dashboard/` from `src/http/` or `dist/src/http/` and reads its files. */
export function loadDashboardAssets(): DashboardAsset[] {
  const dir = ["../../dashboard/", "../../../dashboard/"].map((up) => fileURLToPath(new URL(up, import.meta.url))).find((candidate) => existsSync(`${candidate}index.html`));
  if (dir === undefined) throw new Error("the dashboard's files (dashboard/index.html) are missing from the package");
  return FILES.map((f) => ({ url: f.url, contentType: f.contentType, body: readFileSync(`${dir}${f.file}`) }));
}
