// race.js: starts a race (POST /api/runs) and draws it live from the feed
// at /ui/runs/{id}/live, lanes side by side; a finished run arrives as one
// snapshot built from the store.
"use strict";
(function () {
  const A = window.agentloop;
  const { el, clear, fmtNS, fmtInt, laneLabel, lanes: laneInfo } = A;
  const form = document.getElementById("race-form");
  const view = document.getElementById("race-view");
  if (!form || !view) return;
  const lanesBox = document.getElementById("lanes");
  const state = document.getElementById("race-state");
  const errorBox = document.getElementById("race-error");
  const startBtn = document.getElementById("race-start");
  const cancelBtn = document.getElementById("race-cancel");
  const cores = Number(view.dataset.cores) || 2;

  let runID = "";
  let socket = null;
  let last = null; // latest snapshot
  let drawn = {}; // lane -> key of what its waterfall shows
  let retries = 0;
  let retryTimer = 0;

  function laneCard(name) {
    let card = lanesBox.querySelector('[data-lane="' + CSS.escape(name) + '"]');
    if (card) return card;
    const tpl = document.getElementById("lane-template");
    card = tpl.content.firstElementChild.cloneNode(true);
    card.dataset.lane = name;
    card.dataset.testid = "lane-" + name;
    card.classList.add("lane-" + name);
    card.querySelector(".lane-label").textContent = laneLabel(name);
    card.querySelector(".lane-how").textContent = laneInfo[name] ? laneInfo[name].how : "";
    card.querySelector(".waterfall").setAttribute("aria-label", "Per-turn waterfall of " + laneLabel(name));
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
  }

  function readForm() {
    const fd = new FormData(form);
    const num = (k, d) => {
      const v = String(fd.get(k) || "").trim();
      return v === "" ? d : Number(v);
    };
    // The stack goes as an object: its preset and every parameter (the
    // server names it after the preset when nothing was changed).
    const stack = { preset: String(fd.get("stack") || "lean") };
    for (const k of A.stackParams) stack[k] = num("stack." + k, 0);
    const cfg = {
      scenario: String(fd.get("scenario") || ""),
      profile: String(fd.get("profile") || ""),
      rtt_ms: num("rtt_ms", 0),
      tool_time_ms: num("tool_time_ms", 0),
      lanes: fd.getAll("lanes").map(String),
      seed: num("seed", 1),
      repeats: num("repeats", 1),
      sequential: fd.get("sequential") !== null,
      stack,
    };
    const tps = num("decode_tps", 0);
    if (tps !== 0) cfg.decode_tps = tps;
    return cfg;
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    A.showError(errorBox, null);
    const cfg = readForm();
    if (cfg.lanes.length === 0) {
      A.showError(errorBox, new Error("Choose at least one lane."));
      return;
    }
    for (const k of ["rtt_ms", "tool_time_ms", "seed", "repeats"]) {
      if (!Number.isFinite(cfg[k])) {
        A.showError(errorBox, new Error(k + " must be a number."));
        return;
      }
    }
    for (const k of A.stackParams) {
      if (!Number.isFinite(cfg.stack[k])) {
        A.showError(errorBox, new Error("Stack parameter " + k + " must be a number."));
        return;
      }
    }
    if ("decode_tps" in cfg && !Number.isFinite(cfg.decode_tps)) {
      A.showError(errorBox, new Error("decode_tps must be a number."));
      return;
    }
    startBtn.disabled = true;
    state.textContent = "Starting…";
    try {
      const { id } = await A.sendJSON("POST", "/api/runs", cfg);
      history.pushState({ run: id }, "", "/race?run=" + encodeURIComponent(id));
      resetView(id, cfg.lanes);
      connect(id);
    } catch (err) {
      A.showError(errorBox, err);
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
        await A.sendJSON("POST", "/api/runs/" + encodeURIComponent(runID) + "/cancel", {});
        state.textContent = "Cancelling…";
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
      : "Finished: " + snap.status;
    startBtn.disabled = running;
    if (cancelBtn) cancelBtn.hidden = !running;
    document.getElementById("race-elapsed").textContent = fmtNS(snap.elapsed_ns);
    const fair = document.getElementById("race-fairness");
    if (snap.config.sequential) {
      fair.textContent = running ? "Lanes run one after another, so none competes for the CPU." : "The lanes ran one after another, so none competed for the CPU.";
    } else {
      fair.textContent = running
        ? "Lanes run together and share the " + cores + " cores of this machine."
        : "The lanes ran together and shared the " + cores + " cores of this machine; for fair timing, run them one after another.";
    }
    let maxNS = 0;
    for (const l of snap.lanes) {
      maxNS = Math.max(maxNS, l.elapsed_ns || 0, ...(l.turns || []).map(A.charts.turnEnd));
    }
    maxNS = roundUp(maxNS);
    for (const l of snap.lanes) {
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
      }
    }
    if (!running && snap.summary) showSummary(snap);
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

  function showSummary(snap) {
    const s = snap.summary;
    const h = A.headline(s, snap.config || {});
    document.getElementById("race-summary").textContent = h.text + ".";
    document.getElementById("race-summary-detail").textContent = h.detail;
    const went = document.getElementById("race-time-went");
    went.textContent = s.time_went || "";
    went.hidden = !s.time_went;
    const takes = document.getElementById("race-what-it-takes");
    takes.textContent = A.whatItWouldTake(s.what_it_would_take);
    takes.hidden = !s.what_it_would_take;
    const body = document.querySelector("#race-summary-table tbody");
    clear(body);
    for (const l of s.lanes || []) {
      const vs = (s.saved_vs_http || {})[l.lane];
      body.append(el("tr", null,
        el("th", { scope: "row" }, laneLabel(l.lane)),
        el("td", null, el("span", { class: "status", "data-status": l.status }, l.status)),
        el("td", null, fmtNS(l.total_ns)),
        el("td", null, String(l.turns)),
        el("td", null, fmtInt(l.input_tokens)),
        el("td", null, fmtInt(l.cached_tokens) + " (" + Math.round((l.cached_share || 0) * 100) + "%)"),
        el("td", null, fmtNS(l.median_overhead_ns)),
        el("td", null, fmtNS(l.stack_per_turn_ns)),
        el("td", null, fmtNS(l.api_cpu_ns)),
        el("td", null, l.rollouts_per_core > 0 ? fmtInt(l.rollouts_per_core) : "–"),
        el("td", null, l.lane === "http" || vs === undefined ? "–" : A.sooner(vs))));
    }
    document.getElementById("race-end").hidden = false;
    drawOverheadChart();
  }

  function drawOverheadChart() {
    if (!last) return;
    A.charts.drawOverhead(document.getElementById("overhead-chart"), last.lanes.map((l) => ({ lane: l.lane, turns: l.turns || [] })));
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!last) return;
      drawn = {};
      render(last);
    }, 150);
  });

  if (view.dataset.run) {
    runID = view.dataset.run;
    connect(runID);
  }
})();
