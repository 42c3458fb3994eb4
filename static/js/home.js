// home.js: the home page plays the recorded race the binary carries on
// the race track from the first second; "Race it live" (the recorded
// race) and "The full race" post their config and open the race view.
"use strict";
(function () {
  const A = window.agentloop;
  const buttons = document.querySelectorAll("button[data-start]");
  for (const btn of buttons) {
    btn.addEventListener("click", async () => {
      const errBox = document.getElementById("start-error");
      A.showError(errBox, null);
      for (const b of buttons) b.disabled = true;
      try {
        const id = await A.startRun(JSON.parse(btn.dataset.preset));
        // The race page hands the focus to the result when this race ends.
        sessionStorage.setItem("agentloop.follow", id);
        location.assign("/race?run=" + encodeURIComponent(id));
      } catch (err) {
        A.showError(errBox, err);
        for (const b of buttons) b.disabled = false;
      }
    });
  }
  const data = document.getElementById("race-recording");
  const root = document.getElementById("race-track");
  if (data && root && A.track) {
    const snap = JSON.parse(data.textContent);
    document.getElementById("race-recording-label").hidden = false;
    let stop = A.track.play(root, snap, A.track.pace(snap));
    document.getElementById("track-replay").addEventListener("click", () => {
      stop();
      stop = A.track.play(root, snap, A.track.pace(snap));
    });
  }
  document.documentElement.dataset.ready = "home";
})();
