// inspect.js: the inspector. /inspect keeps its table of sessions live from
// /ui/inspect/live, and arms, lists and disarms fault drills (/api/drills); /inspect/{id} draws a session (summary, estimate,
// waterfall and turns table) from /api/sessions/{id} and keeps it live from
// /ui/inspect/{id}/live. Feed frames and fetches may arrive in any order:
// turns merge by index and a session's summary keeps the highest version.
"use strict";
(function () {
  const A = window.agentloop;
  const { el, svg, clear, fmtNS, fmtInt } = A;

  // follow opens a push-only feed, calls onOpen once it is open (so a fetch
  // made then misses nothing) and onFrame for every frame, and comes back
  // after a drop.
  function follow(path, state, onOpen, onFrame) {
    let retries = 0;
    function connect() {
      const ws = new WebSocket(A.wsURL(path));
      ws.onopen = () => {
        retries = 0;
        state.textContent = "Live";
        onOpen();
      };
      ws.onmessage = (ev) => {
        let frame;
        try {
          frame = JSON.parse(ev.data);
        } catch (_) {
          return;
        }
        onFrame(frame);
      };
      ws.onclose = () => {
        retries++;
        if (retries > 30) {
          state.textContent = "Lost the live feed; reload to try again.";
          return;
        }
        state.textContent = "Reconnecting…";
        setTimeout(connect, Math.min(500 * retries, 3000));
      };
    }
    connect();
  }

  // scheduler draws at most once per animation frame.
  function scheduler(draw) {
    let queued = false;
    return () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        draw();
      });
    };
  }

  function tokens(x) {
    return fmtInt(x.input_tokens) + " / " + fmtInt(x.cached_tokens) + " / " + fmtInt(x.output_tokens);
  }

  function when(ns) {
    const d = new Date(ns / 1e6);
    return el("time", { datetime: d.toISOString() }, d.toLocaleString());
  }

  function markReady(name) {
    document.documentElement.dataset.ready = name;
  }

  // ---- /inspect: fault drills ----
  // drillPanel arms a drill from the form, lists the armed drills with
  // their firings and disarms them, refreshing the list after each action.
  // A refusal that names a parameter is shown on that field.
  function drillPanel(root) {
    const form = document.getElementById("drill-form");
    const body = document.getElementById("drills-body");
    const empty = document.getElementById("drills-empty");
    const state = document.getElementById("drill-state");
    const errorBox = document.getElementById("drill-error");
    const armBtn = document.getElementById("drill-arm");
    // The API's parameters and the fields that hold them.
    const fields = { drill: "drill-name", after_turns: "drill-after", times: "drill-times", duration_ms: "drill-duration", after_ms: "drill-after-ms", scope: "drill-scope" };
    let armed = 0;
    let loading = null;
    let again = false;

    function labelOf(input) {
      const l = form.querySelector('label[for="' + CSS.escape(input.id) + '"]');
      return l ? l.textContent.trim() : input.name;
    }

    function fieldError(input, msg) {
      A.setFieldError(input, msg);
      A.showError(errorBox, new Error(msg));
      input.focus();
    }

    // refresh reads the armed drills; a call while a read is under way
    // reads again after it, so the list never shows what was before an action.
    function refresh() {
      if (loading) {
        again = true;
        return loading;
      }
      loading = A.getJSON("/api/drills").then((r) => {
        draw(r.data || []);
        root.dataset.loaded = "true";
      }).catch((err) => A.showError(errorBox, err)).finally(() => {
        loading = null;
        if (again) {
          again = false;
          refresh();
        }
      });
      return loading;
    }

    function firingText(f) {
      const what = f.upgrade ? "refused an upgrade" : f.response_id ? f.response_id : "refused a request";
      return what + (f.session ? " · " + f.session : "");
    }

    function draw(list) {
      armed = list.length;
      clear(body);
      for (const d of list) {
        const firings = (d.firings || []).slice(-5);
        const btn = el("button", { type: "button", "data-testid": "drill-disarm", "aria-label": "Disarm " + d.drill + " (" + d.id + ")" }, "Disarm");
        btn.addEventListener("click", () => disarm(d, btn));
        body.append(el("tr", { "data-testid": "drill-row", "data-drill": d.id },
          el("th", { scope: "row" }, d.drill, " ", el("code", { class: "muted small" }, d.id)),
          el("td", null, d.after_ms ? fmtNS(d.after_ms * 1e6) + " from the connection's start" : String(d.after_turns)),
          el("td", { "data-testid": "drill-fired" }, d.fired + " / " + d.times),
          el("td", null, d.duration_ms ? fmtNS(d.duration_ms * 1e6) : "–"),
          el("td", null, d.scope ? el("code", null, d.scope) : "every session"),
          el("td", { class: "small" }, firings.length ? el("ul", { class: "plain" }, ...firings.map((f) => el("li", null, when(f.at_unix_ns), " ", firingText(f)))) : "–"),
          el("td", null, btn)));
      }
      empty.hidden = list.length > 0;
    }

    async function disarm(d, btn) {
      btn.disabled = true;
      A.showError(errorBox, null);
      try {
        const r = await A.sendJSON("DELETE", "/api/drills/" + encodeURIComponent(d.id));
        state.textContent = "Disarmed " + d.drill + " (" + d.id + ") after " + r.fired + " firing" + (r.fired === 1 ? "" : "s") + ".";
      } catch (err) {
        A.showError(errorBox, err);
        btn.disabled = false;
      }
      await refresh();
    }

    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (armBtn.disabled) return;
      A.showError(errorBox, null);
      for (const input of form.querySelectorAll('[aria-invalid="true"]')) A.setFieldError(input, "");
      const spec = { drill: document.getElementById(fields.drill).value };
      for (const key of ["after_turns", "times", "duration_ms", "after_ms"]) {
        const input = document.getElementById(fields[key]);
        const text = input.value.trim();
        if ((input.validity && input.validity.badInput) || (text !== "" && !Number.isFinite(Number(text)))) {
          fieldError(input, labelOf(input) + " is not a number.");
          return;
        }
        if (text !== "") spec[key] = Number(text);
      }
      const scope = document.getElementById(fields.scope).value.trim();
      if (scope !== "") spec.scope = scope;
      armBtn.disabled = true;
      state.textContent = "Arming…";
      try {
        const d = await A.sendJSON("POST", "/api/drills", spec);
        state.textContent = "Armed " + d.drill + " (" + d.id + ").";
      } catch (err) {
        state.textContent = "";
        const input = fields[err.param] && document.getElementById(fields[err.param]);
        if (input) fieldError(input, labelOf(input) + ": " + err.message);
        else A.showError(errorBox, err);
      }
      armBtn.disabled = false;
      await refresh();
    });

    // Clearing a marked field's error once it is edited.
    form.addEventListener("input", (ev) => {
      const input = ev.target;
      if (input instanceof HTMLElement && input.getAttribute("aria-invalid") === "true") {
        A.setFieldError(input, "");
        if (!form.querySelector('[aria-invalid="true"]')) A.showError(errorBox, null);
      }
    });

    refresh();
    // While a drill is armed, the sessions' changes may be its firings.
    return { changed: () => { if (armed > 0) refresh(); } };
  }

  // ---- /inspect ----
  function listPage(root, drills) {
    const body = document.getElementById("sessions-body");
    const empty = document.getElementById("sessions-empty");
    const state = document.getElementById("inspect-state");
    const sessions = new Map(); // id → session
    let loaded = false;

    function merge(list) {
      for (const s of list || []) {
        const old = sessions.get(s.id);
        if (!old || s.version >= old.version) sessions.set(s.id, s);
      }
      draw();
    }

    // The playground's own races tag their sessions (run and lane); the
    // box hides them.
    const hideRaces = document.getElementById("sessions-hide-races");
    const draw = scheduler(() => {
      const rows = [...sessions.values()].filter((s) => !(hideRaces && hideRaces.checked && s.race))
        .sort((a, b) => b.updated_unix_ns - a.updated_unix_ns || (a.id < b.id ? -1 : 1));
      clear(body);
      for (const s of rows) {
        const short = s.id.length > 17 ? s.id.slice(0, 17) + "…" : s.id;
        const sum = s.summary || {};
        body.append(el("tr", { "data-testid": "session-row", "data-session": s.id },
          el("td", null, el("a", { href: "/inspect/" + encodeURIComponent(s.id) }, el("code", null, short)),
            s.live ? " " : null, s.live ? el("span", { class: "status", "data-status": "running" }, "live") : null),
          el("td", s.race ? { "data-race": s.race } : null, s.row.client),
          el("td", null, s.row.transport),
          el("td", { "data-testid": "session-turns" }, String(sum.turns || 0)),
          el("td", null, String(sum.errors || 0)),
          el("td", null, s.row.cache),
          el("td", null, s.row.tokens),
          el("td", null, s.row.overhead),
          el("td", null, when(s.updated_unix_ns))));
      }
      empty.hidden = rows.length > 0;
      if (loaded) markReady("inspect");
    });

    if (hideRaces) hideRaces.addEventListener("change", draw);

    follow("/ui/inspect/live", state, () => {
      A.getJSON("/api/sessions?limit=100").then((r) => {
        loaded = true;
        merge(r.data);
      }).catch((err) => { state.textContent = "Could not list sessions: " + (err.message || err); });
    }, (frame) => {
      merge(frame.sessions);
      if (drills) drills.changed();
    });
  }

  // ---- /inspect/{id} ----
  function sessionPage(root) {
    const id = root.dataset.session;
    const state = document.getElementById("session-state");
    const errorBox = document.getElementById("session-error");
    const live = document.getElementById("session-live");
    const turns = new Map(); // index → turn
    let session = null;

    function merge(s) {
      if (!s) return;
      if (!session || s.version >= session.version) session = s;
      for (const t of s.turns || []) turns.set(t.index, t);
      draw();
    }

    function field(dl, label, value, testid) {
      dl.append(el("div", null, el("dt", null, label), el("dd", testid ? { "data-testid": testid } : null, value)));
    }

    const draw = scheduler(() => {
      if (!session) return;
      const sum = session.summary || {};
      live.textContent = session.live ? "live" : "idle";
      live.dataset.status = session.live ? "running" : "passed";
      const dl = document.getElementById("summary-fields");
      clear(dl);
      field(dl, "Turns", String(sum.turns || 0), "summary-turns");
      field(dl, "Errors", String(sum.errors || 0));
      field(dl, "Drills fired", String(sum.drills || 0));
      field(dl, "Cache hits / misses", (sum.cache_hits || 0) + " / " + (sum.cache_misses || 0));
      field(dl, "Tokens in / cached / out", tokens(sum));
      field(dl, "Bytes in / out", fmtInt(sum.bytes_in) + " / " + fmtInt(sum.bytes_out));
      field(dl, "API overhead (measured)", fmtNS(sum.overhead_ns), "summary-overhead");
      field(dl, "API stack (modelled)", fmtNS(sum.stack_ns));
      const est = sum.ws_estimate;
      const estFields = document.getElementById("estimate-fields");
      if (est && estFields) {
        clear(estFields);
        field(estFields, "API overhead (estimate)", fmtNS(est.overhead_ns));
        field(estFields, "API stack (estimate)", fmtNS(est.stack_ns));
        field(estFields, "Saved (estimate)", fmtNS(est.saved_ns), "estimate-saved");
        field(estFields, "Turns estimated as continuations", String(est.continuations));
        document.getElementById("estimate-method").textContent = est.method;
      }
      const list = [...turns.values()].sort((a, b) => a.index - b.index);
      drawTurns(list);
      drawWaterfall(document.getElementById("session-waterfall"), list);
      markReady("session");
    });

    function drawTurns(list) {
      const body = document.getElementById("turns-body");
      const http = !!document.getElementById("estimate-fields");
      clear(body);
      for (const t of list) {
        const est = t.ws_estimate;
        const cache = (t.cache || []).map((c) => c.cache + " " + (c.hit ? "hit" : "miss") + (c.note ? " (" + c.note + ")" : "")).join("; ");
        const stages = (t.spans || []).filter((s) => s.duration_ns > 0)
          .map((s) => s.name + " " + fmtNS(s.duration_ns) + (s.kind === "modelled" ? " (modelled)" : "")).join(" · ");
        const problem = [t.drill ? "drill: " + t.drill : "", t.error ? "error: " + t.error + (t.status ? " (" + t.status + ")" : "") : ""]
          .filter(Boolean).join("; ");
        body.append(el("tr", { "data-testid": "turn-row", "data-error": t.error ? "true" : null },
          el("th", { scope: "row" }, String(t.index + 1)),
          el("td", null, t.response_id ? el("code", null, t.response_id) : "–"),
          el("td", null, fmtNS(t.duration_ns)),
          el("td", null, fmtNS(t.overhead_ns)),
          el("td", null, fmtNS(t.stack_ns)),
          http ? el("td", null, est && est.continuation ? fmtNS(est.overhead_ns + est.stack_ns) + " (" + est.new_items + " new items)" : "as it was") : null,
          el("td", null, tokens(t)),
          el("td", { class: "small" }, cache || "–"),
          el("td", { class: "small" }, stages || "–"),
          el("td", null, problem || "–")));
      }
    }

    // drawWaterfall draws one row per turn, its spans where they ran,
    // on the time scale of the session's longest turn.
    function drawWaterfall(root, list) {
      clear(root);
      const W = Math.max(Math.round(root.getBoundingClientRect().width), 320);
      const left = 34, right = 8, top = 4, rowH = 8, gap = 3, axisH = 18;
      const rows = Math.max(list.length, 1);
      const H = top + rows * (rowH + gap) + axisH;
      root.setAttribute("viewBox", "0 0 " + W + " " + H);
      root.setAttribute("height", H);
      const maxNS = Math.max(1, ...list.map((t) => t.duration_ns || 0));
      const x = (ns) => left + (ns / maxNS) * (W - left - right);
      const pat = "hatch-session";
      root.append(svg("defs", null, svg("pattern", { id: pat, width: 5, height: 5, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        svg("rect", { width: 2, height: 5, class: "hatch-line" }))));
      list.forEach((t, i) => {
        const y = top + i * (rowH + gap);
        if (i === 0 || (t.index + 1) % 5 === 0) {
          root.append(svg("text", { x: left - 4, y: y + rowH, class: "tick", "text-anchor": "end" }, String(t.index + 1)));
        }
        if (t.error && !(t.spans || []).length) {
          root.append(svg("rect", { x: left, y, width: 4, height: rowH, class: "stage-error" }, svg("title", null, "error: " + t.error)));
          return;
        }
        for (const s of t.spans || []) {
          if (!(s.duration_ns > 0)) continue;
          const w = Math.max(x(s.start_ns + s.duration_ns) - x(s.start_ns), 0.5);
          root.append(svg("rect", { x: x(s.start_ns), y, width: w, height: rowH, class: "stage-" + s.group },
            svg("title", null, s.name + " " + fmtNS(s.duration_ns) + " (" + s.kind + ")")));
          if (s.kind === "modelled") {
            root.append(svg("rect", { x: x(s.start_ns), y, width: w, height: rowH, fill: "url(#" + pat + ")", class: "modelled" }));
          }
        }
        if (t.error) {
          root.append(svg("rect", { x: x(t.duration_ns || 0), y, width: 4, height: rowH, class: "stage-error" }, svg("title", null, "error: " + t.error)));
        }
      });
      const yAxis = top + rows * (rowH + gap) + 1;
      root.append(svg("g", { class: "axis" },
        svg("line", { x1: left, x2: W - right, y1: yAxis, y2: yAxis }),
        svg("text", { x: left, y: yAxis + 14, class: "tick" }, "0"),
        svg("text", { x: W - right, y: yAxis + 14, class: "tick", "text-anchor": "end" }, fmtNS(maxNS))));
    }

    A.copyLink(document.getElementById("session-copy-link"), state);

    // Race this session: its workload, raced as the button's config says;
    // the race view follows it live.
    const raceBtn = document.getElementById("session-race");
    raceBtn.addEventListener("click", async () => {
      raceBtn.disabled = true;
      state.textContent = "Starting a race of this session…";
      try {
        const cfg = JSON.parse(raceBtn.dataset.config);
        cfg.workload = await A.getJSON(raceBtn.dataset.workload);
        const id = await A.startRun(cfg);
        window.location.assign("/race?run=" + encodeURIComponent(id));
      } catch (err) {
        raceBtn.disabled = false;
        state.textContent = "";
        A.showError(errorBox, err);
      }
    });

    follow("/ui/inspect/" + encodeURIComponent(id) + "/live", state, () => {
      A.getJSON("/api/sessions/" + encodeURIComponent(id)).then(merge).catch((err) => A.showError(errorBox, err));
    }, (frame) => merge(frame.session));
  }

  const drillRoot = document.getElementById("drills");
  const drills = drillRoot ? drillPanel(drillRoot) : null;
  const list = document.getElementById("inspect-list");
  if (list) listPage(list, drills);
  const one = document.getElementById("session");
  if (one) sessionPage(one);
})();
