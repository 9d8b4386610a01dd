// The review page's one script: save a score or a veto (the token in a header), move with the keys.
"use strict";
(function () {
  const main = document.getElementById("review");
  if (!main) return;
  const token = main.dataset.token;

  function post(url, body) {
    return fetch(url, {method: "POST", headers: {"Content-Type": "application/json", "X-Review-Token": token},
                       body: JSON.stringify(body), credentials: "same-origin"})
      .then((r) => r.json().then((data) => ({status: r.status, data})));
  }

  function show(form, text, good) {
    const state = form.querySelector(".state");
    state.textContent = text;
    state.className = "state " + (good === true ? "ok" : good === false ? "bad" : "");
  }

  function answer(form, result) {
    if (result.status === 200) {
      form.dataset.version = result.data.version;
      show(form, main.dataset.saved + " · v" + result.data.version, true);
      return true;
    }
    if (result.status === 409) {
      const c = result.data.current || {};
      show(form, main.dataset.conflict.replace("{points}", c.points == null ? "–" : c.points)
                   .replace("{version}", c.version), false);
    } else {
      show(form, main.dataset.error.replace("{why}", result.data.error || result.status), false);
    }
    return false;
  }

  function saveScore(form) {
    show(form, main.dataset.saving);
    const points = form.querySelector("input[name=points]").value;
    return post("/api/score", {at: Number(form.dataset.at), part: form.dataset.part, points: points,
                               comment: form.querySelector("textarea[name=comment]").value,
                               version: Number(form.dataset.version)}).then((r) => answer(form, r));
  }

  document.querySelectorAll("form.score").forEach((form) => {
    form.addEventListener("submit", (e) => { e.preventDefault(); saveScore(form); });
    form.querySelectorAll("button.digit").forEach((b) => b.addEventListener("click", () => {
      form.querySelector("input[name=points]").value = b.dataset.points;
      saveScore(form);
    }));
    form.querySelector("textarea").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); saveScore(form); }
      if (e.key === "Escape") { e.target.blur(); }
    });
  });

  document.querySelectorAll("form.veto").forEach((form) => {
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const active = e.submitter ? e.submitter.value === "1" : true;
      show(form, main.dataset.saving);
      post("/api/veto", {at: Number(form.dataset.at), veto: form.dataset.veto, active: active,
                         reason: form.querySelector("input[name=reason]").value,
                         version: Number(form.dataset.version)})
        .then((r) => { if (answer(form, r)) { form.dataset.active = active ? "1" : "0"; } });
    });
  });

  function current() {
    const forms = Array.from(document.querySelectorAll("form.score"));
    const focused = forms.find((f) => f.contains(document.activeElement));
    return focused || forms.find((f) => f.querySelector("input[name=points]").value === "") || forms[0];
  }

  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text")) return;
    if (t.tagName === "INPUT" && t.type === "number" && !["ArrowLeft", "ArrowRight"].includes(e.key) &&
        !/^[0-9]$/.test(e.key)) return;
    if ((e.key === "ArrowRight" || e.key === "j") && main.dataset.next) { location.href = main.dataset.next; }
    else if ((e.key === "ArrowLeft" || e.key === "k") && main.dataset.prev) { location.href = main.dataset.prev; }
    else if (e.key === "u" && main.dataset.ungraded) { location.href = main.dataset.ungraded; }
    else if (/^[0-9]$/.test(e.key)) {
      const form = current();
      if (!form || Number(e.key) > Number(form.dataset.max)) return;
      e.preventDefault();
      form.querySelector("input[name=points]").value = e.key;
      saveScore(form);
    } else if (e.key === "c") {
      const form = current();
      if (form) { e.preventDefault(); form.querySelector("textarea").focus(); }
    } else { return; }
  });
})();
