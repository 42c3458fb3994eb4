// /check: arms one check at a time (POST /api/checks/live) for a client
// pointed at the server by hand, then polls its verdict
// (GET /api/checks/live/{scope}) as the engine sees requests arrive.
(function () {
  const A = window.agentloop;
  const form = document.getElementById("check-form");
  const errorNode = document.getElementById("check-error");
  let timer = null;

  async function poll(live) {
    const q = "?check=" + encodeURIComponent(live.check) + (live.drill_id ? "&drill=" + encodeURIComponent(live.drill_id) : "");
    try {
      const g = await A.getJSON("/api/checks/live/" + encodeURIComponent(live.scope) + q);
      const v = document.getElementById("check-verdict");
      v.textContent = g.result.verdict;
      v.className = "verdict-" + g.result.verdict;
      document.getElementById("check-reason").textContent = g.result.reason;
      document.getElementById("check-requests").textContent = g.requests + " requests seen in this scope.";
      const ol = document.getElementById("check-evidence");
      A.clear(ol);
      for (const e of g.result.evidence || []) {
        ol.append(A.el("li", {}, (e.turn ? "turn " + e.turn + ": " : "") + e.event + (e.response_id ? " (" + e.response_id + ")" : "")));
      }
      A.showError(errorNode, null);
    } catch (err) {
      A.showError(errorNode, err);
    }
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (timer) clearInterval(timer);
    try {
      const live = await A.sendJSON("POST", "/api/checks/live", { check: document.getElementById("check-id").value });
      document.getElementById("check-env").textContent =
        "export OPENAI_BASE_URL=" + live.base_url + "\nexport OPENAI_API_KEY=sk-anything   # or the server's key";
      document.getElementById("check-drill").textContent = (live.drill ? "Drill " + live.drill + " is armed in this scope. " : "No drill: this check watches every request. ") +
        "The model keeps calling your client's function tools for " + live.tool_turns + " turns before it answers.";
      document.getElementById("check-live").hidden = false;
      document.getElementById("check-verdict").textContent = "waiting for requests";
      A.showError(errorNode, null);
      poll(live);
      timer = setInterval(() => poll(live), 1000);
    } catch (err) {
      A.showError(errorNode, err);
    }
  });
})();
