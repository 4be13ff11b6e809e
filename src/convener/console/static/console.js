// Progressive enhancement only: every page reads and works without this file.
// "/" focuses the page's filter box, as in most consoles.
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.key !== "/" || (target instanceof HTMLElement && target.closest("input, textarea, select"))) return;
  const filter = document.getElementById("filter");
  if (filter) { event.preventDefault(); filter.focus(); }
});
