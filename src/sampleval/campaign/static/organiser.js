// The organiser's page: refresh the progress and the live leaderboard every few seconds.
// The panel is rendered (and escaped) by the server; this only swaps it in.
(() => {
  "use strict";
  const panel = document.getElementById("panel");
  if (!panel) return;
  async function refresh() {
    try {
      const response = await fetch(panel.dataset.source, { credentials: "same-origin" });
      if (response.ok) panel.innerHTML = await response.text();
    } catch (_) { /* the server restarts or the network hiccups: try again later */ }
  }
  setInterval(refresh, 5000);
})();
