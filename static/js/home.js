// home.js: the "Start a race" button posts the ready-made config and opens
// the race view.
"use strict";
(function () {
  const A = window.agentloop;
  const btn = document.getElementById("start-preset");
  if (!btn) return;
  btn.addEventListener("click", async () => {
    const errBox = document.getElementById("start-error");
    A.showError(errBox, null);
    btn.disabled = true;
    try {
      const id = await A.startRun(JSON.parse(btn.dataset.preset));
      // The race page hands the focus to the result when this race ends.
      sessionStorage.setItem("agentloop.follow", id);
      location.assign("/race?run=" + encodeURIComponent(id));
    } catch (err) {
      A.showError(errBox, err);
      btn.disabled = false;
    }
  });
})();
