// The workflow-host dashboard: plain browser JavaScript, no build step. Every data request
// carries the token (Authorization: Bearer); live updates arrive as server-sent events read
// with fetch, so the token never goes into a URL. Everything shown is set as text, never HTML.

const TOKEN_KEY = "workflow-host-token";
const state = {
  token: null,
  deployments: [],
  timers: [],
  /** Runs whose folders could not be read (GET /v1/timers unreadableRuns): their timers are not listed. */
  unreadableRuns: [],
  /** `repo/run/timer` → the fire, for timers that fired since they were listed. */
  firedSince: new Map(),
  fires: [],
  reloadTimer: null,
  /** The run shown in the run log and where its next page starts, or null. */
  runPage: null,
  /**
   * repoId → `{repoId, mayWrite, series, unreadableRuns}` of GET /v1/deployments/:repo/schedules,
   * or `{repoId, error}` when that read failed. Shown in the order of `deployments`.
   */
  schedules: new Map(),
  /** repoId → number of the newest schedules read started for it (an older answer is dropped). */
  scheduleReads: new Map(),
  /** Deployments whose schedules the next reload reads again; null: every one. */
  dirtySchedules: new Set(),
  /** The schedule control waiting for its dialog's answer: `{verb, repoId, runId, timerId}`, or null. */
  pendingAction: null,
};

const $ = (id) => document.getElementById(id);
const el = (tag, text, className) => {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
};
const row = (cells) => {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) td.append(cell);
    else td.textContent = cell === undefined || cell === null ? "" : String(cell);
    tr.append(td);
  }
  return tr;
};
const keyOf = (t) => `${t.repoId}/${t.runId}/${t.timerId}`;

// --- time formatting -------------------------------------------------------------------------

