// corpus.js: /corpus. A session's "Race this session" button races its
// workload (GET /api/corpus/{file}) as the button's config says, and opens
// the race, as the inspector's button does.
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
})();
