// The assessor's page: judge with the buttons or the keys shown on them, undo with "u",
// and get the next document without reloading the page. Every text is set with
// textContent (never as markup). Each shown document gets a fresh idempotency key, sent
// again when a request is retried, so a retry never stores a second judgment.
(() => {
  "use strict";
  const root = document.getElementById("judge");
  if (!root) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const base = "/api/campaigns/" + encodeURIComponent(root.dataset.campaign) +
    "/topics/" + encodeURIComponent(root.dataset.topic);
  const $ = (id) => document.getElementById(id);
  const buttons = Array.from(document.querySelectorAll("button.grade"));
  let docno = root.dataset.docno || null;
  let status = root.dataset.status;
  let key = freshKey();
  let shownAt = performance.now();
  let busy = false;
  let polling = null;

  function freshKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  function say(text) { $("message").textContent = text; }
  function detail(data, fallback) {
    if (!data || data.detail === undefined) return fallback;
    if (Array.isArray(data.detail)) return data.detail.map((d) => d.msg).join("; ");
    return String(data.detail);
  }

  async function call(method, url, body) {
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await fetch(url, {
          method, credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (error) {
        if (attempt >= 8) throw new Error("the server cannot be reached");
        say("Connection problem: trying again (" + (attempt + 1) + ")…");
        await sleep(Math.min(8000, 250 * 2 ** attempt));
        continue;
      }
      const data = await response.json().catch(() => ({}));
      if (response.status >= 500 && attempt < 8) {
        say("The server had a problem: trying again…");
        await sleep(Math.min(8000, 250 * 2 ** attempt));
        continue;
      }
      if (response.status === 401) { window.location.assign("/login"); throw new Error("logged out"); }
      if (!response.ok) {
        const error = new Error(detail(data, response.statusText));
        error.status = response.status;
        throw error;
      }
      return data;
    }
  }

  function show(offer) {
    status = offer.status;
    const doc = offer.document;
    docno = doc ? doc.docno : null;
    $("docno").textContent = docno || "";
    $("doc-title").textContent = doc ? doc.title : "";
    $("doc-text").textContent = doc ? (doc.has_text ? doc.text :
      "(no text in the corpus for this document: judge it by its docno)") : "";
    $("state").textContent = status === "wait"
      ? "Other assessors are finishing this batch; the next document comes in a moment."
      : status === "done" ? (offer.note ? "The campaign has stopped: " + offer.note + ". Thank you!"
        : "This topic is done. Thank you!") : "";
    const next = $("next-topic");  // the page names the next topic waiting, if any
    if (next) next.hidden = !(status === "done" && !offer.note && next.querySelector("a"));
    const topic = offer.topic;
    $("progress").max = topic.goal;
    $("progress").value = topic.judged;
    $("progress-text").textContent = topic.progress + " on this topic · " + offer.mine +
      " by you";
    const pill = document.querySelector("nav.topics a.current small");
    if (pill) pill.textContent = topic.judged + "/" + topic.goal;
    buttons.forEach((b) => { b.disabled = status !== "judge"; b.classList.remove("chosen"); });
    key = freshKey();
    shownAt = performance.now();
    $("doc-text").scrollTop = 0;
    clearTimeout(polling);
    if (status === "wait") polling = setTimeout(refresh, 3000);
  }

  async function refresh() {
    try { show(await call("GET", base + "/next")); } catch (error) { say(error.message); }
  }

  async function judge(button) {
    if (busy || status !== "judge" || !docno) return;
    busy = true;
    button.classList.add("chosen");
    buttons.forEach((b) => { b.disabled = true; });
    say("Saving…");
    try {
      const seconds = (performance.now() - shownAt) / 1000;
      const data = await call("POST", base + "/judgments",
        { docno, label: Number(button.dataset.grade), seconds, key });
      say("Saved: " + data.judgment.docno + " → " + button.textContent.trim());
      show(data.next);
    } catch (error) {
      say("Not saved: " + error.message);
      buttons.forEach((b) => { b.disabled = status !== "judge"; b.classList.remove("chosen"); });
      // refused (409: not, or no longer, this assessor's document): show what is theirs now
      if (error.status === 409) await call("GET", base + "/next").then(show, () => {});
    } finally { busy = false; }
  }

  async function undo() {
    if (busy) return;
    busy = true;
    say("Undoing…");
    try {
      const data = await call("POST", base + "/undo", {});
      say("Undone: " + data.undone.docno + " (judge it again)");
      show(data.next);
    } catch (error) { say("Nothing undone: " + error.message); } finally { busy = false; }
  }

  buttons.forEach((b) => b.addEventListener("click", () => judge(b)));
  $("undo").addEventListener("click", undo);
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.repeat) return;
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    if (event.key === "u" || event.key === "U") { event.preventDefault(); undo(); return; }
    const button = buttons.find((b) => b.dataset.key === event.key);
    if (button) { event.preventDefault(); judge(button); }
  });
  if (status === "wait") polling = setTimeout(refresh, 3000);
})();
