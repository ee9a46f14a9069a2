// Wide tables, display math and diagrams scroll sideways inside their own box (the page never does). A box that
// actually scrolls gets tabindex=0, so a keyboard reader can focus it and scroll it with the arrow keys
// (axe: scrollable-region-focusable); one that has never overflowed is left out of the tab order.
(() => {
  // Every table: prose tables, and the calculators' result tables, which scroll in their own box too; and the
  // diagrams kept at their natural size (the guide's [[figure]]s, the pipeline calculator's schedule).
  const SCROLLERS =
    ".md-typeset table, .md-typeset .arithmatex > .katex-display, .md-typeset div.arithmatex, " +
    ".md-typeset .lc-diagram, .md-typeset .lc-figure--scroll";
  const sync = (el) => {
    // Once a box has scrolled it stays focusable: a check in the middle of a relayout (a palette switch, an
    // audit measuring the page) must not take a scrolling box out of the tab order.
    const scrolls = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
    if (scrolls && el.getAttribute("tabindex") !== "0") el.setAttribute("tabindex", "0");
  };
  const observer = new ResizeObserver((entries) => entries.forEach((entry) => sync(entry.target)));
  const watch = (root) => {
    for (const el of root.querySelectorAll(SCROLLERS)) {
      sync(el);
      observer.observe(el);
    }
  };
  // A calculator patches its result tables on every answer (new cells, new tables): a table can start to
  // overflow without changing its own size, which ResizeObserver would not see, so every change re-checks
  // the table it happened in, and new tables are watched as they arrive. The checks measure the page, so they wait
  // until the answer is painted (a task after the next frame, or 500 ms if no frame comes): measured in the answer's
  // own task they forced a layout of 2-3 ms before the new numbers could be shown. While checks wait, <html> carries
  // data-lc-scrollers="pending" (tests wait for it to go).
  const due = new Set();
  let timer = 0;
  const checkDue = () => {
    clearTimeout(timer);
    timer = 0;
    for (const el of due) if (el.isConnected) sync(el);
    due.clear();
    delete document.documentElement.dataset.lcScrollers;
  };
  const later = (el) => {
    due.add(el);
    if (timer) return;
    document.documentElement.dataset.lcScrollers = "pending";
    timer = setTimeout(checkDue, 500);
    requestAnimationFrame(() => setTimeout(() => timer && checkDue(), 0));
  };
  const added = new MutationObserver((records) => {
    for (const record of records) {
      const at = record.target.nodeType === 1 ? record.target : record.target.parentElement;
      const scroller = at && at.closest(SCROLLERS);
      if (scroller) later(scroller);
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        for (const el of [...(node.matches(SCROLLERS) ? [node] : []), ...node.querySelectorAll(SCROLLERS)]) {
          later(el);
          observer.observe(el);
        }
      }
    }
  });
  document$.subscribe(() => {
    watch(document);
    const content = document.querySelector(".md-content");
    // tabindex too: patching a result copies the new HTML's attributes, which drops the one set here.
    if (content) {
      added.observe(content, { childList: true, characterData: true, subtree: true, attributes: true, attributeFilter: ["tabindex"] });
    }
  });
})();
