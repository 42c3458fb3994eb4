// run.js: a stored run's timeline (one waterfall per lane), its overhead
// chart, replay at 1x or faster, permalink copy and delete.
"use strict";
(function () {
  const A = window.agentloop;
  const { el, clear, fmtNS } = A;
  const box = document.getElementById("timeline");
  if (!box) return;
  const id = box.dataset.run;
  const lanesBox = document.getElementById("timeline-lanes");
  const clock = document.getElementById("replay-clock");
  const stopBtn = document.getElementById("replay-stop");
  const repeatSel = document.getElementById("timeline-repeat");
  let run = null;
  let replay = null; // {t0, speed, end, due}
  let frame = 0;

  function lanesOf(r) {
    const names = (r.config && r.config.lanes && r.config.lanes.length) ? r.config.lanes : (r.lanes || []).map((l) => l.lane);
    const rep = repeatSel ? Number(repeatSel.value) : 0;
    // Each lane's label is the run's own (rollout.LaneLabel).
    const label = (name) => ((r.lanes || []).find((l) => l.lane === name) || { label: name }).label;
    return names.map((name) => ({ lane: name, label: label(name), turns: (r.turns || []).filter((t) => t.lane === name && t.repeat === rep) }));
  }

  function span(lanes) {
    return Math.max(1, ...lanes.flatMap((l) => l.turns.map(A.charts.turnEnd)));
  }

  function draw(untilNS) {
    if (!run) return;
    const lanes = lanesOf(run);
    const maxNS = span(lanes);
    if (lanesBox.childElementCount !== lanes.length) {
      clear(lanesBox);
      for (const l of lanes) {
        lanesBox.append(el("div", { class: "timeline-lane", "data-lane": l.lane },
          el("h3", null, l.label),
          A.svg("svg", { class: "waterfall", role: "img", "aria-label": "Per-turn waterfall of " + l.label }),
          el("details", { class: "chart-data" }, el("summary", null, "Turns as a table"),
            el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Turns of " + l.label }))));
      }
      lanes.forEach((l, i) => A.charts.waterfallTable(lanesBox.children[i].querySelector(".chart-data"), l.turns));
    }
    lanes.forEach((l, i) => {
      A.charts.drawWaterfall(lanesBox.children[i].querySelector("svg"), l.turns, { maxNS, untilNS });
    });
    clock.textContent = untilNS === undefined ? "Total " + fmtNS(maxNS) : fmtNS(Math.min(untilNS, maxNS)) + " of " + fmtNS(maxNS);
    return maxNS;
  }

  function tick(now) {
    if (!replay) return;
    const t = (now - replay.t0) * 1e6 * replay.speed;
    if (t >= replay.end) {
      stop();
      return;
    }
    if (replay.due(now)) draw(t);
    frame = requestAnimationFrame(tick);
  }

  function stop() {
    replay = null;
    cancelAnimationFrame(frame);
    stopBtn.disabled = true;
    draw(undefined);
  }

  for (const b of box.querySelectorAll("button[data-speed]")) {
    b.addEventListener("click", () => {
      if (!run) return;
      cancelAnimationFrame(frame);
      replay = { t0: performance.now(), speed: Number(b.dataset.speed), end: span(lanesOf(run)), due: A.replayPace() };
      stopBtn.disabled = false;
      frame = requestAnimationFrame(tick);
    });
  }
  stopBtn.addEventListener("click", stop);
  if (repeatSel) {
    repeatSel.addEventListener("change", () => {
      clear(lanesBox);
      stop();
      drawChart();
    });
  }

  const axisSel = document.getElementById("overhead-x");
  function drawChart() {
    const bars = document.getElementById("time-bars");
    if (bars && run.summary) {
      A.charts.drawTimeBars(bars, run.summary.lanes || []);
      A.charts.timeBarsTable(document.getElementById("time-bars-data"), run.summary.lanes || []);
    }
    const lanes = lanesOf(run);
    A.charts.drawOverhead(document.getElementById("overhead-chart"), lanes, { x: axisSel.value });
    A.charts.overheadTable(document.getElementById("overhead-data"), lanes);
  }
  axisSel.addEventListener("change", () => run && drawChart());

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!run) return;
      if (!replay) draw(undefined);
      drawChart();
    }, 150);
  });

  A.getJSON("/api/runs/" + encodeURIComponent(id)).then((r) => {
    run = r;
    draw(undefined);
    drawChart();
  }).catch((err) => A.showError(document.getElementById("run-error"), err));

  const state = document.getElementById("run-state");
  A.copyLink(document.getElementById("run-copy-link"), state);

  const del = document.getElementById("run-delete");
  del.addEventListener("click", async () => {
    if (!confirm("Delete run " + del.dataset.run + " and its transcript?")) return;
    del.disabled = true;
    try {
      await A.stopRun(del.dataset.run, "delete");
      location.assign("/runs");
    } catch (err) {
      A.showError(document.getElementById("run-error"), err);
      del.disabled = false;
    }
  });
})();
