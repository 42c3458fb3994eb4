// corpus.js: /corpus. A session's "Race this session" button races its
// workload (GET /api/corpus/{file}) as the button's config says, and opens
// the race, as the inspector's button does. A workload file chosen under
// "Place your own session" is stored (POST /api/workloads) and the page
// reopens with it placed among the sessions (?workload=).
"use strict";
(function () {
  const A = window.agentloop;
  document.addEventListener("click", async (ev) => {
    const btn = ev.target.closest && ev.target.closest("button[data-corpus-race]");
    if (!btn) return;
    btn.disabled = true;
    try {
      const cfg = JSON.parse(btn.dataset.config);
      cfg.workload = await A.getJSON(btn.dataset.workload);
      const id = await A.startRun(cfg);
      window.location.assign("/race?run=" + encodeURIComponent(id));
    } catch (err) {
      btn.disabled = false;
      A.showError(btn.closest("section").querySelector("[data-corpus-race-error]"), err);
    }
  });
  const file = document.getElementById("corpus-file");
  if (file) {
    file.addEventListener("change", async () => {
      if (file.files.length === 0) return;
      const box = document.querySelector("[data-corpus-place-error]");
      try {
        const w = await A.sendJSON("POST", "/api/workloads", JSON.parse(await file.files[0].text()));
        const u = new URL(window.location.href);
        u.searchParams.set("workload", w.id);
        u.searchParams.delete("session");
        window.location.assign(u.pathname + u.search);
      } catch (err) {
        A.showError(box, err instanceof SyntaxError ? new Error("That file is not JSON: " + err.message) : err);
      }
    });
  }
})();
