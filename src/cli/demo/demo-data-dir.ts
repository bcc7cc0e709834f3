/**
 * The demo's data dir: reset before every demo, so each run starts from the same state and
 * prints the same story. Only a folder the demo made itself (it holds a marker file) or an empty
 * one is ever cleared, and only while holding its host lock, so a host serving it is never
 * pulled out from under.
 */
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { refuseFileAncestor } from "../with-store.js";
import { join } from "node:path";
import { WorkflowHostError } from "../../errors.js";
import { acquireHostLock } from "../../host/host-lock.js";
import type { Logger } from "../../logger.js";
import { WORKFLOW_RUN_DIRECTORY_PREFIX } from "../../workflow/workflow-run-kind.js";

/** File that marks a folder as the demo's own. */
export const DEMO_MARKER = ".workflow-host-demo";

/**
 * Creates or clears `dataDir` for the demo.
 * @returns whether an earlier demo's data was cleared
 * @throws usage when the folder holds other data; host_locked when a host is serving it
 */
export async function resetDemoDataDir(dataDir: string, logger: Logger): Promise<{ cleared: boolean }> {
  const found = await stat(dataDir).catch(() => null);
  if (found !== null) {
    if (!found.isDirectory()) throw new WorkflowHostError("usage", `--data-dir ${dataDir} is a file; the demo needs a folder of its own`, { dataDir });
    const names = await readdir(dataDir);
    if (names.length > 0 && !names.includes(DEMO_MARKER)) {
      throw new WorkflowHostError("usage", `--data-dir ${dataDir} holds data the demo did not make; choose an empty or new folder`, { dataDir });
    }
  }
  if (found === null) await refuseFileAncestor(dataDir);
  await mkdir(dataDir, { recursive: true });
  const lock = await acquireHostLock({ dataDir, logger });
  try {
    const deployments = join(dataDir, WORKFLOW_RUN_DIRECTORY_PREFIX);
    const cleared = (await stat(deployments).catch(() => null)) !== null;
    await rm(deployments, { recursive: true, force: true });
    await writeFile(join(dataDir, DEMO_MARKER), "This folder is reset by `workflow-host demo`.\n");
    return { cleared };
  } finally {
    await lock.release();
  }
}
