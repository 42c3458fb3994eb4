// race.js: starts a race (POST /api/runs) and draws it live from the feed
// at /ui/runs/{id}/live, lanes side by side; a finished run arrives as one
// snapshot built from the store.
"use strict";
(function () {
  const A = window.agentloop;
  const { el, clear, fmtNS, fmtInt, setFieldError } = A;
  const form = document.getElementById("race-form");
  const view = document.getElementById("race-view");
  if (!form || !view) return;
  const lanesBox = document.getElementById("lanes");
  const state = document.getElementById("race-state");
  const errorBox = document.getElementById("race-error");
  const startBtn = document.getElementById("race-start");
  const cancelBtn = document.getElementById("race-cancel");
  const track = document.getElementById("race-track");
  const present = form.dataset.present !== undefined;

  let runID = "";
  let socket = null;
  let last = null; // latest snapshot
  let drawn = {}; // lane -> key of what its waterfall shows
  let retries = 0;
  let retryTimer = 0;
  let recorded = false; // the page shows the recording the binary carries

  // laneCard is the lane's card, cloned from the one the server rendered
  // for it, named and explained (views.LaneCardView).
  function laneCard(name) {
    let card = lanesBox.querySelector('[data-lane="' + CSS.escape(name) + '"]');
    if (card) return card;
    const tpl = document.querySelector('template[data-lane-template="' + CSS.escape(name) + '"]');
    card = tpl.content.firstElementChild.cloneNode(true);
    lanesBox.append(card);
    return card;
  }

  function resetView(id, laneNames) {
    runID = id;
    last = null;
    drawn = {};
    clear(lanesBox);
    for (const l of laneNames) laneCard(l);
    const title = document.getElementById("race-title");
    clear(title);
    title.append("Run ", el("code", null, id));
    document.getElementById("race-end").hidden = true;
    document.getElementById("race-summary").textContent = "";
    document.getElementById("race-elapsed").textContent = "–";
    const links = document.getElementById("race-links");
    document.getElementById("race-detail-link").href = "/runs/" + encodeURIComponent(id);
    document.getElementById("race-export-link").href = "/api/runs/" + encodeURIComponent(id);
    links.hidden = false;
    view.hidden = false;
    view.dataset.run = id;
    // The settings fold away while the race runs; the summary reopens them.
    document.getElementById("race-settings").open = false;
    replayStop();
    document.getElementById("race-replay").hidden = true;
    recorded = false;
    clear(track.querySelector(".track-rows"));
    const label = document.getElementById("race-recording-label");
    if (label) label.hidden = true;
  }

  // The form's numbers: each is refused when empty or out of range, never
  // quietly changed. Optional ones may be left empty. Their ranges are the
  // inputs' min and max, which the server renders from the run API's own
  // limits (rollout's, apistack.Params); fieldProblem reads them there.
  const numberFields = [
    { id: "race-rtt", key: "rtt_ms" },
    { id: "race-tool", key: "tool_time_ms" },
    { id: "race-seed", key: "seed", integer: true },
    { id: "race-repeats", key: "repeats", integer: true },
    { id: "race-decode-tps", key: "decode_tps", optional: true },
    { id: "race-compact-threshold", key: "compact_threshold", integer: true, optional: true },
  ];
  // The stack's parameters are the inputs the server rendered, one per
  // parameter (data-stack-param: its key).
  const stackKeys = [...form.querySelectorAll("[data-stack-param]")].map((i) => i.dataset.stackParam);
  for (const k of stackKeys) numberFields.push({ id: "race-stack-" + k, key: "stack." + k });

  function labelOf(input) {
    const l = form.querySelector('label[for="' + CSS.escape(input.id) + '"]');
    const row = input.closest(".drill-row");
    const name = l ? l.textContent.trim() : input.name;
    return row ? row.getAttribute("aria-label") + ", " + name : name;
  }

  // ---- the drill schedule (under "More settings") ----
  // Each row is one of the config's drills, numbered from 0 in its order:
  // its fields are race-drill-N-KEY, and a refusal naming drills[N].KEY
  // marks that field.
  const drillList = document.getElementById("race-drill-list");
  const drillRows = () => [...drillList.querySelectorAll(".drill-row")];

  function renumberDrills() {
    drillRows().forEach((row, i) => {
      row.setAttribute("aria-label", "Drill " + (i + 1));
      for (const input of row.querySelectorAll("select[data-key], input[data-key]")) {
        const id = "race-drill-" + i + "-" + input.dataset.key;
        if (input.id !== id && input.getAttribute("aria-invalid") === "true") setFieldError(input, "");
        input.id = id;
        row.querySelector('label[data-key="' + input.dataset.key + '"]').htmlFor = id;
      }
      row.querySelector("[data-remove]").setAttribute("aria-label", "Remove drill " + (i + 1));
    });
  }

  // firstValidDrill picks, for a new row, a drill and a lane it can hit
  // among the lanes chosen (the WebSocket drills first, as listed).
  function firstValidDrill(row) {
    const chosen = [...form.querySelectorAll('input[name="lanes"]:checked')].map((i) => i.value);
    for (const opt of row.querySelectorAll('select[data-key="drill"] option')) {
      const lane = (opt.dataset.lanes || "").split(" ").find((l) => chosen.includes(l));
      if (lane) return { drill: opt.value, lane };
    }
    return null;
  }

  function addDrill(d) {
    const row = document.getElementById("race-drill-template").content.firstElementChild.cloneNode(true);
    if (!d) d = firstValidDrill(row);
    if (d) {
      for (const input of row.querySelectorAll("[data-key]:not(label)")) {
        const v = d[input.dataset.key];
        if (v !== undefined && v !== null) input.value = String(v);
      }
      // The form has no field for a drill's duration; a run's is kept.
      if (d.duration_ms > 0) row.dataset.durationMs = String(d.duration_ms);
    }
    row.querySelector("[data-remove]").addEventListener("click", () => {
      const i = drillRows().indexOf(row);
      row.remove();
      renumberDrills();
      const rows = drillRows();
      const next = rows[Math.min(i, rows.length - 1)];
      (next ? next.querySelector("select") : document.getElementById("race-drill-add")).focus();
    });
    drillList.append(row);
    renumberDrills();
    return row;
  }

  document.getElementById("race-drill-add").addEventListener("click", () => addDrill().querySelector("select").focus());
  try {
    for (const d of JSON.parse(document.getElementById("race-drills").dataset.drills || "[]")) addDrill(d);
  } catch (_) { /* start with no drills */ }

  // drillNumberFields are the schedule's number fields, as numberFields.
  function drillNumberFields() {
    return drillRows().flatMap((row, i) => [
      { id: "race-drill-" + i + "-after_turns", key: "drills[" + i + "].after_turns", row: i, field: "after_turns", integer: true },
      { id: "race-drill-" + i + "-times", key: "drills[" + i + "].times", row: i, field: "times", integer: true },
    ]);
  }

  // fieldProblem says what is wrong with a number field's text, or "".
  function fieldProblem(f, text) {
    const input = document.getElementById(f.id);
    const name = labelOf(input);
    const min = Number(input.min);
    const max = input.max === "" ? undefined : Number(input.max);
    const range = max === undefined ? min + " or more" : "from " + min + " to " + max;
    const want = (f.integer ? "a whole number " : "a number ") + range;
    if (input.validity && input.validity.badInput) return name + " is not a number: enter " + want + ".";
    if (text === "") return f.optional ? "" : name + " is empty: enter " + want + ".";
    const v = Number(text);
    if (!Number.isFinite(v)) return name + " must be " + want + "; it is “" + text + "”.";
    if (f.integer && !Number.isInteger(v)) return name + " must be " + want + "; it is " + text + ".";
    if (v < min || (max !== undefined && v > max)) return name + " must be " + want + "; it is " + text + ".";
    return "";
  }

  function clearFieldErrors() {
    for (const input of form.querySelectorAll('[aria-invalid="true"]')) setFieldError(input, "");
  }

  // showFieldError marks a field, says so in the alert and focuses it.
  function showFieldError(input, msg) {
    setFieldError(input, msg);
    const more = input.closest("details");
    if (more) more.open = true;
    A.showError(errorBox, new Error(msg));
    input.focus();
  }

  form.addEventListener("input", (ev) => {
    const input = ev.target;
    if (!(input instanceof HTMLInputElement) || input.getAttribute("aria-invalid") !== "true") return;
    const f = numberFields.concat(drillNumberFields()).find((n) => n.id === input.id);
    if (f && !fieldProblem(f, input.value.trim())) {
      setFieldError(input, "");
      if (!form.querySelector('[aria-invalid="true"]')) A.showError(errorBox, null);
    }
  });

  // readForm returns the race config, or null after marking the first
  // field that cannot be sent as typed.
  function readForm() {
    const fd = new FormData(form);
    const values = {};
    for (const f of numberFields) {
      const input = document.getElementById(f.id);
      if (!input) continue;
      const text = input.value.trim();
      const msg = fieldProblem(f, text);
      if (msg) {
        showFieldError(input, msg);
        return null;
      }
      values[f.key] = text === "" ? undefined : Number(text);
    }
    // The stack goes as an object: its preset and every parameter (the
    // server names it after the preset when nothing was changed).
    const stack = { preset: String(fd.get("stack") || "lean") };
    for (const k of stackKeys) stack[k] = values["stack." + k];
    const cfg = {
      scenario: String(fd.get("scenario") || ""),
      profile: String(fd.get("profile") || ""),
      rtt_ms: values.rtt_ms,
      tool_time_ms: values.tool_time_ms,
      lanes: fd.getAll("lanes").map(String),
      seed: values.seed,
      repeats: values.repeats,
      sequential: fd.get("sequential") !== null,
      take_turns: fd.get("take_turns") !== null,
      stack,
    };
    if (values.decode_tps !== undefined) cfg.decode_tps = values.decode_tps;
    if (values.compact_threshold !== undefined) cfg.compact_threshold = values.compact_threshold;
    const effort = String(fd.get("reasoning_effort") || "");
    if (effort) {
      cfg.reasoning = { effort };
      const summary = String(fd.get("reasoning_summary") || "");
      if (summary) cfg.reasoning.summary = summary;
    }
    const drills = drillRows().map((row) => {
      const d = { lane: row.querySelector('select[data-key="lane"]').value, drill: row.querySelector('select[data-key="drill"]').value };
      if (row.dataset.durationMs) d.duration_ms = Number(row.dataset.durationMs);
      return d;
    });
    for (const f of drillNumberFields()) {
      const input = document.getElementById(f.id);
      const text = input.value.trim();
      const msg = fieldProblem(f, text);
      if (msg) {
        showFieldError(input, msg);
        return null;
      }
      drills[f.row][f.field] = Number(text);
    }
    if (drills.length) cfg.drills = drills;
    return cfg;
  }

  // A refusal from the server that names a parameter marks that field.
  function fieldFor(param) {
    const m = /^drills\[(\d+)\]\.(\w+)$/.exec(param || "");
    if (m) return document.getElementById("race-drill-" + m[1] + "-" + m[2]);
    if (param === "drills") return drillList.querySelector("select");
    const sp = /^stack\.(\w+)$/.exec(param || ""); // a stack parameter out of its range
    if (sp) return document.getElementById("race-stack-" + sp[1]);
    if (param === "workload") return document.getElementById("race-workload");
    const f = numberFields.find((n) => n.key === param);
    return f ? document.getElementById(f.id) : null;
  }

  let startedHere = false;
  let watched = false; // this page saw the race before it ended
  const busyBox = document.getElementById("race-busy");
  let startAnyway = false;

  // liveRuns are the races running or queued on this server right now.
  async function liveRuns() {
    try {
      const list = await A.getJSON("/api/runs?limit=20");
      return (list.data || []).filter((r) => r.status === "running" || r.status === "queued").map((r) => r.id);
    } catch (_) {
      return []; // the start itself will say what is wrong
    }
  }

  document.getElementById("race-start-anyway").addEventListener("click", () => {
    startAnyway = true;
    form.requestSubmit();
  });

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (startBtn.disabled) return;
    A.showError(errorBox, null);
    clearFieldErrors();
    // Presenter mode starts the ready-made race the server names
    // (data-preset); the race page, what its form says.
    const cfg = form.dataset.preset ? JSON.parse(form.dataset.preset) : readForm();
    if (!cfg) return;
    if (cfg.lanes.length === 0) {
      A.showError(errorBox, new Error("Lanes: choose at least one lane."));
      const first = form.querySelector('input[name="lanes"]');
      if (first) first.focus();
      return;
    }
    // Warn before a race that would share the machine with another.
    const forced = startAnyway;
    startAnyway = false;
    busyBox.hidden = true;
    if (!forced) {
      const live = await liveRuns();
      if (live.length > 0) {
        document.getElementById("race-busy-text").textContent = (live.length === 1 ? "Run " + live[0] + " is" : "Runs " + live.join(", ") + " are") +
          " still running. Two races at once share this machine's cores, so both measure slower, and the result will say they overlapped. Start anyway, or wait until it ends.";
        busyBox.hidden = false;
        busyBox.focus();
        return;
      }
    }
    // Your own workload (docs/workload.md) replaces the scenario.
    const workloadFile = document.getElementById("race-workload");
    if (workloadFile && workloadFile.files.length > 0) {
      try {
        cfg.workload = JSON.parse(await workloadFile.files[0].text());
      } catch (_) {
        showFieldError(workloadFile, "Your workload: the file is not JSON.");
        return;
      }
      delete cfg.scenario;
      cfg.lanes = cfg.lanes.filter((l) => l !== "prototype");
    }
    startBtn.disabled = true;
    state.textContent = "Starting…";
    try {
      const id = await A.startRun(cfg);
      history.pushState({ run: id }, "", "/race?" + (present ? "present&" : "") + "run=" + encodeURIComponent(id) + location.hash);
      startedHere = true;
      resetView(id, cfg.lanes);
      connect(id);
    } catch (err) {
      const input = fieldFor(err.param);
      if (input) showFieldError(input, labelOf(input) + ": " + err.message);
      else A.showError(errorBox, err);
      state.textContent = "";
      startBtn.disabled = false;
    }
  });

  window.addEventListener("popstate", () => location.reload());

  // Choosing a preset refills the stack parameters under "More settings".
  const stackSel = document.getElementById("race-stack");
  if (stackSel) {
    let presets = {};
    try {
      presets = JSON.parse(stackSel.dataset.presets || "{}");
    } catch (_) { /* keep the inputs as they are */ }
    stackSel.addEventListener("change", () => {
      const p = presets[stackSel.value];
      const opt = stackSel.selectedOptions[0];
      document.getElementById("race-stack-desc").textContent = opt ? opt.title : "";
      if (!p) return;
      for (const input of form.querySelectorAll("[data-stack-param]")) {
        const v = p[input.dataset.stackParam];
        input.value = v === undefined ? "0" : String(v);
      }
    });
  }

  const scenarioSel = document.getElementById("race-scenario");
  scenarioSel.addEventListener("change", () => {
    const opt = scenarioSel.selectedOptions[0];
    document.getElementById("race-scenario-desc").textContent = opt ? opt.title : "";
  });

  function connect(id) {
    if (socket) {
      socket.onclose = null;
      socket.close();
    }
    clearTimeout(retryTimer);
    const ws = new WebSocket(A.wsURL("/ui/runs/" + encodeURIComponent(id) + "/live"));
    socket = ws;
    ws.onmessage = (ev) => {
      retries = 0;
      let snap;
      try {
        snap = JSON.parse(ev.data);
      } catch (_) {
        return;
      }
      if (snap.run_id === runID) render(snap);
    };
    ws.onclose = () => {
      if (socket !== ws || id !== runID) return;
      socket = null;
      if (last && A.terminal.has(last.status)) return;
      // Not over yet: a page dropped as too slow, a run stored by another
      // process, or a restart. Come back shortly.
      retries++;
      if (retries > 30) {
        state.textContent = "Lost the live feed; reload to try again.";
        return;
      }
      retryTimer = setTimeout(() => connect(id), Math.min(500 * retries, 3000));
    };
  }

  if (cancelBtn) {
    cancelBtn.addEventListener("click", async () => {
      if (!runID) return;
      cancelBtn.disabled = true;
      try {
        await A.stopRun(runID, "cancel");
        // The feed's last frame may have come first: keep its "Finished".
        if (!last || !A.terminal.has(last.status)) state.textContent = "Cancelling…";
      } catch (err) {
        A.showError(errorBox, err);
      } finally {
        cancelBtn.disabled = false;
      }
    });
  }

  function statusWord(s) {
    return s || "queued";
  }

  function render(snap) {
    last = snap;
    const running = !A.terminal.has(snap.status);
    state.textContent = running
      ? snap.status === "running" ? "Running…" : "Queued" + (snap.waiting_behind ? " behind " + snap.waiting_behind : "") + "…"
      : "Finished: " + snap.status + (snap.summary && snap.summary.headline ? ". " + snap.summary.headline : "");
    if (running) watched = true;
    promisedRate(snap.config || {});
    startBtn.disabled = running;
    if (cancelBtn) cancelBtn.hidden = !running;
    document.getElementById("race-elapsed").textContent = fmtNS(snap.elapsed_ns);
    document.getElementById("race-fairness").textContent = snap.fairness || "";
    let maxNS = 0;
    for (const l of snap.lanes) {
      maxNS = Math.max(maxNS, l.elapsed_ns || 0, ...(l.turns || []).map(A.charts.turnEnd));
    }
    maxNS = roundUp(maxNS);
    if (!replay) A.track.draw(track, snap); // the replay draws the track
    for (const l of snap.lanes) {
      if (replay) break; // the replay draws the lanes
      const card = laneCard(l.lane);
      const st = card.querySelector('[data-testid="lane-status"]');
      const word = statusWord(l.status);
      if (st.textContent !== word) {
        st.textContent = word;
        st.dataset.status = word;
      }
      counter(card, "elapsed", l.elapsed_ns ? fmtNS(l.elapsed_ns) : "–");
      counter(card, "turn", l.turn ? String(l.turn) + (snap.config.repeats > 1 ? " (repeat " + (l.repeat + 1) + ")" : "") : "–");
      counter(card, "tokens", fmtInt(l.tokens));
      counter(card, "tps", l.tokens_per_sec ? fmtInt(l.tokens_per_sec) : "–");
      const errBox = card.querySelector(".lane-error");
      errBox.hidden = !l.error;
      errBox.textContent = l.error || "";
      const turns = l.turns || [];
      const key = turns.length + "|" + word + "|" + maxNS + "|" + l.repeat;
      if (drawn[l.lane] !== key) {
        drawn[l.lane] = key;
        A.charts.drawWaterfall(card.querySelector(".waterfall"), turns, { maxNS });
        A.charts.waterfallTable(card.querySelector(".chart-data"), turns);
      }
    }
    if (!running && snap.summary) {
      const first = document.getElementById("race-end").hidden;
      showSummary(snap);
      // A race started here or on the home page, or watched running,
      // hands the focus to its result, which sits at the top.
      if (first && !recorded && (startedHere || watched)) {
        startedHere = false;
        watched = false;
        document.getElementById("race-settings").open = false;
        document.getElementById("race-end-title").focus();
        // Presenter mode plays a race that ran one lane after another on
        // the track after the run.
        if (present && last.config.sequential && replayOffered()) replayPlay(A.track.pace(last));
      }
    }
  }

  // promisedRate names the decode rate the profile promises, next to the
  // lanes' end-to-end tokens/s.
  function promisedRate(cfg) {
    const out = document.getElementById("race-promised-tps");
    if (!out) return;
    let text = "its own rate";
    if (cfg.decode_tps > 0) text = fmtInt(cfg.decode_tps) + " tok/s (set for this race)";
    else {
      const opt = [...document.getElementById("race-profile").options].find((o) => o.value === cfg.profile);
      const m = opt && opt.textContent.match(/\(([\d,]+ tok\/s)\)/);
      if (m) text = m[1] + " (" + cfg.profile + ")";
      else if (cfg.profile === "instant") text = "no modelled rate at all (instant)";
    }
    if (out.textContent !== text) out.textContent = text;
  }

  // roundUp keeps the shared scale steady while it grows.
  function roundUp(ns) {
    if (!(ns > 0)) return 1e9;
    const step = ns > 20e9 ? 5e9 : ns > 5e9 ? 2e9 : 5e8;
    return Math.ceil(ns / step) * step;
  }

  function counter(card, k, text) {
    const dd = card.querySelector('[data-counter="' + k + '"]');
    if (dd.textContent !== text) dd.textContent = text;
  }

  // sameRace offers the finished race again under the other stacks, as the
  // feed phrased them: the same config, only the stack changed.
  function sameRace(links) {
    const box = document.getElementById("race-same");
    clear(box);
    for (const l of links || []) {
      box.append(el("button", { type: "button", "data-start-race": l.config }, l.label));
    }
  }

  function showSummary(snap) {
    const s = snap.summary;
    // The sentences are the summary's own, built once in Go.
    document.getElementById("race-summary").textContent = s.headline || "";
    const answer = document.getElementById("race-workload-answer");
    answer.textContent = s.workload_answer || "";
    answer.hidden = !s.workload_answer;
    const split = document.getElementById("race-split");
    split.textContent = s.split || "";
    split.hidden = !s.split;
    document.getElementById("race-stack-doc").href = s.stack_doc || "/docs/stack";
    sameRace(snap.same_race);
    document.getElementById("race-summary-detail").textContent = [s.range, s.medians].filter(Boolean).join(" ");
    const busy = document.getElementById("race-machine-busy");
    busy.textContent = s.busy || "";
    busy.hidden = !s.busy;
    const went = document.getElementById("race-time-went");
    went.textContent = s.time_went || "";
    went.hidden = !s.time_went;
    const takes = document.getElementById("race-what-it-takes");
    takes.textContent = s.what_it_takes || "";
    takes.hidden = !s.what_it_takes;
    const body = document.querySelector("#race-summary-table tbody");
    clear(body);
    // Each row's cells are the summary's own, phrased once in Go
    // (rollout.LaneShown).
    for (const l of s.lanes || []) {
      const c = l.shown || {};
      body.append(el("tr", null,
        el("th", { scope: "row" }, l.label),
        el("td", null, el("span", { class: "status", "data-status": l.status }, l.status)),
        el("td", null, c.total),
        el("td", null, c.turns),
        el("td", null, c.input),
        el("td", null, c.cached),
        el("td", null, c.median_overhead),
        el("td", null, c.stack_per_turn),
        el("td", null, c.api_cpu),
        el("td", null, c.rollouts_per_core),
        el("td", null, c.vs_http)));
    }
    A.labelCells(document.getElementById("race-summary-table"));
    document.getElementById("race-replay").hidden = !replayOffered();
    document.getElementById("race-replay-apart").hidden = !snap.config.sequential;
    savingBar(s.split_parts || []);
    if (!recorded) showOverlap(snap.run_id);
    document.getElementById("race-end").hidden = false;
    A.charts.drawTimeBars(document.getElementById("time-bars"), s.lanes || []);
    A.charts.timeBarsTable(document.getElementById("time-bars-data"), s.lanes || []);
    drawOverheadChart();
  }

  // savingBar splits the time WebSocket saved into its measured and its
  // modelled parts (the summary's split parts, which sum to it), one bar.
  function savingBar(parts) {
    const fig = document.getElementById("race-saving");
    const sum = { measured: 0, modelled: 0 };
    for (const p of parts) if (p.kind in sum) sum[p.kind] += p.ns;
    const total = Math.max(sum.measured, 0) + Math.max(sum.modelled, 0);
    fig.hidden = !(total > 0);
    if (fig.hidden) return;
    for (const kind of ["measured", "modelled"]) {
      const part = fig.querySelector('[data-kind="' + kind + '"]');
      part.style.flexGrow = String(Math.max(sum[kind], 0) / total);
      part.dataset.ns = String(sum[kind]);
    }
  }

  // showOverlap says in the result when other races ran alongside, in the
  // server's words (web/overlap.go, as on the run page).
  let overlapAsked = "";
  async function showOverlap(id) {
    if (overlapAsked === id) return;
    overlapAsked = id;
    const box = document.getElementById("race-overlap");
    box.hidden = true;
    try {
      const r = await A.getJSON("/ui/runs/" + encodeURIComponent(id) + "/overlaps");
      if (!r.note || id !== runID) return;
      box.textContent = r.note;
      box.hidden = false;
    } catch (_) { /* the result stands without it */ }
  }

  function drawOverheadChart() {
    if (!last) return;
    const series = last.lanes.map((l) => ({ lane: l.lane, label: l.label, turns: l.turns || [] }));
    A.charts.drawOverhead(document.getElementById("overhead-chart"), series, { x: document.getElementById("overhead-x").value });
    A.charts.overheadTable(document.getElementById("overhead-data"), series);
  }

  document.getElementById("overhead-x").addEventListener("change", drawOverheadChart);

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!last) return;
      drawn = {};
      render(last);
      if (replay) replayDraw(replay.untilNS);
    }, 150);
  });

  // ---- the replay: a finished fair race's lanes side by side ----
  // Every lane's turns are offsets from the lane's own start, so drawing
  // each lane up to one clock value shows them as if they had run
  // together, without their having shared the CPU. A step moves the clock
  // to the next moment a turn starts in any lane, which tests drive.
  let replay = null; // {untilNS, maxNS, speed, t0, from, frame}
  const replayClock = document.getElementById("race-replay-clock");

  function replayOffered() {
    return !!last && !!last.config && A.terminal.has(last.status) && last.lanes.some((l) => (l.turns || []).length > 0);
  }

  function replaySpan() {
    return A.track.span(last);
  }

  // replayDraw draws the track at the replay's clock, and each lane's
  // card as it stood then: its clock, the track's words for it, and its
  // waterfall cut there.
  function replayDraw(untilNS) {
    const maxNS = replaySpan();
    A.track.draw(track, last, untilNS);
    for (const l of last.lanes) {
      const card = laneCard(l.lane);
      const turns = l.turns || [];
      const row = track.querySelector('.track-row[data-lane="' + CSS.escape(l.lane) + '"]');
      const end = Math.max(l.elapsed_ns || 0, ...turns.map(A.charts.turnEnd));
      const at = Math.min(untilNS, end);
      const tokens = turns.filter((t) => A.charts.turnEnd(t) <= untilNS).reduce((n, t) => n + (t.output_tokens || 0), 0);
      counter(card, "elapsed", fmtNS(at));
      counter(card, "turn", row.dataset.turnsDone + " / " + row.dataset.turnsOf);
      counter(card, "tokens", fmtInt(tokens));
      counter(card, "tps", at > 0 ? fmtInt(Math.round(tokens / (at / 1e9))) : "–");
      const st = card.querySelector('[data-testid="lane-status"]');
      st.textContent = row.querySelector(".track-result").textContent;
      st.dataset.status = row.dataset.state;
      A.charts.drawWaterfall(card.querySelector(".waterfall"), turns, { maxNS: roundUp(maxNS), untilNS });
    }
    replayClock.textContent = "Replay of the measured run: " + fmtNS(Math.min(untilNS, maxNS)) + " of " + fmtNS(maxNS) +
      (replay && replay.speed ? " at " + replay.speed + "×" : "");
    drawn = {};
  }

  function replayPlay(speed) {
    if (!replayOffered()) return;
    cancelAnimationFrame(replay ? replay.frame : 0);
    const from = replay && replay.untilNS < replaySpan() ? replay.untilNS : 0;
    replay = { untilNS: from, speed, t0: performance.now(), from, frame: 0, due: A.replayPace() };
    const tick = (now) => {
      if (!replay || replay.speed !== speed) return;
      replay.untilNS = replay.from + (now - replay.t0) * 1e6 * speed;
      if (replay.untilNS >= replaySpan()) {
        replay.speed = 0;
        replayDraw(replay.untilNS);
        return;
      }
      if (replay.due(now)) replayDraw(replay.untilNS);
      replay.frame = requestAnimationFrame(tick);
    };
    replay.frame = requestAnimationFrame(tick);
  }

  // replayStep pauses, and moves the clock to the next moment a turn ends
  // in any lane: the track moves one turn (the first step, and the one
  // after the end, start again at 0).
  function replayStep() {
    if (!replayOffered()) return;
    if (replay) cancelAnimationFrame(replay.frame);
    const at = replay && replay.untilNS < replaySpan() ? replay.untilNS : -1;
    const next = at < 0 ? 0 : A.track.steps(last).find((v) => v > at);
    replay = { untilNS: next === undefined ? replaySpan() : next, speed: 0, frame: 0 };
    replayDraw(replay.untilNS);
  }

  function replayStop() {
    if (!replay) return;
    cancelAnimationFrame(replay.frame);
    replay = null;
    replayClock.textContent = "";
    drawn = {};
    if (last) render(last);
  }

  for (const b of document.querySelectorAll("[data-replay-speed]")) {
    b.addEventListener("click", () => replayPlay(Number(b.dataset.replaySpeed)));
  }
  document.getElementById("race-replay-step").addEventListener("click", replayStep);
  document.getElementById("race-replay-stop").addEventListener("click", replayStop);

  // showRecording opens the page on the recorded race the binary carries
  // (views.Recording): a finished race, played on the track.
  function showRecording() {
    const data = document.getElementById("race-recording");
    if (!data || view.dataset.run) return false;
    recorded = true;
    last = null;
    view.hidden = false;
    document.getElementById("race-recording-label").hidden = false;
    render(JSON.parse(data.textContent));
    return true;
  }

  // ---- presenter mode: four steps, one screen each ----
  // The step on screen is html[data-step] (CSS shows its parts) and the
  // URL's #step-N, so a reset or a started race keeps it. → and ← move
  // between steps; S starts the race, R cancels a running race and resets
  // to the recording, P replays the finished race, N steps the replay a
  // turn: each shows the race's step first. They never fire while typing
  // in a field.
  const steps = 4;
  let played = false; // the recording played once on the track
  function showStep(n) {
    n = Math.min(Math.max(n, 1), steps);
    document.documentElement.dataset.step = String(n);
    const name = document.querySelector('#present-step-names').content.querySelector('[data-step="' + n + '"]');
    document.getElementById("present-step-name").textContent = name ? name.textContent : "";
    history.replaceState(history.state, "", location.pathname + location.search + "#step-" + n);
    // The recording plays as a race the first time its step shows.
    if (n === 2 && recorded && !played && replayOffered()) {
      played = true;
      replayPlay(A.track.pace(last));
    }
  }
  const stepNow = () => Number(document.documentElement.dataset.step) || 1;

  if (present) {
    for (const b of document.querySelectorAll("[data-step-move]")) {
      b.addEventListener("click", () => showStep(stepNow() + Number(b.dataset.stepMove)));
    }
    document.addEventListener("keydown", (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
      const t = ev.target;
      if (t instanceof Element && t.closest("input, select, textarea, [contenteditable]")) return;
      const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
      if (k === "ArrowRight" || k === "ArrowLeft") {
        ev.preventDefault();
        showStep(stepNow() + (k === "ArrowRight" ? 1 : -1));
      } else if (k === "s") {
        ev.preventDefault();
        showStep(2);
        if (!startBtn.disabled) form.requestSubmit();
      } else if (k === "r") {
        ev.preventDefault();
        // The race still running stops first: it would hold this
        // client's share of the race slots, and the fresh one would wait.
        const running = runID && last && !recorded && !A.terminal.has(last.status);
        (running ? A.stopRun(runID, "cancel").catch(() => {}) : Promise.resolve()).then(() => {
          history.replaceState(null, "", "/race?present#step-2");
          location.reload();
        });
      } else if (k === "p") {
        ev.preventDefault();
        showStep(2);
        replayPlay(4);
      } else if (k === "n") {
        ev.preventDefault();
        showStep(2);
        replayStep();
      }
    });
  }

  const opened = showRecording();
  if (present) {
    const m = /^#step-(\d)$/.exec(location.hash);
    showStep(m ? Number(m[1]) : 1);
    if (!view.dataset.run) startBtn.focus();
  } else if (opened) {
    replayPlay(A.track.pace(last));
  }
  if (view.dataset.run) {
    runID = view.dataset.run;
    // A race started on the home page: its result takes the focus.
    if (sessionStorage.getItem("agentloop.follow") === runID) {
      sessionStorage.removeItem("agentloop.follow");
      startedHere = true;
    }
    connect(runID);
  }
  document.documentElement.dataset.ready = "race";
})();
