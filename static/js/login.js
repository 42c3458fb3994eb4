// login.js: posts the API key as JSON to /login, which sets the HttpOnly
// cookie, then reloads the page the visitor asked for.
"use strict";
(function () {
  const A = window.agentloop;
  const form = document.getElementById("login-form");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const errBox = document.getElementById("login-error");
    A.showError(errBox, null);
    const key = document.getElementById("login-key").value;
    try {
      await A.sendJSON("POST", "/login", { key });
      location.reload();
    } catch (err) {
      A.showError(errBox, err);
    }
  });
})();