const utc = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d{3}Z$/, "Z").replace(/Z$/, " UTC") : "");
const localFormat = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
const local = (iso) => localFormat.format(new Date(iso));
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
function relative(iso) {
  const ms = Date.parse(iso) - Date.now();
  const abs = Math.abs(ms);
  const units = [["day", 86_400_000], ["hour", 3_600_000], ["minute", 60_000], ["second", 1_000]];
  for (const [unit, size] of units) {
    if (abs >= size || unit === "second") return relativeFormat.format(Math.round(ms / size), unit);
  }
  return "";
}
function lateness(ms) {
  if (ms < 1_000) return `${ms} ms late`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s late`;
  return `${Math.round(ms / 60_000)} min late`;
}

// --- API ----------------------------------------------------------------------------------

/**
 * A request with the token; `body` (an object) is sent as JSON with POST. Answers that are not
 * 2xx throw an Error with the route's `code` and `status` (401 also forgets the token).
 */
async function api(path, body) {
  const init = { headers: { authorization: `Bearer ${state.token}` } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    forgetToken("That token was refused.");
    throw new Error("unauthorized");
  }
  // A proxy in between may answer with something that is not the API's JSON.
  const answer = await response.json().catch(() => null);
  if (!response.ok || answer === null) {
    const error = new Error(answer?.message || `HTTP ${response.status}${response.ok ? ": the answer is not JSON" : ""}`);
    error.code = answer?.code;
    error.status = response.status;
    throw error;
  }
  return answer;
}

/** "HTTP 403 authorize_denied: …": the status and the route's code, then its message. */
function describeError(error) {
  if (error.status === undefined || error.message.startsWith("HTTP ")) return error.message;
  const code = error.code && !error.message.startsWith(`${error.code}:`) ? `${error.code}: ` : "";
  return `HTTP ${error.status} ${code}${error.message}`;
}

const seriesPath = (repoId, runId, timerId) => `/v1/deployments/${encodeURIComponent(repoId)}/runs/${encodeURIComponent(runId)}/schedules/${encodeURIComponent(timerId)}`;

// --- rendering ----------------------------------------------------------------------------

function renderDeployments() {
  const body = $("deployments");
  body.replaceChildren(...state.deployments.map((d) => row([d.repoId, d.pendingTimers, d.recovered ? "yes" : "not yet"])));
  const select = $("run-deployment");
  const chosen = select.value;
  select.replaceChildren(el("option", "any"), ...state.deployments.map((d) => el("option", d.repoId)));
  select.options[0].value = "";
  select.value = state.deployments.some((d) => d.repoId === chosen) ? chosen : "";
}

function runButton(repoId, runId) {
  const button = el("button", runId, "run-link");
  button.type = "button";
  button.setAttribute("aria-label", `Show the log of run ${runId} in ${repoId}`);
  button.addEventListener("click", () => showRun(runId, repoId));
  return button;
}

function renderTimers() {
  const pendingKeys = new Set(state.timers.map(keyOf));
  const rows = [];
  for (const t of state.timers) {
    const fired = state.firedSince.get(keyOf(t));
    // A cron series keeps a pending row (its next tick); a fired one-shot shows as fired.
    if (fired && !t.cron && Date.parse(t.fireAt) <= Date.parse(fired.scheduledFor)) continue;
    // A paused series keeps its armed slot but fires nothing until it is resumed.
    const status = t.paused ? "paused" : t.lateMs > 0 ? "due" : "pending";
    const tr = row([t.repoId, runButton(t.repoId, t.runId), t.timerId, utc(t.fireAt), local(t.fireAt), el("time", relative(t.fireAt)), el("span", status)]);
    tr.dataset.timer = keyOf(t);
    tr.dataset.status = status;
    tr.querySelector("time").dateTime = t.fireAt;
    rows.push(tr);
  }
  for (const [key, fire] of state.firedSince) {
    if (pendingKeys.has(key) && !isFiredOneShot(key, fire)) continue;
    const status = el("span", `fired, ${lateness(fire.latenessMs)}`, "status-fired");
    const tr = row([fire.repoId, runButton(fire.repoId, fire.runId), fire.timerId, utc(fire.scheduledFor), local(fire.scheduledFor), el("time", relative(fire.firedAt)), status]);
    tr.dataset.timer = key;
    tr.dataset.status = "fired";
    tr.querySelector("time").dateTime = fire.firedAt;
    rows.push(tr);
  }
  $("timers").replaceChildren(...rows);
  $("timers-empty").hidden = rows.length > 0;
  const unreadable = state.unreadableRuns;
  $("timers-unreadable").hidden = unreadable.length === 0;
  $("timers-unreadable").textContent =
    unreadable.length === 0 ? "" : `Not listed: ${unreadable.map((u) => `${u.repoId}/${u.runId} (${u.code} at ${u.path})`).join(", ")}; workflow-host check names what to restore.`;
  // A series' next ticks come with the pending timers.
  renderSchedules();
}

// --- schedules ------------------------------------------------------------------------------

function controlButton(label, verb, s, readOnly) {
  const button = el("button", label);
  button.type = "button";
  button.dataset.action = verb;
  button.setAttribute("aria-label", `${label} ${s.timerId} of run ${s.runId} in ${s.repoId}`);
  if (readOnly) {
    button.disabled = true;
    button.title = `This token may only read ${s.repoId}`;
  } else {
    button.addEventListener("click", () => askAction(verb, s));
  }
  return button;
}

function renderSchedules() {
  const ticksByKey = new Map(state.timers.filter((t) => t.cron).map((t) => [keyOf(t), t.nextTicks || [t.fireAt]]));
  const rows = [];
  const problems = [];
  for (const { repoId } of state.deployments) {
    const d = state.schedules.get(repoId);
    if (d === undefined) continue;
    if (d.error) {
      problems.push(`${d.repoId}: ${d.error}`);
      continue;
    }
    for (const u of d.unreadableRuns) problems.push(`${d.repoId}/${u.runId} (${u.code} at ${u.path})`);
    for (const series of d.series) {
      const s = { ...series, repoId: d.repoId };
      const key = keyOf(s);
      const stateCell = el("span", s.paused ? `paused${s.pausedAt ? ` since ${utc(s.pausedAt)}` : ""}` : "running", s.paused ? "status-paused" : undefined);
      const cell = el("div");
      cell.append(stateCell);
      if (s.paused && s.pauseReason) cell.append(el("div", `reason: ${s.pauseReason}`, "pause-reason"));
      const ticks = el("ol", null, "ticks");
      for (const tick of ticksByKey.get(key) || [s.nextAt]) ticks.append(el("li", utc(tick)));
      const last = s.lastFire ? `${utc(s.lastFire.firedAt || s.lastFire.scheduledFor)}${s.lastFire.kind === "scheduled" ? "" : ` (${s.lastFire.kind})`}` : "never";
      const controls = el("div", null, "controls");
      controls.append(
        s.paused ? controlButton("Resume", "resume", s, !d.mayWrite) : controlButton("Pause…", "pause", s, !d.mayWrite),
        controlButton("Trigger now…", "trigger", s, !d.mayWrite),
      );
      // Backfill is offered only where this token may write (the others show why they are off).
      if (d.mayWrite) controls.append(controlButton("Backfill…", "backfill", s, false));
      if (!d.mayWrite) controls.append(el("span", "read only", "hint"));
      const tr = row([s.repoId, runButton(s.repoId, s.runId), s.timerId, el("code", s.cron), s.timezone, cell, ticks, last, controls]);
      tr.dataset.series = key;
      tr.dataset.state = s.paused ? "paused" : "running";
      rows.push(tr);
    }
  }
  $("schedules").replaceChildren(...rows);
  $("schedules-empty").hidden = rows.length > 0;
  $("schedules-unreadable").hidden = problems.length === 0;
  $("schedules-unreadable").textContent = problems.length === 0 ? "" : `Not listed: ${problems.join(", ")}.`;
}

let scheduleReadCount = 0;

/**
 * The series of the readable deployments in `only` (default: every one), one deployment at a
 * time (each list is a heavy read on the host). An answer older than another read of the same
 * deployment started since is dropped.
 */
async function loadSchedules(only = null) {
  for (const { repoId } of state.deployments) {
    if (only !== null && !only.has(repoId)) continue;
    const read = ++scheduleReadCount;
    state.scheduleReads.set(repoId, read);
    let answer;
    try {
      answer = await api(`/v1/deployments/${encodeURIComponent(repoId)}/schedules`);
    } catch (error) {
      if (state.token === null) throw error;
      answer = { repoId, error: describeError(error) };
    }
    if (state.scheduleReads.get(repoId) === read) state.schedules.set(repoId, answer);
  }
  renderSchedules();
}

const ACTIONS = {
  pause: { title: "Pause a schedule", confirm: "Pause", done: "Paused", reason: true },
  resume: { title: "Resume a schedule", confirm: "Resume", done: "Resumed", reason: false },
  trigger: { title: "Fire a schedule now", confirm: "Trigger now", done: "Triggered", reason: false },
  backfill: { title: "Backfill a schedule", confirm: "Backfill", done: "Backfilled", reason: false, range: true },
};

/** An instant as the range fields show it: RFC 3339 in UTC, whole seconds (`2026-05-01T10:00:00Z`). */
const rangeInstant = (ms) => new Date(Math.floor(ms / 1_000) * 1_000).toISOString().replace(/\.000Z$/, "Z");

/**
 * The backfill range offered: from the series' last tick (its last scheduled or backfilled
 * slot; a trigger now is no tick), else from an hour ago, to now.
 */
function backfillRange(s) {
  const now = Date.now();
  const tick = s.lastFire && s.lastFire.kind !== "manual" && s.lastFire.scheduledFor ? Date.parse(s.lastFire.scheduledFor) : NaN;
  return { from: rangeInstant(Number.isNaN(tick) ? now - 3_600_000 : tick), to: rangeInstant(now) };
}

/** Pause, trigger and backfill ask first (a reason for a pause; a range for a backfill; a trigger starts the workflow's step); resume does not. */
function askAction(verb, s) {
  const target = { verb, repoId: s.repoId, runId: s.runId, timerId: s.timerId };
  if (verb === "resume") {
    void runAction(target, {});
    return;
  }
  state.pendingAction = target;
  const a = ACTIONS[verb];
  $("action-title").textContent = a.title;
  $("action-what").textContent = verb === "pause"
    ? `No slot of ${s.timerId} (run ${s.runId} in ${s.repoId}) fires until it is resumed.`
    : verb === "backfill"
      ? `Fire once each slot of ${s.timerId} (run ${s.runId} in ${s.repoId}) from..to, both in the past and before its armed slot, that has not fired yet; a second backfill of the range fires nothing.`
      : `Fire ${s.timerId} (run ${s.runId} in ${s.repoId}) once now; its next slot stays where it is.`;
  $("action-reason-field").hidden = !a.reason;
  $("action-reason").value = "";
  $("action-range-field").hidden = !a.range;
  if (a.range) {
    const range = backfillRange(s);
    $("action-from").value = range.from;
    $("action-to").value = range.to;
    $("action-max-ticks").value = "";
  }
  $("action-confirm").textContent = a.confirm;
  $("action-dialog").showModal();
  if (a.reason) $("action-reason").focus();
  if (a.range) $("action-from").focus();
}

/** The body of a backfill from the dialog's fields; the route checks them (its refusal is shown). */
function backfillBody() {
  const body = { from: $("action-from").value.trim(), to: $("action-to").value.trim() };
  const maxTicks = $("action-max-ticks").value.trim();
  if (maxTicks !== "") body.maxTicks = Number(maxTicks);
  return body;
}

/** What a backfill did: how many slots fired (first … last), or that none did and why. */
function backfillDone(what, r) {
  const already = r.alreadyFired.length;
  if (r.fired.length === 0) return `${what}: 0 slots fired, ${already} had fired already: ${r.emptyBecause ?? "nothing to fire"}; nothing written.`;
  const first = utc(r.fired[0]);
  const span = r.fired.length === 1 ? first : `${first} … ${utc(r.fired.at(-1))}`;
  return `Backfilled ${what}: ${r.fired.length} slot${r.fired.length === 1 ? "" : "s"} fired (${span})${already > 0 ? `, ${already} had fired already` : ""}.`;
}

/** A key the host takes once per series (1-256 of A-Z a-z 0-9 _ . : -): a second send of the same one fires nothing. */
function newRequestId() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `dashboard-${Date.now().toString(36)}-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function runAction(target, body) {
  const status = $("schedules-status");
  const what = `${target.timerId} of run ${target.runId} in ${target.repoId}`;
  const buttons = document.querySelectorAll(`#schedules tr[data-series="${CSS.escape(keyOf(target))}"] button[data-action]`);
  for (const b of buttons) b.disabled = true;
  status.classList.remove("error");
  status.textContent = `${ACTIONS[target.verb].confirm}: ${what}…`;
  try {
    const r = await api(`${seriesPath(target.repoId, target.runId, target.timerId)}/${target.verb}`, body);
    const nothing = r.outcome === "already_paused" || r.outcome === "not_paused" || r.outcome === "duplicate";
    status.textContent = target.verb === "backfill"
      ? backfillDone(what, r)
      : nothing ? `${what}: ${r.outcome.replace("_", " ")}; nothing written.` : `${ACTIONS[target.verb].done} ${what}.`;
  } catch (error) {
    if (state.token === null) return;
    status.classList.add("error");
    status.textContent = `Could not ${target.verb} ${what}: ${describeError(error)}`;
  }
  // The state shown follows what the host now holds (and whether this token may still write).
  await loadSchedules(new Set([target.repoId])).catch(() => undefined);
}

function isFiredOneShot(key, fire) {
  const pending = state.timers.find((t) => keyOf(t) === key);
  return pending !== undefined && !pending.cron && Date.parse(pending.fireAt) <= Date.parse(fire.scheduledFor);
}

function refreshRelativeTimes() {
  for (const time of document.querySelectorAll("time[datetime]")) time.textContent = relative(time.dateTime);
}

const BUCKETS = [[10, "< 10 ms"], [100, "10–100 ms"], [1_000, "0.1–1 s"], [10_000, "1–10 s"], [60_000, "10–60 s"], [Infinity, "≥ 1 min"]];

function renderFires() {
  const newest = state.fires.slice(-50).reverse();
  $("fires").replaceChildren(
    ...newest.map((f) => {
      const late = el("span", lateness(f.latenessMs), f.latenessMs >= 1_000 ? "late" : undefined);
      const tr = row([utc(f.firedAt), f.repoId, runButton(f.repoId, f.runId), f.timerId, utc(f.scheduledFor), late]);
      tr.dataset.timer = keyOf(f);
      return tr;
    }),
  );
  $("fires-empty").hidden = state.fires.length > 0;

  const counts = BUCKETS.map(() => 0);
  for (const f of state.fires) counts[BUCKETS.findIndex(([limit]) => f.latenessMs < limit)] += 1;
  const most = Math.max(1, ...counts);
  $("histogram").replaceChildren(
    ...BUCKETS.map(([, label], i) => {
      const li = el("li");
      const bar = el("div", null, "bar");
      bar.style.width = `${(counts[i] / most) * 100}%`;
      bar.setAttribute("role", "img");
      bar.setAttribute("aria-label", `${counts[i]} fires ${label} late`);
      li.append(el("span", label), bar, el("span", counts[i]));
      return li;
    }),
  );
}

/** Rows of a page of a run's events. */
const eventRows = (events) => events.map((event) => row([event.seq, event.type, event.at ? utc(event.at) : "", el("pre", JSON.stringify(event))]));

async function showRun(runId, repoId) {
  $("run-id").value = runId;
  const status = $("run-status");
  const candidates = repoId ? [repoId] : state.deployments.map((d) => d.repoId);
  status.textContent = `Looking for run ${runId}…`;
  state.runPage = null;
  $("run-more").hidden = true;
  for (const candidate of candidates) {
    try {
      // The run's summary and its first page of events; the rest a page at a time (a log has no size bound).
      const run = await api(`/v1/deployments/${encodeURIComponent(candidate)}/runs/${encodeURIComponent(runId)}`);
      $("run-caption").textContent = `Run ${run.runId} in ${run.repoId} at ${run.commitSha.slice(0, 10)}: ${run.eventCount} events, ${run.state.terminal ? `ended (${run.state.terminal})` : "running"}${run.badCount > 0 ? `, ${run.badCount} unreadable` : ""}`;
      $("run-events").replaceChildren(...eventRows(run.events));
      $("run-bad").replaceChildren(...run.bad.map((bad) => row([bad.seq ?? "?", "unreadable", "", el("pre", `${bad.path}: ${bad.message}`)])));
      state.runPage = { repoId: run.repoId, runId: run.runId, nextAfter: run.nextAfter };
      $("run-more").hidden = run.nextAfter === null;
      $("run-log").hidden = false;
      status.textContent = "";
      return;
    } catch (error) {
      if (error.status !== 404) {
        status.textContent = `Could not read run ${runId}: ${error.message}`;
        return;
      }
    }
  }
  $("run-log").hidden = true;
  status.textContent = `No run ${runId} in ${repoId || "any deployment"}.`;
}

/** Appends the next page of the shown run's events. */
async function showMoreEvents() {
  const shown = state.runPage;
  if (shown === null || shown.nextAfter === null) return;
  const more = $("run-more");
  more.disabled = true;
  try {
    const page = await api(`/v1/deployments/${encodeURIComponent(shown.repoId)}/runs/${encodeURIComponent(shown.runId)}/events?after=${shown.nextAfter}`);
    // Another run may have been opened meanwhile.
    if (state.runPage !== shown) return;
    $("run-events").append(...eventRows(page.events));
    shown.nextAfter = page.nextAfter;
    more.hidden = page.nextAfter === null;
  } catch (error) {
    $("run-status").textContent = `Could not read more of run ${shown.runId}: ${error.message}`;
  } finally {
    more.disabled = false;
  }
}

// --- data ---------------------------------------------------------------------------------

async function loadAll() {
  const [deployments, timers, fires] = await Promise.all([api("/v1/deployments"), api("/v1/timers"), api("/v1/fires")]);
  state.deployments = deployments.deployments;
  state.timers = timers.timers;
  state.unreadableRuns = timers.unreadableRuns ?? [];
  state.fires = fires.fires;
  renderDeployments();
  renderTimers();
  renderFires();
  await loadSchedules();
}

/** Reads deployments, timers and the schedules of `repoId` (default: of every deployment) again, 250 ms later. */
function scheduleReload(repoId) {
  if (repoId === undefined) state.dirtySchedules = null;
  else state.dirtySchedules?.add(repoId);
  if (state.reloadTimer !== null) return;
  state.reloadTimer = setTimeout(async () => {
    state.reloadTimer = null;
    const dirty = state.dirtySchedules;
    state.dirtySchedules = new Set();
    try {
      const [deployments, timers] = await Promise.all([api("/v1/deployments"), api("/v1/timers")]);
      state.deployments = deployments.deployments;
      state.timers = timers.timers;
      state.unreadableRuns = timers.unreadableRuns ?? [];
      renderDeployments();
      renderTimers();
      // A deployment not read yet (new, or its read failed before) is read too.
      const unread = state.deployments.filter((d) => !state.schedules.has(d.repoId)).map((d) => d.repoId);
      await loadSchedules(dirty === null ? null : new Set([...dirty, ...unread]));
    } catch {
      // The next live event tries again.
    }
  }, 250);
}

function onLiveEvent(type, event) {
  if (type === "fired") {
    state.fires.push(event.fire);
    if (state.fires.length > 500) state.fires.shift();
    state.firedSince.set(keyOf(event.fire), event.fire);
    renderFires();
    renderTimers();
    scheduleReload(event.fire.repoId);
  } else if (type === "armed" || type === "cancelled" || type === "skipped" || type === "recovered" || type === "schedule" || type === "paused" || type === "resumed") {
    scheduleReload(event.repoId);
  } else if (type === "error" && event.code === "token_expired") {
    // The stream's last event before it ends: the token reached its expiresAt.
    forgetToken("That token has expired.");
  }
}

/** Reads `text/event-stream` from fetch (so the token goes in a header) and reconnects. */
async function follow() {
  const live = $("live");
  for (;;) {
    try {
      const response = await fetch("/v1/events", { headers: { authorization: `Bearer ${state.token}`, accept: "text/event-stream" } });
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      live.textContent = "live";
      live.classList.add("on");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let type = "message";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) type = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (data) onLiveEvent(type, JSON.parse(data));
        }
      }
    } catch {
      // Reconnect below.
    }
    live.textContent = "reconnecting…";
    live.classList.remove("on");
    if (state.token === null) return;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    scheduleReload();
  }
}

