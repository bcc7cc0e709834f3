/**
 * Reading a run log with the real `git` CLI, as an outsider would.
 */
import { gitAt, runGit } from "../../helpers/git-cli.js";

export interface LoggedEvent {
  readonly seq: number;
  readonly type: string;
  readonly data?: Record<string, unknown>;
  readonly [key: string]: unknown;
}

/** Every event of a run at `main`, parsed, in seq order (unparseable files are skipped). */
export async function gitRunLog(gitdir: string, runId: string): Promise<LoggedEvent[]> {
  const listing = await runGit([`--git-dir=${gitdir}`, "ls-tree", "--name-only", `main:runs/${runId}/events`]);
  if (listing.code !== 0) return [];
  const events: LoggedEvent[] = [];
  for (const name of listing.stdout.split("\n").filter((n) => n.endsWith(".json"))) {
    try {
      events.push(JSON.parse(await gitAt(gitdir, ["show", `main:runs/${runId}/events/${name}`])) as LoggedEvent);
    } catch {
      // a hand-broken event: not this helper's concern
    }
  }
  return events.sort((a, b) => a.seq - b.seq);
}

/** TimerFired events of one timer. */
export function firesOf(events: readonly LoggedEvent[], timerId: string): LoggedEvent[] {
  return events.filter((e) => e.type === "TimerFired" && e.data?.["timerId"] === timerId);
}
