// Wide tables and display math scroll sideways inside their own box (the page never does). A box that
// actually scrolls gets tabindex=0, so a keyboard reader can focus it and scroll it with the arrow keys
// (axe: scrollable-region-focusable); one that fits is left out of the tab order.
(() => {
  const SCROLLERS = ".md-typeset__table > table, .md-typeset .arithmatex > .katex-display, .md-typeset div.arithmatex";
  const sync = (el) => {
    if (el.scrollWidth > el.clientWidth + 1) el.tabIndex = 0;
    else if (el.getAttribute("tabindex") === "0") el.removeAttribute("tabindex");
  };
  const observer = new ResizeObserver((entries) => entries.forEach((entry) => sync(entry.target)));
  document$.subscribe(() => {
    for (const el of document.querySelectorAll(SCROLLERS)) {
      sync(el);
      observer.observe(el);
    }
  });
})();
