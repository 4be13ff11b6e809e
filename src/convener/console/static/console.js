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

// A long conversation's page shows its turns a page at a time (?turn=N opens the page holding turn N, and the
// server's links say so). A bare #turn-N, as in a link written by hand, is taken to the page that holds it.
const turnPages = document.querySelector("[data-turn-pages]");
const toTurn = () => {
  const wanted = /^#turn-(\d{1,9})$/.exec(window.location.hash);
  if (turnPages && wanted && !document.getElementById(`turn-${wanted[1]}`)) {
    const query = new URLSearchParams(window.location.search);
    query.set("turn", wanted[1]);
    window.location.replace(`${window.location.pathname}?${query}${window.location.hash}`);
  }
};
toTurn();
window.addEventListener("hashchange", toTurn);
