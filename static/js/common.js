// common.js: small DOM, format and fetch helpers shared by every page.
// Data only ever reaches the page through textContent and attributes.
"use strict";
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";

  // el builds an element: el("p", {class: "x"}, "text", child).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }

  // svg builds an SVG element the same way.
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }

  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      e.setAttribute(k, v === true ? "" : String(v));
    }
  }

  function append(e, children) {
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
  }

  // fmtNS formats nanoseconds with three significant digits, as Go's
  // rollout.FormatNS does. It formats only numbers the browser makes or
  // ticks itself: chart axes and tooltips, live clocks and counters, a
  // trace's spans as they arrive. Every duration in a sentence or a result
  // row is the server's (e2e TestPagesShowWhatTheServerComputed checks
  // that the two formats agree).
  function fmtNS(ns) {
    if (!(ns > 0)) return "0 ms";
    if (ns >= 1e9) return sig(ns / 1e9) + " s";
    if (ns >= 1e6) return sig(ns / 1e6) + " ms";
    return sig(ns / 1e3) + " µs";
  }

  function sig(v) {
    if (v >= 100) return String(Math.round(v));
    if (v >= 10) return v.toFixed(1);
    return v.toFixed(2);
  }

  function fmtInt(n) {
    return Math.round(n || 0).toLocaleString("en-US");
  }

  // apiError reads an OpenAI-shaped error body into an Error.
  async function apiError(res) {
    let msg = res.status + " " + res.statusText;
    let param = "";
    try {
      const body = await res.json();
      if (body && body.error && body.error.message) msg = body.error.message;
      if (body && body.error && body.error.param) param = String(body.error.param);
    } catch (_) { /* not JSON */ }
    const err = new Error(msg);
    err.status = res.status;
    err.param = param;
    return err;
  }

  async function sendJSON(method, url, body, headers) {
    const res = await fetch(url, {
      method,
      headers: { "Content-Type": "application/json", "Accept": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
    if (!res.ok) throw await apiError(res);
    return res.status === 204 ? null : res.json();
  }

  // A run is cancelled or deleted only by whoever started it (or with the
  // server's key): a server without a key answers each start with the
  // run's cancel token, which this browser keeps per run.
  const cancelTokenKey = "agentloop.cancel.";

  // startRun starts a race (POST /api/runs), keeps its cancel token and
  // returns its id.
  async function startRun(cfg) {
    const run = await sendJSON("POST", "/api/runs", cfg);
    if (run.cancel_token) {
      try { localStorage.setItem(cancelTokenKey + run.id, run.cancel_token); } catch (_) { /* storage full or off */ }
    }
    return run.id;
  }

  // stopRun cancels run id ("cancel") or deletes it ("delete"), sending
  // its cancel token when this browser started it.
  async function stopRun(id, how) {
    let token = null;
    try { token = localStorage.getItem(cancelTokenKey + id); } catch (_) { /* storage off */ }
    const headers = token ? { "X-Agentloop-Cancel-Token": token } : {};
    const url = "/api/runs/" + encodeURIComponent(id);
    if (how === "delete") {
      const out = await sendJSON("DELETE", url, undefined, headers);
      try { localStorage.removeItem(cancelTokenKey + id); } catch (_) { /* storage off */ }
      return out;
    }
    return sendJSON("POST", url + "/cancel", {}, headers);
  }

  async function getJSON(url) {
    const res = await fetch(url, { headers: { "Accept": "application/json" }, credentials: "same-origin" });
    if (!res.ok) throw await apiError(res);
    return res.json();
  }

  function showError(node, err) {
    if (!node) return;
    node.textContent = err ? String(err.message || err) : "";
    node.hidden = !err;
  }

  // setFieldError shows msg under the field and ties it to the field
  // (aria-describedby, aria-invalid); an empty msg clears it.
  function setFieldError(input, msg) {
    const id = input.id + "-error";
    let box = document.getElementById(id);
    if (!msg) {
      if (box) box.remove();
      input.removeAttribute("aria-invalid");
      input.removeAttribute("aria-describedby");
      return;
    }
    if (!box) {
      box = el("p", { id, class: "error field-error" });
      input.after(box);
    }
    box.textContent = msg;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
  }

  function wsURL(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  // labelCells gives each body cell its column's header as data-label,
  // which a reflowing table (class reflow) shows at phone width.
  function labelCells(table) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const tr of table.querySelectorAll("tbody tr")) {
      [...tr.children].forEach((cell, i) => {
        if (cell.tagName === "TD" && heads[i]) cell.dataset.label = heads[i];
      });
    }
  }

  const terminal = new Set(["passed", "failed", "interrupted", "cancelled"]);

  // Sign out (pages of a server with --api-key): end the login, then
  // show the login page.
  document.addEventListener("click", async (ev) => {
    const btn = ev.target instanceof Element && ev.target.closest("[data-logout]");
    if (!btn) return;
    btn.disabled = true;
    try {
      await sendJSON("POST", "/logout", {});
      location.assign("/");
    } catch (err) {
      btn.disabled = false;
      window.alert("Sign out failed: " + (err.message || err));
    }
  });

  // A button with data-start-race starts a race with that config (the
  // same race under another stack) and opens it, in presenter mode when
  // this page is in it.
  document.addEventListener("click", async (ev) => {
    const btn = ev.target.closest && ev.target.closest("button[data-start-race]");
    if (!btn) return;
    const errBox = document.querySelector("[data-start-race-error]");
    btn.disabled = true;
    try {
      const id = await startRun(JSON.parse(btn.dataset.startRace));
      const present = new URLSearchParams(location.search).has("present") ? "present&" : "";
      location.assign("/race?" + present + "run=" + encodeURIComponent(id));
    } catch (err) {
      if (errBox) showError(errBox, err);
      btn.disabled = false;
    }
  });

  // copyLink makes btn copy its data-link to the clipboard and say so in
  // state; where the clipboard is refused, state shows the link to copy.
  function copyLink(btn, state) {
    btn.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(btn.dataset.link);
        state.textContent = "Link copied.";
      } catch (_) {
        state.textContent = btn.dataset.link;
      }
    });
  }

  // replayPace returns due(now), which says whether a replay's frame at
  // now should draw: ten times a second, not on every frame. A draw
  // rebuilds each lane's waterfall whole, and the track's runners glide
  // between draws (their CSS transition); drawn on every frame, the home
  // page's track alone kept a quarter of a core busy in headless Chromium
  // for the whole replay.
  function replayPace() {
    let drawnAt = -Infinity;
    return (now) => {
      if (now - drawnAt < 100) return false;
      drawnAt = now;
      return true;
    };
  }

  window.agentloop = {
    el, svg, clear, fmtNS, fmtInt,
    sendJSON, getJSON, startRun, stopRun, showError, setFieldError, wsURL, terminal, labelCells, copyLink, replayPace,
  };
})();
