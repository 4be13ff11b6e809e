// Progressive enhancement only: every page reads and works without this file.
// "/" focuses the page's filter box, as in most consoles.
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.key !== "/" || (target instanceof HTMLElement && target.closest("input, textarea, select"))) return;
  const filter = document.getElementById("filter");
  if (filter) { event.preventDefault(); filter.focus(); }
});

// An evaluation run's page reloads itself while the run is RUNNING (the server marks it with
// data-refresh-seconds); without scripts the page says to reload it.
const refreshing = document.querySelector("[data-refresh-seconds]");
if (refreshing) {
  const seconds = Math.min(Math.max(Number(refreshing.getAttribute("data-refresh-seconds")) || 2, 1), 60);
  window.setTimeout(() => window.location.reload(), seconds * 1000);
}
