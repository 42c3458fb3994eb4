// charts.js: the waterfall of a lane's turns and the per-turn API overhead
// chart, drawn as SVG sized to their box (no library).
"use strict";
(function () {
  const { el, svg, clear, fmtNS, fmtInt } = window.agentloop;
  let uid = 0;

  function widthOf(node, fallback) {
    const w = Math.round(node.getBoundingClientRect().width);
    return w > 0 ? w : fallback;
  }

  // hatch adds a diagonal-stripe pattern that marks modelled time.
  function hatch(root) {
    const id = "hatch-" + (++uid);
    const pat = svg("pattern", { id, width: 5, height: 5, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      svg("rect", { width: 2, height: 5, class: "hatch-line" }));
    root.append(svg("defs", null, pat));
    return "url(#" + id + ")";
  }

  // segments lays a turn's stages end to end from the moment it was sent.
  // Until the engine's trace for a turn is merged (moments after the turn ends), the time to
  // the first token is drawn as "waiting" and the stream as decode.
  function segments(t) {
    const out = [];
    let at = t.sent_ns || 0;
    const engine = (t.stages || []).some((s) => s.name === "overhead");
    if (!engine && t.done_ns > 0) {
      const first = t.first_token_ns > 0 ? t.first_token_ns : t.done_ns;
      const last = t.last_token_ns > 0 ? t.last_token_ns : first;
      out.push({ name: "pending", start: at, dur: first - at, kind: "measured" });
      out.push({ name: "decode", start: first, dur: last - first, kind: "modelled" });
      out.push({ name: "network", start: last, dur: t.done_ns - last, kind: "measured" });
      at = t.done_ns;
    }
    for (const s of t.stages || []) {
      if (!engine && s.name !== "tool") continue;
      out.push({ name: s.name, start: at, dur: s.duration_ns, kind: s.kind });
      at += s.duration_ns;
    }
    return out.filter((s) => s.dur > 0);
  }

  function turnEnd(t) {
    return Math.max(t.done_ns || 0, t.sent_ns || 0) + (t.tool_ns || 0);
  }

  // drawWaterfall draws one row per turn. opts.maxNS is the shared time
  // scale (so lanes compare by eye); opts.untilNS, when set, cuts every bar
  // at that moment (replay).
  function drawWaterfall(root, turns, opts) {
    opts = opts || {};
    clear(root);
    const W = widthOf(root, 320);
    const fs = tickSize(root);
    const left = Math.round(Math.max(56, fs * 4.6)), right = 6, top = 4, rowH = 7, gap = 2, axisH = Math.round(fs * 1.6);
    const rows = Math.max(turns.length, 1);
    const H = top + rows * (rowH + gap) + axisH;
    root.setAttribute("viewBox", "0 0 " + W + " " + H);
    root.setAttribute("height", H);
    const maxNS = Math.max(opts.maxNS || 0, ...turns.map(turnEnd), 1);
    const x = (ns) => left + (ns / maxNS) * (W - left - right);
    const until = opts.untilNS === undefined ? Infinity : opts.untilNS;
    const fill = hatch(root);
    const g = svg("g");
    const marks = svg("g", { class: "drill-marks" });
    turns.forEach((t, i) => {
      const y = top + i * (rowH + gap);
      if ((t.sent_ns || 0) <= until && recovered(t)) marks.append(drillMark(t, x, y, rowH, fs));
      if (i === 0 || (t.index + 1) % Math.max(5, Math.ceil((fs * 1.2) / (rowH + gap))) === 0) {
        g.append(svg("text", { x: left - 4, y: y + rowH, class: "tick", "text-anchor": "end" }, turnName(t, true)));
      }
      if (t.error) {
        if ((t.sent_ns || 0) <= until) {
          g.append(svg("rect", { x: x(t.sent_ns || 0), y, width: 4, height: rowH, class: "stage-error" }, svg("title", null, "error: " + t.error)));
        }
        return;
      }
      for (const s of segments(t)) {
        if (s.start >= until) continue;
        const end = Math.min(s.start + s.dur, until);
        const w = Math.max(x(end) - x(s.start), 0.5);
        let label = s.name + " " + fmtNS(s.dur) + " (" + s.kind + ")";
        if (s.name === "recovery" && t.drills) label += ": drill " + t.drills.join(", ");
        g.append(svg("rect", { x: x(s.start), y, width: w, height: rowH, class: "stage-" + s.name }, svg("title", null, label)));
        if (s.kind === "modelled") {
          g.append(svg("rect", { x: x(s.start), y, width: w, height: rowH, fill, class: "modelled" }));
        }
      }
    });
    root.append(g);
    root.append(marks);
    axis(root, x, maxNS, top + rows * (rowH + gap), left, W - right, fs);
    if (until !== Infinity && until < maxNS) {
      root.append(svg("line", { x1: x(until), x2: x(until), y1: 0, y2: top + rows * (rowH + gap), class: "cursor" }));
    }
  }

  // tickSize is the chart's tick font size in px (presenter mode's is
  // larger), so the layout leaves room for its labels.
  function tickSize(root) {
    const v = parseFloat(getComputedStyle(root).getPropertyValue("--tick-size"));
    return v > 0 ? v : 11;
  }

  // recovered says whether a fault drill or a recovery hit the turn.
  function recovered(t) {
    return (t.drills && t.drills.length > 0) || (t.recoveries && t.recoveries.length > 0);
  }

  // recoveryText says what hit a turn and how the lane recovered:
  // "evict-cache: previous_response_not_found, full-context retry, 22.8 ms".
  function recoveryText(t) {
    const drills = (t.drills || []).join(", ");
    const how = (t.recoveries || []).map((r) => r.error + " → " + r.action + " (" + fmtNS(r.duration_ns) + ")").join("; ");
    return (drills ? "drill " + drills : "no drill") + (how ? ": " + how : "");
  }

  // drillMark is a turn's visible, labelled marker, reachable by Tab: a
  // triangle at the turn's start and the drill's name after its bar.
  function drillMark(t, x, y, rowH, fs) {
    const label = "Turn " + turnName(t) + ": " + recoveryText(t);
    const x0 = x(t.sent_ns || 0);
    const name = (t.drills && t.drills.length ? t.drills.join(", ") : "recovery") + " ↻";
    return svg("g", { class: "drill-mark", tabindex: "0", role: "img", "aria-label": label, "data-testid": "drill-mark" },
      svg("title", null, label),
      svg("path", { d: "M" + (x0 - 5) + " " + (y - 3) + " L" + (x0 + 5) + " " + (y - 3) + " L" + x0 + " " + (y + rowH) + " Z", class: "drill-flag" }),
      svg("text", { x: x(turnEnd(t)) + 6, y: y + rowH, class: "tick drill-label" }, name));
  }

  // axis draws a time axis with round ticks, as many as fit their labels.
  function axis(root, x, maxNS, y, x0, x1, fs) {
    fs = fs || 11;
    const g = svg("g", { class: "axis" });
    g.append(svg("line", { x1: x0, x2: x1, y1: y + 1, y2: y + 1 }));
    // A label such as "12.0 s" is about 3.5 em wide; keep a gap of one label.
    const fit = Math.max(1, Math.floor((x1 - x0) / (fs * 7)));
    let step = niceStep(maxNS / Math.min(4, fit));
    while (maxNS / step > fit && step < maxNS) step = nextStep(step);
    for (let v = 0; v <= maxNS + 1; v += step) {
      // A tick near the right edge is anchored at its end, so it is never clipped.
      const anchor = v === 0 ? "start" : x(v) > x1 - fs * 2.5 ? "end" : "middle";
      g.append(svg("line", { x1: x(v), x2: x(v), y1: y + 1, y2: y + 4 }));
      g.append(svg("text", { x: x(v), y: y + 4 + fs, class: "tick", "text-anchor": anchor }, v === 0 ? "0" : fmtNS(v)));
    }
    root.append(g);
  }

  // nextStep is the round step after step: 1 → 2 → 5 → 10.
  function nextStep(step) {
    const p = Math.pow(10, Math.floor(Math.log10(step) + 1e-9));
    const m = step / p;
    return (m < 1.5 ? 2 : m < 3.5 ? 5 : 10) * p;
  }

  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  // drawOverhead plots each lane's per-turn API overhead against the turn
  // number, or (opts.x === "context") against the turn's context size in
  // input tokens. series: [{lane, turns}].
  function drawOverhead(root, series, opts) {
    clear(root);
    const byContext = !!opts && opts.x === "context";
    const W = widthOf(root, 600);
    const points = series.map((s) => ({
      lane: s.lane,
      label: s.label,
      pts: s.turns.filter((t) => t.index >= 0 && t.overhead_ns > 0 && (!byContext || t.input_tokens > 0))
        .map((t) => [byContext ? t.input_tokens : t.index + 1, t.overhead_ns]),
    })).filter((s) => s.pts.length > 0);
    // Lay the legend out first: it wraps on narrow screens.
    const fs = tickSize(root);
    const left = Math.round(Math.max(58, fs * 5)), right = 16, top = 12;
    const legend = [];
    let lx = left, row = 0;
    for (const s of points) {
      const w = 28 + s.label.length * fs * 0.62;
      if (lx + w > W - right && lx > left) { lx = left; row++; }
      legend.push({ lane: s.lane, label: s.label, x: lx, row });
      lx += w;
    }
    const lineH = Math.round(fs * 1.45);
    const bottom = 44 + (row + 1) * lineH;
    const H = Math.round(Math.min(340, Math.max(200, W * 0.4)) + row * lineH);
    root.setAttribute("viewBox", "0 0 " + W + " " + H);
    root.setAttribute("height", H);
    const x0 = byContext ? 0 : 1;
    const maxX = Math.max(x0 + 1, ...points.flatMap((s) => s.pts.map((p) => p[0])));
    const maxY = Math.max(1, ...points.flatMap((s) => s.pts.map((p) => p[1])));
    const yStep = niceStep(maxY / 4);
    const yTop = Math.ceil(maxY / yStep) * yStep;
    const x = (v) => left + ((v - x0) / (maxX - x0)) * (W - left - right);
    const y = (v) => top + (1 - v / yTop) * (H - top - bottom);
    const g = svg("g", { class: "axis" });
    for (let v = 0; v <= yTop + 1; v += yStep) {
      g.append(svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), class: "grid" }));
      g.append(svg("text", { x: left - 6, y: y(v) + 4, class: "tick", "text-anchor": "end" }, v === 0 ? "0" : fmtNS(v)));
    }
    const xStep = Math.max(1, niceStep((maxX - x0) / (byContext ? 5 : 8)));
    const xTick = (v) => {
      const anchor = x(v) > W - right - 20 ? "end" : "middle";
      g.append(svg("text", { x: x(v), y: H - bottom + 16, class: "tick", "text-anchor": anchor }, byContext ? fmtInt(v) : String(v)));
    };
    xTick(x0);
    for (let v = xStep; v <= maxX; v += xStep) if (v > x0) xTick(v);
    g.append(svg("text", { x: left + (W - left - right) / 2, y: H - bottom + 30, class: "axis-label", "text-anchor": "middle" },
      byContext ? "context (input tokens)" : "turn"));
    root.append(g);
    for (const s of points) {
      const d = s.pts.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
      const grp = svg("g", { class: "series series-" + s.lane });
      grp.append(svg("path", { d, class: "line" }));
      for (const p of s.pts) {
        grp.append(svg("circle", { cx: x(p[0]), cy: y(p[1]), r: 2.5 }, svg("title", null, s.label + (byContext ? ", " + fmtInt(p[0]) + " input tokens: " : ", turn " + p[0] + ": ") + fmtNS(p[1]))));
      }
      root.append(grp);
    }
    for (const l of legend) {
      const ly = H - bottom + 46 + l.row * lineH;
      root.append(svg("g", { class: "series series-" + l.lane },
        svg("line", { x1: l.x, x2: l.x + 16, y1: ly - 4, y2: ly - 4, class: "line" }),
        svg("text", { x: l.x + 20, y: ly, class: "legend-text" }, l.label)));
    }
  }

  // turnName names a turn's row: its number, or the warm-up request
  // (generate: false) that loads the context before the first turn.
  function turnName(t, short) {
    if (t.index < 0) return short ? "warm-up" : "warm-up (generate: false)";
    return String(t.index + 1);
  }

  // The waterfall groups, in the order a turn meets them, with their
  // labels: api.WaterfallGroups, as the server sent them with the legend.
  const legendData = document.querySelector("[data-groups]");
  const groups = legendData ? JSON.parse(legendData.dataset.groups) : [];
  const groupLabel = (name) => (groups.find((g) => g.name === name) || { label: name }).label;
  const modelledStages = new Set(groups.filter((g) => g.modelled).map((g) => g.name));

  // table fills a chart's data alternative (a details block's .table-wrap).
  function table(box, head, rows) {
    if (!box) return;
    const wrap = box.querySelector(".table-wrap");
    clear(wrap);
    wrap.append(el("table", { class: "chart-table" },
      el("thead", null, el("tr", null, ...head.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", null, ...rows.map((r) => el("tr", null,
        el("th", { scope: "row" }, r[0]), ...r.slice(1).map((c) => el("td", { class: "num" }, c)))))));
  }

  // waterfallTable is a lane's turns as rows: when each was sent and the
  // time of each stage, measured or modelled.
  function waterfallTable(box, turns) {
    const per = turns.map((t) => {
      const by = {};
      for (const s of segments(t)) {
        by[s.name] = by[s.name] || { dur: 0, kind: s.kind };
        by[s.name].dur += s.dur;
      }
      return by;
    });
    // A drill's recovery is told in its own column, not as a stage.
    const names = groups.map((g) => g.name).filter((n) => n !== "recovery" && per.some((b) => b[n]));
    const kinds = {};
    for (const b of per) for (const n of names) if (b[n]) kinds[n] = b[n].kind;
    const drilled = turns.some(recovered);
    const head = ["Turn", "Sent at", ...(drilled ? ["Drill and recovery"] : []), ...names.map((n) => groupLabel(n) + " (" + kinds[n] + ")")];
    table(box, head, turns.map((t, i) => [turnName(t), t.error ? "error: " + t.error : fmtNS(t.sent_ns),
      ...(drilled ? [recovered(t) ? recoveryText(t) : "–"] : []),
      ...names.map((n) => (per[i][n] ? fmtNS(per[i][n].dur) : "–"))]));
    // A drill that fired opens the table: the class sees it in words.
    if (drilled) box.open = true;
  }

  // overheadTable is the overhead chart's data: one row per turn, one
  // column per lane.
  function overheadTable(box, series) {
    const maxTurn = Math.max(0, ...series.flatMap((s) => s.turns.filter((t) => t.index >= 0).map((t) => t.index + 1)));
    const rows = [];
    for (let n = 1; n <= maxTurn; n++) {
      rows.push([String(n), ...series.map((s) => {
        const t = s.turns.find((u) => u.index + 1 === n);
        return t && t.overhead_ns > 0 ? fmtNS(t.overhead_ns) : "–";
      })]);
    }
    table(box, ["Turn", ...series.map((s) => s.label)], rows);
  }

  // The stages of "where the time goes", in the order a turn meets them;
  // what no stage accounts for (the client's own work, waiting) is "other".
  // A drill's recovery counts with "other" here, and "pending" is only
  // ever drawn live.
  const timeStages = groups.map((g) => g.name).filter((n) => !["recovery", "pending", "other"].includes(n));

  function timeParts(l) {
    const by = l.stage_ns || {};
    const parts = timeStages.filter((n) => by[n] > 0).map((n) => ({ name: n, ns: by[n] }));
    const sum = parts.reduce((a, p) => a + p.ns, 0);
    if (l.total_ns > sum) parts.push({ name: "other", ns: l.total_ns - sum });
    return parts;
  }

  // drawTimeBars draws one stacked bar per lane: where its total time
  // went, stage by stage, on one scale for every lane. lanes: the
  // summary's lanes ({lane, total_ns, stage_ns}).
  function drawTimeBars(root, lanes) {
    clear(root);
    const W = widthOf(root, 600);
    const fs = tickSize(root);
    const left = Math.round(Math.max(110, fs * 8)), right = Math.round(fs * 4.5), barH = Math.round(Math.max(16, fs * 1.3)), gap = 8, top = 4, axisH = Math.round(fs * 1.6);
    const H = top + lanes.length * (barH + gap) + axisH;
    root.setAttribute("viewBox", "0 0 " + W + " " + H);
    root.setAttribute("height", H);
    const maxNS = Math.max(1, ...lanes.map((l) => l.total_ns || 0));
    const x = (ns) => left + (ns / maxNS) * (W - left - right);
    const fill = hatch(root);
    lanes.forEach((l, i) => {
      const y = top + i * (barH + gap);
      root.append(svg("text", { x: left - 6, y: y + barH / 2 + fs * 0.35, class: "tick", "text-anchor": "end" }, l.label));
      root.append(svg("text", { x: x(l.total_ns || 0) + 4, y: y + barH / 2 + fs * 0.35, class: "tick bar-total" }, fmtNS(l.total_ns)));
      let at = 0;
      for (const p of timeParts(l)) {
        const w = Math.max(x(at + p.ns) - x(at), 0.5);
        const label = l.label + ": " + groupLabel(p.name) + " " + fmtNS(p.ns);
        root.append(svg("rect", { x: x(at), y, width: w, height: barH, class: "stage-" + p.name }, svg("title", null, label)));
        if (modelledStages.has(p.name)) root.append(svg("rect", { x: x(at), y, width: w, height: barH, fill, class: "modelled" }));
        at += p.ns;
      }
    });
    axis(root, x, maxNS, top + lanes.length * (barH + gap) - gap + 2, left, W - right, fs);
  }

  // timeBarsTable is the bars' data: one row per lane, one column per stage.
  function timeBarsTable(box, lanes) {
    const names = [...timeStages, "other"].filter((n) => lanes.some((l) => timeParts(l).some((p) => p.name === n)));
    const head = ["Lane", ...names.map((n) => groupLabel(n) + (modelledStages.has(n) ? " (modelled)" : "")), "Total"];
    table(box, head, lanes.map((l) => {
      const parts = timeParts(l);
      return [l.label, ...names.map((n) => {
        const p = parts.find((q) => q.name === n);
        return p ? fmtNS(p.ns) + " (" + Math.round((p.ns / Math.max(l.total_ns, 1)) * 100) + "%)" : "–";
      }), fmtNS(l.total_ns)];
    }));
  }

  window.agentloop.charts = { recoveryText, drawWaterfall, drawOverhead, turnEnd, waterfallTable, overheadTable, drawTimeBars, timeBarsTable };
})();