// --- start ----------------------------------------------------------------------------------

function forgetToken(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  // Another token may see other deployments, with other rights.
  state.schedules.clear();
  $("main").hidden = true;
  $("login").hidden = false;
  $("live").textContent = message;
}

async function open(token) {
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("login").hidden = true;
  $("main").hidden = false;
  await loadAll();
  void follow();
}

function start() {
  // A token may be handed over once in the fragment (#token=…); it is moved to session storage.
  const fragment = new URLSearchParams(location.hash.slice(1));
  const fromFragment = fragment.get("token");
  if (fromFragment) history.replaceState(null, "", location.pathname + location.search);
  const token = fromFragment || sessionStorage.getItem(TOKEN_KEY);
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    void open($("token").value.trim()).catch(() => undefined);
  });
  $("run-more").addEventListener("click", () => void showMoreEvents());
  $("action-cancel").addEventListener("click", () => $("action-dialog").close());
  $("action-dialog").addEventListener("close", () => {
    state.pendingAction = null;
  });
  $("action-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const target = state.pendingAction;
    $("action-dialog").close();
    if (target === null) return;
    const reason = $("action-reason").value.trim();
    const body = target.verb === "pause" ? (reason === "" ? {} : { reason }) : target.verb === "backfill" ? backfillBody() : { requestId: newRequestId() };
    void runAction(target, body);
  });
  $("run-search").addEventListener("submit", (event) => {
    event.preventDefault();
    void showRun($("run-id").value.trim(), $("run-deployment").value);
  });
  setInterval(refreshRelativeTimes, 1_000);
  if (token) void open(token).catch(() => undefined);
  else $("login").hidden = false;
}

start();
