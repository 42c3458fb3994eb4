// explorer.js: sends response.create bodies from this browser to
// /v1/responses over one WebSocket (kept open, so store:false chains work)
// or over HTTP with stream:true, lists every event, chains the next
// request, shows each response's engine trace and copies the request as code.
// An array of bodies, each naming its stream_id, runs as that many lanes on
// the one WebSocket at once.
"use strict";
(function () {
  const A = window.agentloop;
  const { el, svg, clear, fmtNS } = A;
  const body = document.getElementById("explorer-body");
  if (!body) return;
  const events = document.getElementById("explorer-events");
  const responses = document.getElementById("explorer-responses");
  const sendWS = document.getElementById("explorer-send-ws");
  const sendHTTP = document.getElementById("explorer-send-http");
  const disconnect = document.getElementById("explorer-disconnect");
  const connState = document.getElementById("explorer-conn");
  const errBox = document.getElementById("explorer-error");
  const chain = document.getElementById("explorer-chain");
  const example = document.getElementById("explorer-example");
  const sendRaw = document.getElementById("explorer-send-raw");
  const compareBtn = document.getElementById("explorer-compare");
  const chainBtn = document.getElementById("explorer-compare-chain");
  const headersBox = document.getElementById("explorer-headers");
  const wsQuery = document.getElementById("explorer-ws-query");

  // The events that end a request and the stream_id rule are the
  // server's (api.TerminalEvents, api.StreamIDPattern), read from the page.
  const TERMINAL_TYPES = JSON.parse(events.dataset.terminal);
  const TERMINAL = new Set(TERMINAL_TYPES);
  let socket = null;
  let current = null; // the request in flight, when it names no lane
  const lanes = new Map(); // stream_id → the request in flight on that lane
  const STREAM_ID = new RegExp(body.dataset.streamIdPattern);
  let count = 0;
  let lastResponse = null; // {id, calls: [{name, call_id}]}

  // --- composing -----------------------------------------------------------

  function parseBody() {
    let v;
    try {
      v = JSON.parse(body.value);
    } catch (err) {
      throw new Error("The body is not valid JSON: " + err.message);
    }
    if (Array.isArray(v)) {
      if (v.length === 0 || !v.every((b) => b && typeof b === "object" && !Array.isArray(b))) {
        throw new Error("An array body holds one JSON object per lane.");
      }
      return v;
    }
    if (!v || typeof v !== "object") throw new Error("The body must be a JSON object, or an array of them to run as lanes.");
    return v;
  }

  // laneIDs checks that each body of an array names a lane of its own.
  function laneIDs(list) {
    const ids = list.map((b) => b.stream_id);
    if (!ids.every((id) => typeof id === "string" && STREAM_ID.test(id)) || new Set(ids).size !== ids.length) {
      throw new Error("Each body of an array names its own lane: give each a distinct stream_id of letters, digits, _, - or .");
    }
    return ids;
  }

  function setBody(obj) {
    body.value = JSON.stringify(obj, null, 2);
    updateCopy();
  }

  example.addEventListener("change", () => {
    const opt = example.selectedOptions[0];
    let obj;
    try {
      obj = JSON.parse(opt.dataset.body);
    } catch (_) {
      return;
    }
    if (opt.value === "chain" && lastResponse) {
      obj.previous_response_id = lastResponse.id;
      if (lastResponse.calls.length > 0) {
        obj.input = lastResponse.calls.map((c) => ({ type: "function_call_output", call_id: c.call_id, output: sampleOutput(c) }));
      }
    }
    setBody(obj);
  });

  function sampleOutput(call) {
    if (call.name === "get_weather") return JSON.stringify({ temp_c: 21, sky: "clear" });
    return JSON.stringify({ ok: true });
  }

  // nextBody chains from a finished response: tools and instructions are
  // never inherited, so they are sent again; the input is the tool outputs
  // (or a follow-up message when the model asked for no tool).
  function nextBody(sent, resp, calls) {
    const next = { model: sent.model, previous_response_id: resp.id };
    for (const k of ["stream_id", "store", "instructions", "tools", "tool_choice"]) {
      if (k in sent) next[k] = sent[k];
    }
    next.input = calls.length > 0
      ? calls.map((c) => ({ type: "function_call_output", call_id: c.call_id, output: sampleOutput(c) }))
      : "Thanks. Can you say that in one sentence?";
    return next;
  }

  // --- events --------------------------------------------------------------

  function detail(ev) {
    const r = ev.response;
    switch (ev.type) {
      case "response.created":
      case "response.in_progress":
        return r ? r.id + " · " + r.status : "";
      case "response.completed":
      case "response.failed":
      case "response.incomplete": {
        if (!r) return "";
        let s = r.id + " · " + r.status;
        if (r.usage) {
          const cached = r.usage.input_tokens_details ? r.usage.input_tokens_details.cached_tokens : 0;
          s += " · in " + r.usage.input_tokens + " (cached " + cached + ") · out " + r.usage.output_tokens;
        }
        if (r.error && r.error.message) s += " · " + r.error.message;
        return s;
      }
      case "response.output_item.added":
      case "response.output_item.done": {
        const it = ev.item || {};
        return it.type + (it.name ? " " + it.name : "") + (it.role ? " " + it.role : "") + " · " + (it.id || "");
      }
      case "response.output_text.delta":
      case "response.function_call_arguments.delta":
        return JSON.stringify(ev.delta);
      case "response.output_text.done":
        return clip(ev.text, 160);
      case "response.function_call_arguments.done":
        return clip(ev.arguments, 160);
      case "error": {
        const e = ev.error || ev;
        return (ev.status ? ev.status + " " : "") + (e.code ? e.code + ": " : "") + (e.message || "");
      }
      default:
        return "";
    }
  }

  // laneDetail prefixes a named lane's event detail with its stream_id.
  function laneDetail(ev) {
    const d = detail(ev);
    return typeof ev.stream_id === "string" ? "[" + ev.stream_id + "] " + d : d;
  }

  // breakable lets long event names wrap after their dots on phones.
  function breakable(type) {
    const out = [];
    type.split(".").forEach((part, i, all) => {
      out.push(i < all.length - 1 ? part + "." : part);
      if (i < all.length - 1) out.push(document.createElement("wbr"));
    });
    return out;
  }

  function clip(s, n) {
    s = String(s || "");
    return s.length > n ? s.slice(0, n) + "…" : s;
  }

  // startRequest opens a request's row, on its lane when it names one;
  // req.ended resolves once it ends. A frame sent as typed may get no answer
  // at all, so it never locks the send buttons, and it ends when the next
  // request starts.
  function startRequest(transport, sent, { raw = false, lane } = {}) {
    if (current && !current.done && current.raw) finish(current, null);
    count++;
    const req = { n: count, transport, sent, raw, lane, t0: performance.now(), id: "", calls: [], text: "", done: false };
    req.ended = new Promise((resolve) => { req.resolve = resolve; });
    if (lane) lanes.set(lane, req);
    else current = req;
    const what = raw ? "WebSocket frame as typed" : transport === "ws" ? "WebSocket" : "HTTP (SSE)";
    events.append(el("tr", { class: "request-row" },
      el("td", { colspan: 4 }, "Request " + count + " · " + what +
        (lane ? " · lane " + lane : "") +
        (sent && sent.previous_response_id ? " · previous_response_id " + sent.previous_response_id : ""))));
    setBusy(inFlight());
    return req;
  }

  // inFlight tells whether a request or a lane still awaits its end (a
  // frame sent as typed does not count: it may never get one).
  function inFlight() {
    return (current !== null && !current.raw) || lanes.size > 0;
  }

  function setBusy(on) {
    for (const b of [sendWS, sendHTTP, sendRaw, compareBtn, chainBtn]) b.disabled = on;
  }

  // eventRow is an event's row: its detail (with its lane) opens to the
  // event's raw JSON.
  function eventRow(ms, seq, ev, lane, prefix) {
    const type = String(ev.type || "?");
    const summary = prefix + laneDetail(ev);
    return el("tr", { "data-testid": "event", "data-type": type, "data-lane": lane || null, class: type === "error" ? "event-error" : null },
      el("td", { class: "num" }, ms),
      el("td", { class: "num" }, seq),
      el("td", null, el("code", { class: "event-type" }, ...breakable(type))),
      el("td", { class: "detail" }, el("details", { class: "raw" },
        el("summary", null, summary || el("span", { class: "muted" }, "raw JSON")),
        el("pre", { class: "code raw-json" }, JSON.stringify(ev, null, 2)))));
  }

  function showEvent(row) {
    events.append(row);
    const wrap = events.closest(".events-wrap");
    if (wrap) wrap.scrollTop = wrap.scrollHeight;
  }

  function addEvent(req, ev) {
    const ms = (performance.now() - req.t0).toFixed(1);
    const seq = ev.sequence_number === undefined || ev.sequence_number === null ? "" : String(ev.sequence_number);
    const type = String(ev.type || "?");
    showEvent(eventRow(ms, seq, ev, req.lane, ""));
    if (ev.response && ev.response.id) req.id = ev.response.id;
    if (type === "response.output_item.done" && ev.item && ev.item.type === "function_call") {
      req.calls.push({ name: ev.item.name, call_id: ev.item.call_id, arguments: ev.item.arguments });
    }
    if (type === "response.output_text.done") req.text += ev.text || "";
    if (TERMINAL.has(type)) finish(req, ev);
  }

  function finish(req, ev) {
    if (req.done) return;
    req.done = true;
    if (current === req) current = null;
    if (req.lane && lanes.get(req.lane) === req) lanes.delete(req.lane);
    setBusy(inFlight());
    const ms = performance.now() - req.t0;
    const resp = ev && ev.response;
    const status = resp ? resp.status : ev && ev.type === "error" ? "error" : "ended";
    req.status = status;
    const item = el("li", { class: "response" },
      el("p", null, el("strong", null, "Request " + req.n), " · " + (req.transport === "ws" ? "WebSocket" : "HTTP (SSE)") + (req.lane ? " · lane " + req.lane : "") + " · ",
        el("span", { class: "status", "data-status": status === "completed" ? "passed" : "failed" }, status),
        " · " + fmtNS(ms * 1e6)),
      req.id ? el("p", null, el("code", { class: "response-id" }, req.id)) : null,
      req.text ? el("p", { class: "assistant-text" }, req.text) : null);
    for (const c of req.calls) {
      item.append(el("p", null, el("span", { class: "tag" }, "tool call"), " ", el("code", null, c.name), " ", el("code", { class: "muted" }, clip(c.arguments, 200))));
    }
    if (ev && ev.type === "error") item.append(el("p", { class: "error" }, detail(ev)));
    for (const open of responses.querySelectorAll("details.trace[open]")) open.open = false;
    responses.prepend(item);
    if (req.id && resp) {
      lastResponse = { id: req.id, calls: req.calls };
      loadTrace(item, req.id);
      if (chain.checked && !req.comparing && !req.batch && req.sent && resp.status === "completed") setBody(nextBody(req.sent, resp, req.calls));
    }
    // Lanes sent together chain together: each continues its own response
    // on its own lane, once all have completed.
    const b = req.batch;
    if (b) {
      b.next[b.ids.indexOf(req.lane)] = resp && resp.status === "completed" ? nextBody(req.sent, resp, req.calls) : null;
      b.left--;
      if (b.left === 0 && chain.checked && b.next.every((n) => n)) setBody(b.next);
    }
    req.status = status;
    req.resolve(req);
  }

  // stray shows an event that belongs to no request in flight, such as a
  // connection-scoped error while lanes run: the lanes go on.
  function stray(ev) {
    showEvent(eventRow("", "", ev, null, "connection · "));
  }

  // --- WebSocket -----------------------------------------------------------

  // wsPath is the upgrade's path with the query as typed (the aliases of
  // agentloop's headers: a browser cannot set headers on an upgrade).
  function wsPath() {
    const q = wsQuery.value.trim().replace(/^\?/, "");
    return "/v1/responses" + (q ? "?" + q : "");
  }

  function openSocket() {
    const path = wsPath();
    if (socket && socket.readyState === WebSocket.OPEN && socket.agentloopPath === path) return Promise.resolve(socket);
    if (socket) {
      socket.onclose = null;
      socket.close(1000, "the query changed");
      socket = null;
    }
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(A.wsURL(path));
      ws.agentloopPath = path;
      connState.textContent = "WebSocket: connecting…";
      ws.onopen = () => {
        socket = ws;
        connState.textContent = "WebSocket: connected to " + A.wsURL(path);
        disconnect.disabled = false;
        resolve(ws);
      };
      ws.onmessage = (m) => {
        let ev;
        try {
          ev = JSON.parse(m.data);
        } catch (_) {
          return;
        }
        const lane = typeof ev.stream_id === "string" ? lanes.get(ev.stream_id) : undefined;
        if (lane) addEvent(lane, ev);
        else if (current && current.transport === "ws") addEvent(current, ev);
        else stray(ev);
      };
      ws.onerror = () => reject(new Error("The WebSocket could not connect."));
      ws.onclose = (c) => {
        if (socket === ws) socket = null;
        disconnect.disabled = true;
        connState.textContent = "WebSocket: closed (" + c.code + (c.reason ? " " + c.reason : "") + ")";
        const open = [...lanes.values()];
        if (current && current.transport === "ws") open.push(current);
        for (const req of open) {
          if (!req.done) addEvent(req, { type: "error", message: "The WebSocket closed before the response ended." });
        }
      };
    });
  }

  // sendOverWS sends sent as a response.create, or an array of bodies as
  // one response.create each, every one on its own lane; it returns the
  // request (or the lanes' requests), or null when it could not send.
  async function sendOverWS(sent, comparing) {
    try {
      const ids = Array.isArray(sent) ? laneIDs(sent) : null;
      const ws = await openSocket();
      const batch = ids ? { ids, left: ids.length, next: [] } : null;
      const reqs = [];
      for (const one of batch ? sent : [sent]) {
        const msg = Object.assign({ type: "response.create" }, one);
        delete msg.stream;
        const req = startRequest("ws", one, { lane: batch ? one.stream_id : undefined });
        req.comparing = comparing;
        req.batch = batch;
        ws.send(JSON.stringify(msg));
        reqs.push(req);
      }
      if (comparing !== "chain") remember(batch ? "lanes" : "ws", body.value);
      return batch ? reqs : reqs[0];
    } catch (err) {
      A.showError(errBox, err);
      return null;
    }
  }

  // A send button sends the parsed body; a body that does not parse is
  // shown as the error and nothing is sent.
  function onSend(button, send) {
    button.addEventListener("click", () => {
      A.showError(errBox, null);
      let sent;
      try {
        sent = parseBody();
      } catch (err) {
        A.showError(errBox, err);
        return;
      }
      send(sent, false);
    });
  }

  onSend(sendWS, sendOverWS);

  // Send frame as typed: the text goes out unchanged, valid JSON or not.
  sendRaw.addEventListener("click", async () => {
    A.showError(errBox, null);
    const text = body.value;
    let sent = null;
    try {
      sent = JSON.parse(text);
    } catch (_) { /* any frame at all */ }
    try {
      const ws = await openSocket();
      startRequest("ws", sent && typeof sent === "object" && !Array.isArray(sent) ? sent : null, { raw: true });
      ws.send(text);
      remember("frame", text);
    } catch (err) {
      A.showError(errBox, err);
    }
  });

  disconnect.addEventListener("click", () => {
    if (socket) socket.close(1000, "closed by the explorer");
  });

  // --- HTTP + SSE ----------------------------------------------------------

  // headerLines reads the headers box: one "Name: value" a line.
  function headerLines() {
    const out = {};
    headersBox.value.split(/\r?\n/).forEach((line, i) => {
      if (line.trim() === "") return;
      const at = line.indexOf(":");
      if (at <= 0) throw new Error("HTTP request headers, line " + (i + 1) + ": write Name: value.");
      out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    });
    return out;
  }

  async function sendOverHTTP(sent, comparing) {
    if (Array.isArray(sent)) {
      A.showError(errBox, new Error("An array of bodies runs as lanes on one WebSocket: send it over WebSocket."));
      return null;
    }
    let extra;
    try {
      extra = headerLines();
    } catch (err) {
      A.showError(errBox, err);
      headersBox.closest("details").open = true;
      headersBox.focus();
      return null;
    }
    const req = startRequest("http", sent);
    req.comparing = comparing;
    if (comparing !== "chain") remember("http", body.value);
    try {
      const res = await fetch("/v1/responses", {
        method: "POST",
        headers: Object.assign({}, extra, { "Content-Type": "application/json", "Accept": "text/event-stream" }),
        body: JSON.stringify(Object.assign({}, sent, { stream: true })),
        credentials: "same-origin",
      });
      if (!res.ok) {
        let e = { message: res.status + " " + res.statusText };
        try {
          const j = await res.json();
          if (j.error) e = j.error;
        } catch (_) { /* not JSON */ }
        addEvent(req, { type: "error", status: res.status, error: e });
        return req;
      }
      await readSSE(res.body, (ev) => addEvent(req, ev));
      if (!req.done) addEvent(req, { type: "error", message: "The stream ended before a terminal event." });
    } catch (err) {
      if (!req.done) addEvent(req, { type: "error", message: String(err.message || err) });
    }
    return req;
  }

  onSend(sendHTTP, sendOverHTTP);

  // The aliases of agentloop's own headers, for the upgrade's query, as the
  // page lists them (api.QueryAliases).
  const aliasButton = document.getElementById("explorer-aliases");
  const queryAliases = Object.fromEntries(JSON.parse(aliasButton.dataset.aliases || "[]").map((a) => [a.header.toLowerCase(), a.query]));
  aliasButton.addEventListener("click", () => {
    let h;
    try {
      h = headerLines();
    } catch (err) {
      A.showError(errBox, err);
      return;
    }
    const q = new URLSearchParams(wsQuery.value.trim().replace(/^\?/, ""));
    const skipped = [];
    for (const [k, v] of Object.entries(h)) {
      const alias = queryAliases[k.toLowerCase()];
      if (alias) q.set(alias, v);
      else skipped.push(k);
    }
    wsQuery.value = q.toString();
    A.showError(errBox, skipped.length ? new Error("No query alias for " + skipped.join(", ") + ": only agentloop's own headers have one; a browser cannot send the others on an upgrade.") : null);
  });

  // --- HTTP against WebSocket ----------------------------------------------

  // compare sends the same body over HTTP, then over the WebSocket, and
  // sets the two engine traces side by side, stage by stage.
  compareBtn.addEventListener("click", async () => {
    A.showError(errBox, null);
    let sent;
    try {
      sent = parseBody();
      if (Array.isArray(sent)) throw new Error("Compare sends one body over HTTP and over the WebSocket: an array of bodies runs as lanes on the WebSocket only, so compare one of its bodies at a time.");
    } catch (err) {
      A.showError(errBox, err);
      return;
    }
    const diff = document.getElementById("explorer-diff");
    diff.hidden = true;
    document.getElementById("explorer-chain-diff").hidden = true;
    const h = await sendOverHTTP(sent, true);
    if (!h) return;
    await h.ended;
    const w = await sendOverWS(sent, true);
    if (!w) return;
    await w.ended;
    if (!h.id || !w.id) {
      A.showError(errBox, new Error("Both requests must answer with a response to compare their traces."));
      return;
    }
    try {
      const [th, tw] = await Promise.all([A.getJSON("/api/traces/" + encodeURIComponent(h.id)), A.getJSON("/api/traces/" + encodeURIComponent(w.id))]);
      showDiff(diff, th, tw);
    } catch (err) {
      A.showError(errBox, err);
    }
  });

  // Compare a 10-turn chain: the body, then nine follow-ups each continuing
  // the last response with previous_response_id (as "Chain" does), over
  // HTTP on stored responses (store: true) and then over the WebSocket on
  // its connection (store: false); the engine's time per turn side by side.
  // This is where WebSocket mode can save: from the second turn on.
  const CHAIN_TURNS = 10;
  async function runChain(send, first, store) {
    let next = Object.assign({}, first, { store });
    const ids = [];
    for (let i = 0; i < CHAIN_TURNS; i++) {
      const r = await send(next, i === 0 ? true : "chain"); // a chain is remembered once
      if (!r) return null;
      await r.ended;
      if (!r.id || r.status !== "completed") throw new Error("Turn " + (i + 1) + " of the chain ended " + (r.status || "without a response") + "; the comparison needs every turn completed.");
      ids.push(r.id);
      next = nextBody(next, { id: r.id }, r.calls);
    }
    return ids;
  }

  chainBtn.addEventListener("click", async () => {
    A.showError(errBox, null);
    let sent;
    try {
      sent = parseBody();
      if (Array.isArray(sent)) throw new Error("A chain starts from one body: an array of bodies runs as lanes on the WebSocket only.");
    } catch (err) {
      A.showError(errBox, err);
      return;
    }
    const box = document.getElementById("explorer-chain-diff");
    box.hidden = true;
    document.getElementById("explorer-diff").hidden = true;
    try {
      const h = await runChain(sendOverHTTP, sent, true);
      if (!h) return;
      const w = await runChain(sendOverWS, sent, false);
      if (!w) return;
      const get = (id) => A.getJSON("/api/traces/" + encodeURIComponent(id));
      const [th, tw] = await Promise.all([Promise.all(h.map(get)), Promise.all(w.map(get))]);
      showChainDiff(box, th, tw);
    } catch (err) {
      A.showError(errBox, err);
    }
  });

  function showChainDiff(box, th, tw) {
    const total = (t) => [...byStage(t).values()].reduce((s, v) => s + v.ns, 0);
    const signed = (d) => (d === 0 ? "0" : (d < 0 ? "−" : "+") + fmtNS(Math.abs(d)));
    let sumH = 0, sumW = 0;
    const rows = th.map((t, i) => {
      const a = total(t), b = total(tw[i]);
      sumH += a;
      sumW += b;
      return el("tr", { "data-turn": String(i + 1) }, el("th", { scope: "row" }, String(i + 1)),
        el("td", { class: "num" }, fmtNS(a)), el("td", { class: "num" }, fmtNS(b)), el("td", { class: "num" }, signed(b - a)));
    });
    rows.push(el("tr", { class: "diff-total" }, el("th", { scope: "row" }, "all turns"),
      el("td", { class: "num" }, fmtNS(sumH)), el("td", { class: "num" }, fmtNS(sumW)), el("td", { class: "num" }, signed(sumW - sumH))));
    const wrap = box.querySelector(".table-wrap");
    clear(wrap);
    wrap.append(el("table", { class: "diff-table" },
      el("thead", null, el("tr", null, ...["turn", "HTTP", "WebSocket", "WebSocket − HTTP"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", null, ...rows)));
    box.hidden = false;
  }

  function byStage(trace) {
    const out = new Map();
    for (const sp of trace.spans || []) {
      const cur = out.get(sp.name) || { ns: 0, kind: sp.kind };
      cur.ns += sp.duration_ns;
      out.set(sp.name, cur);
    }
    return out;
  }

  function showDiff(box, th, tw) {
    const a = byStage(th), b = byStage(tw);
    const names = [...new Set([...a.keys(), ...b.keys()])];
    const total = (m) => [...m.values()].reduce((s, v) => s + v.ns, 0);
    const cell = (m, n) => (m.has(n) ? fmtNS(m.get(n).ns) : "–");
    const delta = (n) => {
      const d = (b.has(n) ? b.get(n).ns : 0) - (a.has(n) ? a.get(n).ns : 0);
      return d === 0 ? "0" : (d < 0 ? "−" : "+") + fmtNS(Math.abs(d));
    };
    const rows = names.map((n) => el("tr", { "data-stage": n },
      el("th", { scope: "row" }, n), el("td", null, (a.get(n) || b.get(n)).kind),
      el("td", { class: "num" }, cell(a, n)), el("td", { class: "num" }, cell(b, n)), el("td", { class: "num" }, delta(n))));
    const sum = total(b) - total(a);
    rows.push(el("tr", { class: "diff-total" }, el("th", { scope: "row" }, "all stages"), el("td", null, ""),
      el("td", { class: "num" }, fmtNS(total(a))), el("td", { class: "num" }, fmtNS(total(b))),
      el("td", { class: "num" }, (sum < 0 ? "−" : "+") + fmtNS(Math.abs(sum)))));
    const wrap = box.querySelector(".table-wrap");
    clear(wrap);
    wrap.append(el("table", { class: "diff-table" },
      el("thead", null, el("tr", null, ...["stage", "kind", "HTTP", "WebSocket", "WebSocket − HTTP"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", null, ...rows)));
    box.hidden = false;
  }

  // --- history -------------------------------------------------------------

  const HISTORY_KEY = "agentloop.explorer.history";
  const HISTORY_MAX = 30;
  const historyList = document.getElementById("explorer-history");

  function loadHistory() {
    try {
      const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]");
      return Array.isArray(h) ? h : [];
    } catch (_) {
      return [];
    }
  }

  function remember(transport, text) {
    const h = loadHistory();
    h.unshift({ at: new Date().toISOString(), transport, body: text, headers: headersBox.value, query: wsQuery.value });
    try {
      localStorage.setItem(HISTORY_KEY, JSON.stringify(h.slice(0, HISTORY_MAX)));
    } catch (_) { /* storage full or off: the history is a convenience */ }
    drawHistory();
  }

  function drawHistory() {
    clear(historyList);
    const names = { ws: "WebSocket", lanes: "WebSocket lanes", http: "HTTP", frame: "frame as typed" };
    for (const item of loadHistory()) {
      const load = el("button", { type: "button" }, "Load");
      load.addEventListener("click", () => {
        body.value = item.body;
        headersBox.value = item.headers || "";
        wsQuery.value = item.query || "";
        updateCopy();
        body.focus();
      });
      historyList.append(el("li", { "data-testid": "history-item", "data-transport": item.transport },
        el("span", { class: "muted" }, new Date(item.at).toLocaleTimeString() + " · " + (names[item.transport] || item.transport) + " · "),
        el("code", null, clip(String(item.body).replace(/\s+/g, " "), 90)), " ", load));
    }
  }

  document.getElementById("explorer-history-clear").addEventListener("click", () => {
    try {
      localStorage.removeItem(HISTORY_KEY);
    } catch (_) { /* nothing to clear */ }
    drawHistory();
  });

  // readSSE parses "event:"/"data:" blocks separated by a blank line.
  async function readSSE(stream, onEvent) {
    const reader = stream.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
        const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (!data || data === "[DONE]") continue;
        try {
          onEvent(JSON.parse(data));
        } catch (_) { /* skip what is not JSON */ }
      }
      if (done) return;
    }
  }

  // --- traces --------------------------------------------------------------

  async function loadTrace(item, id) {
    const box = el("details", { class: "trace" }, el("summary", null, "Engine trace"));
    item.append(box);
    try {
      const t = await A.getJSON("/api/traces/" + encodeURIComponent(id));
      box.append(el("p", { class: "muted" }, "engine " + t.engine + " · transport " + t.transport));
      const spans = t.spans || [];
      const end = Math.max(1, ...spans.map((s) => s.start_ns + s.duration_ns));
      const table = el("table", { class: "trace-table" },
        el("thead", null, el("tr", null, ...["stage", "kind", "start", "duration", "tokens"].map((h) => el("th", { scope: "col" }, h)),
          el("th", { scope: "col" }, el("span", { class: "visually-hidden" }, "timeline")))));
      const tb = el("tbody");
      for (const s of spans) {
        const bar = svg("svg", { viewBox: "0 0 100 8", preserveAspectRatio: "none", class: "trace-bar", "aria-hidden": "true" },
          svg("rect", { x: (s.start_ns / end) * 100, y: 0, width: Math.max((s.duration_ns / end) * 100, 0.4), height: 8, class: "stage-" + s.group }));
        tb.append(el("tr", null,
          el("td", null, s.name, s.note ? el("span", { class: "muted" }, " · " + s.note) : null),
          el("td", null, s.kind),
          el("td", { class: "num" }, fmtNS(s.start_ns)),
          el("td", { class: "num" }, fmtNS(s.duration_ns)),
          el("td", { class: "num" }, s.tokens ? String(s.tokens) : ""),
          el("td", { class: "bar-cell" }, bar)));
      }
      table.append(tb);
      box.append(el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Engine trace of " + id }, table));
      box.open = true;
    } catch (err) {
      box.append(el("p", { class: "muted" }, "No trace: " + err.message));
    }
  }

  document.getElementById("explorer-clear").addEventListener("click", () => {
    clear(events);
    clear(responses);
  });

  // --- copy as code --------------------------------------------------------

  const lang = document.getElementById("copy-lang");
  const transport = document.getElementById("copy-transport");
  const code = document.getElementById("copy-code");

  function base() {
    return location.protocol + "//" + location.host;
  }

  function shellQuote(s) {
    return "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function goString(s) {
    return s.includes("`") ? JSON.stringify(s) : "`" + s + "`";
  }

  function pyString(s) {
    return s.includes("'''") || s.endsWith("\\") || s.endsWith("'") ? JSON.stringify(s) : "r'''" + s + "'''";
  }

  // quotedTerminal lists the terminal event types (those keep passes) as
  // double-quoted strings, for the snippets' "until it ends" tests.
  function quotedTerminal(keep = () => true) {
    return TERMINAL_TYPES.filter(keep).map((t) => JSON.stringify(t)).join(", ");
  }

  function snippet() {
    let obj;
    try {
      obj = parseBody();
    } catch (err) {
      return "// " + err.message;
    }
    const ws = transport.value === "ws";
    if (Array.isArray(obj)) return lanesSnippet(obj, ws);
    const plain = Object.assign({}, obj);
    delete plain.stream;
    const pretty = JSON.stringify(plain, null, 2);
    const wsMsg = JSON.stringify(Object.assign({ type: "response.create" }, plain));
    switch (lang.value) {
      case "curl":
        if (ws) {
          return "# curl cannot send WebSocket messages; websocat can:\n" +
            "printf '%s\\n' " + shellQuote(wsMsg) + " | \\\n  websocat --no-close -H \"Authorization: Bearer $OPENAI_API_KEY\" " + A.wsURL("/v1/responses");
        }
        return "curl -N " + base() + "/v1/responses \\\n  -H \"Content-Type: application/json\" \\\n  -H \"Authorization: Bearer $OPENAI_API_KEY\" \\\n  -d " +
          shellQuote(JSON.stringify(Object.assign({}, plain, { stream: true }), null, 2));
      case "go": {
        const head = "client := openai.NewClient(option.WithBaseURL(\"" + base() + "/v1/\"), option.WithAPIKey(os.Getenv(\"OPENAI_API_KEY\")))\n";
        if (ws) {
          return head + "conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})\nif err != nil {\n\tlog.Fatal(err)\n}\ndefer conn.Close()\n" +
            "if err := conn.SendRaw(ctx, json.RawMessage(" + goString(wsMsg) + ")); err != nil {\n\tlog.Fatal(err)\n}\n" +
            "resp, err := conn.FinalResponse(ctx)\nif err != nil {\n\tlog.Fatal(err)\n}\nfmt.Println(resp.ID, resp.OutputText())";
        }
        return head + "var params responses.ResponseNewParams\nif err := json.Unmarshal([]byte(" + goString(pretty) + "), &params); err != nil {\n\tlog.Fatal(err)\n}\n" +
          "stream := client.Responses.NewStreaming(ctx, params)\nfor stream.Next() {\n\tev := stream.Current()\n\tfmt.Println(ev.SequenceNumber, ev.Type)\n}\nif err := stream.Err(); err != nil {\n\tlog.Fatal(err)\n}";
      }
      case "python": {
        const head = "import json, os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=\"" + base() + "/v1\", api_key=os.environ.get(\"OPENAI_API_KEY\", \"local\"))\nbody = json.loads(" + pyString(pretty) + ")\n\n";
        if (ws) {
          return head + "# pip install \"openai[realtime]>=3.8.0\"\nwith client.responses.connect() as conn:\n    conn.response.create(**body)\n    for event in conn:\n        print(event.type)\n" +
            "        if event.type in (" + quotedTerminal() + "):\n            break";
        }
        return head + "for event in client.responses.create(**body, stream=True):\n    print(event.sequence_number, event.type)";
      }
      default: {
        const head = "import OpenAI from \"openai\";\n\nconst client = new OpenAI({ baseURL: \"" + base() + "/v1\", apiKey: process.env.OPENAI_API_KEY ?? \"local\" });\nconst body = " + pretty + ";\n\n";
        if (ws) {
          return "import { ResponsesWS } from \"openai/resources/responses/ws\"; // needs the \"ws\" package\n" + head +
            "const ws = new ResponsesWS(client);\nws.on(\"event\", (event) => {\n  console.log(event.sequence_number, event.type);\n" +
            "  if ([" + quotedTerminal((t) => t.startsWith("response.")) + "].includes(event.type)) ws.close();\n});\nws.send({ type: \"response.create\", ...body });";
        }
        return head + "const stream = await client.responses.create({ ...body, stream: true });\nfor await (const event of stream) console.log(event.sequence_number, event.type);";
      }
    }
  }

  // lanesSnippet sends an array of bodies as lanes on one WebSocket and
  // prints each event's lane and type until every lane has ended.
  function lanesSnippet(list, ws) {
    if (!ws) return "// An array of bodies runs as lanes on one WebSocket: choose the WebSocket transport.";
    const msgs = list.map((b) => {
      const m = Object.assign({ type: "response.create" }, b);
      delete m.stream;
      return JSON.stringify(m);
    });
    const n = msgs.length;
    switch (lang.value) {
      case "curl":
        return "# curl cannot send WebSocket messages; websocat can:\n" +
          "printf '%s\\n' " + msgs.map(shellQuote).join(" ") + " | \\\n  websocat --no-close -H \"Authorization: Bearer $OPENAI_API_KEY\" " + A.wsURL("/v1/responses");
      case "go":
        return "client := openai.NewClient(option.WithBaseURL(\"" + base() + "/v1/\"), option.WithAPIKey(os.Getenv(\"OPENAI_API_KEY\")))\n" +
          "conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{})\nif err != nil {\n\tlog.Fatal(err)\n}\ndefer conn.Close()\n" +
          "for _, msg := range []string{\n" + msgs.map((m) => "\t" + goString(m) + ",\n").join("") + "} {\n" +
          "\tif err := conn.SendRaw(ctx, json.RawMessage(msg)); err != nil {\n\t\tlog.Fatal(err)\n\t}\n}\n" +
          "for ended := 0; ended < " + n + "; {\n\traw, err := conn.RecvRaw(ctx)\n\tif err != nil {\n\t\tlog.Fatal(err)\n\t}\n" +
          "\tvar ev struct {\n\t\tType     string `json:\"type\"`\n\t\tStreamID string `json:\"stream_id\"`\n\t}\n\tjson.Unmarshal(raw, &ev)\n\tfmt.Println(ev.StreamID, ev.Type)\n" +
          "\tswitch ev.Type {\n\tcase " + quotedTerminal() + ":\n\t\tended++\n\t}\n}";
      case "python":
        return "import json, os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=\"" + base() + "/v1\", api_key=os.environ.get(\"OPENAI_API_KEY\", \"local\"))\n" +
          "bodies = json.loads(" + pyString(JSON.stringify(list.map((b) => { const c = Object.assign({}, b); delete c.stream; return c; }), null, 2)) + ")\n\n" +
          "# pip install \"openai[realtime]>=3.8.0\"\nwith client.responses.connect() as conn:\n    for body in bodies:\n        conn.response.create(**body)\n    ended = 0\n" +
          "    for event in conn:\n        print(getattr(event, \"stream_id\", None), event.type)\n" +
          "        if event.type in (" + quotedTerminal() + "):\n            ended += 1\n            if ended == " + n + ":\n                break";
      default:
        return "const ws = new WebSocket(\"" + A.wsURL("/v1/responses") + "\"); // the \"ws\" package adds the Authorization header\nlet ended = 0;\n" +
          "ws.onopen = () => {\n" + msgs.map((m) => "  ws.send(" + JSON.stringify(m) + ");\n").join("") + "};\n" +
          "ws.onmessage = (m) => {\n  const event = JSON.parse(m.data);\n  console.log(event.stream_id, event.type);\n" +
          "  if ([" + quotedTerminal() + "].includes(event.type) && ++ended === " + n + ") ws.close();\n};";
    }
  }

  function updateCopy() {
    code.textContent = snippet();
  }

  body.addEventListener("input", updateCopy);
  lang.addEventListener("change", updateCopy);
  transport.addEventListener("change", updateCopy);
  document.getElementById("copy-button").addEventListener("click", async () => {
    const st = document.getElementById("copy-state");
    try {
      await navigator.clipboard.writeText(code.textContent);
      st.textContent = "Copied.";
    } catch (_) {
      const range = document.createRange();
      range.selectNodeContents(code);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      st.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    }
  });
  updateCopy();
  drawHistory();
  // Tests and tools wait for this before clicking.
  document.documentElement.dataset.ready = "explorer";
})();
