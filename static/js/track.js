// track.js: the race track. Each lane is a horizontal track from the
// start to a finish line after its last turn; a runner moves turn by turn
// on one clock for all, and each lane shows its finish time and place as
// it crosses. A done turn's cell shows its measured time solid and its
// modelled time hatched, as the waterfall does. Every number comes from
// the race's snapshot; the words are the server's (the track's
// data-words, views.RaceTrack).
"use strict";
(function () {
  const A = window.agentloop;
  const { el, clear, fmtNS } = A;

  // turnEnd is when a turn's tools finished, from the lane's start.
  const turnEnd = (t) => Math.max(t.done_ns || 0, t.sent_ns || 0) + (t.tool_ns || 0);
  const terminal = (s) => A.terminal.has(s);

  function words(root) {
    if (!root._words) root._words = JSON.parse(root.dataset.words || "{}");
    return root._words;
  }

  // fill puts values into a phrase of the server's: "{lane} at turn {turn}".
  function fill(phrase, values) {
    return String(phrase || "").replace(/\{(\w+)\}/g, (_, k) => (values[k] === undefined ? "" : String(values[k])));
  }

  // lanesAt is each lane's state on the race clock: clockNS when given (a
  // replay), else a running race's clock_ns (the clock every runner is
  // drawn at: the wall clock for lanes together, the slowest running
  // lane's own clock for lanes taking turns), else each lane's own
  // elapsed time. Every time is on the
  // lane's own clock, from its start.
  function lanesAt(snap, clockNS) {
    // A race that ended shows every lane's end, whatever its last clock.
    const live = snap.clock_ns !== undefined && !terminal(snap.status);
    const clock = clockNS !== undefined && clockNS !== null ? clockNS : live ? snap.clock_ns : null;
    const out = (snap.lanes || []).map((l) => {
      const real = (l.turns || []).filter((t) => t.index >= 0);
      const ended = terminal(l.status) && real.length > 0;
      const finishNS = ended ? Math.max(l.elapsed_ns || 0, ...real.map(turnEnd)) : 0;
      const done = clock === null ? real.length : real.filter((t) => turnEnd(t) <= clock).length;
      const crossed = ended && (clock === null || clock >= finishNS);
      return { lane: l.lane, label: l.label, status: l.status, real, done: crossed ? real.length : Math.min(done, real.length), finishNS, crossed, passed: l.status === "passed" };
    });
    return { clock, lanes: out };
  }

  // turnsOf is where the finish line stands: the workload's turns, or the
  // most turns a lane that ended ran (every lane runs the same scenario);
  // until one ends, the scale grows ahead of the leader.
  function turnsOf(snap, lanes) {
    const w = snap.config && snap.config.workload_summary;
    if (w && w.turns > 0) return { of: w.turns, known: true };
    const ended = lanes.filter((l) => l.finishNS > 0).map((l) => l.real.length);
    if (ended.length) return { of: Math.max(...ended), known: true };
    const lead = Math.max(0, ...lanes.map((l) => l.real.length));
    return { of: Math.max(10, Math.ceil((lead + 5) / 10) * 10), known: false };
  }

  // split is a turn's measured and modelled time, from its stages' kinds.
  function split(t) {
    const total = Math.max(turnEnd(t) - (t.sent_ns || 0), 0);
    let modelled = 0;
    for (const s of t.stages || []) if (s.kind === "modelled") modelled += s.duration_ns || 0;
    modelled = Math.min(modelled, total);
    return { total, modelled };
  }

  function row(root, l) {
    let r = root.querySelector('.track-row[data-lane="' + CSS.escape(l.lane) + '"]');
    if (r) return r;
    r = el("li", { class: "track-row lane-color-" + l.lane, "data-lane": l.lane, "data-testid": "track-" + l.lane },
      el("span", { class: "track-name", "data-class-reads": "" }, l.label),
      el("span", { class: "track-lane", "aria-hidden": "true" },
        el("span", { class: "track-cells" }),
        el("span", { class: "track-mark", hidden: "" }),
        el("span", { class: "track-finish" }),
        el("span", { class: "track-runner" })),
      el("span", { class: "track-result", "data-class-reads": "" }));
    root.querySelector(".track-rows").append(r);
    return r;
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  // draw shows the snapshot on the track at clockNS (see lanesAt).
  function draw(root, snap, clockNS) {
    const w = words(root);
    const { clock, lanes } = lanesAt(snap, clockNS);
    const { of, known } = turnsOf(snap, lanes);
    root.dataset.turnsOf = String(of);
    const names = new Set(lanes.map((l) => l.lane));
    for (const r of root.querySelectorAll(".track-rows > .track-row")) if (!names.has(r.dataset.lane)) r.remove();
    // Places: the lanes that crossed, by finish time.
    const order = lanes.filter((l) => l.crossed && l.passed).sort((a, b) => a.finishNS - b.finishNS);
    const first = order[0];
    const places = w.places || [];
    const rows = root.querySelector(".track-rows");
    lanes.forEach((l, i) => {
      const r = row(root, l);
      // The snapshot's order, moving a row only when it is out of place:
      // a moved node is laid out and painted again.
      if (rows.children[i] !== r) rows.insertBefore(r, rows.children[i] || null);
      r.dataset.turnsDone = String(l.done);
      r.dataset.turnsOf = String(l.real.length && l.crossed ? l.real.length : of);
      r.dataset.state = l.crossed ? "finished" : l.done > 0 ? "running" : "waiting";
      const cells = r.querySelector(".track-cells");
      if (cells.childElementCount !== l.done || cells.dataset.of !== String(of)) {
        clear(cells);
        cells.dataset.of = String(of);
        for (let i = 0; i < l.done; i++) {
          const s = split(l.real[i]);
          const share = s.total > 0 ? (100 * s.modelled) / s.total : 0;
          // Sizes go through the style object: the pages' CSP refuses
          // style attributes.
          const cell = el("span", { class: "track-cell" }, el("span", { class: "cell-measured" }), el("span", { class: "cell-modelled" }));
          cell.style.width = 100 / of + "%";
          cell.firstChild.style.height = 100 - share + "%";
          cell.lastChild.style.height = share + "%";
          cells.append(cell);
        }
      }
      r.querySelector(".track-runner").style.left = (100 * Math.min(l.done, of)) / of + "%";
      r.querySelector(".track-finish").hidden = !known;
      const place = order.indexOf(l);
      let result;
      if (l.crossed && place >= 0) result = fill(w.finished, { place: places[place] || String(place + 1), time: fmtNS(l.finishNS) });
      else if (l.crossed) result = l.status;
      else if (l.done > 0 || (!terminal(l.status) && l.status === "running")) result = fill(w.turns, { done: l.done, of: known ? of : "…" });
      else result = l.status || "queued";
      setText(r.querySelector(".track-result"), result);
      // The moment the first lane crossed: where this one was then.
      const mark = r.querySelector(".track-mark");
      const at = first && l !== first ? l.real.filter((t) => turnEnd(t) <= first.finishNS).length : -1;
      mark.hidden = !(first && l !== first && at < of);
      if (!mark.hidden) mark.style.left = (100 * at) / of + "%";
      l.atFirst = at;
    });
    // The caption names that moment: "WebSocket finished — HTTP at turn 16".
    const caption = root.querySelector(".track-caption");
    if (caption) {
      const behind = first ? lanes.filter((l) => l !== first && l.atFirst >= 0 && l.atFirst < of) : [];
      const text = first && behind.length
        ? fill(w.first, { lane: first.label, others: behind.map((l) => fill(w.at, { lane: l.label, turn: l.atFirst })).join(w.and || ", ") })
        : "";
      setText(caption, text);
      caption.hidden = !text;
    }
    // The axis: turns from the start to the finish line.
    const axis = root.querySelector(".track-axis");
    if (axis && axis.dataset.of !== String(of)) {
      axis.dataset.of = String(of);
      clear(axis);
      const step = of <= 12 ? 1 : of <= 30 ? 5 : of <= 100 ? 10 : Math.ceil(of / 100) * 10 * (of > 500 ? 5 : 1);
      for (let n = 0; n <= of; n += step) {
        const tick = el("span", { class: "track-tick" }, String(n));
        tick.style.left = (100 * n) / of + "%";
        axis.append(tick);
      }
    }
    const clockOut = root.querySelector(".track-clock");
    // Without one clock, the lanes run on their own: the clock shows the
    // furthest lane's.
    const own = Math.max(0, ...lanes.map((l) => Math.max(l.finishNS, ...l.real.map(turnEnd))), ...(snap.lanes || []).map((l) => l.elapsed_ns || 0));
    if (clockOut) setText(clockOut, fmtNS(clock !== null ? Math.min(clock, Math.max(own, 0)) : own));
  }

  // span is when the last lane crossed, on the race clock.
  function span(snap) {
    return Math.max(1, ...lanesAt(snap, null).lanes.map((l) => Math.max(l.finishNS, ...l.real.map(turnEnd))));
  }

  // starts are the moments a turn ends in any lane: a replay's steps.
  function steps(snap) {
    const at = new Set();
    for (const l of snap.lanes || []) for (const t of l.turns || []) if (t.index >= 0) at.add(turnEnd(t));
    return [...at].sort((a, b) => a - b);
  }

  // pace is the replay speed that plays a race in about half a minute or
  // less: 1×, 4× or 16×.
  function pace(snap) {
    const end = span(snap);
    return [1, 4, 16].find((v) => end / v <= 30e9) || 16;
  }

  // play replays a finished race on the track from its start at speed×,
  // ten draws a second (A.replayPace); it returns a function that stops
  // it.
  function play(root, snap, speed) {
    const end = span(snap);
    let frame = 0;
    const due = A.replayPace();
    const t0 = performance.now();
    const tick = (now) => {
      const at = Math.min((now - t0) * 1e6 * speed, end);
      if (at >= end || due(now)) draw(root, snap, at);
      if (at < end) frame = requestAnimationFrame(tick);
    };
    draw(root, snap, 0);
    frame = requestAnimationFrame(tick);
    return () => cancelAnimationFrame(frame);
  }

  A.track = { draw, span, steps, pace, play };
})();
