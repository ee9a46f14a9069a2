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
  // the table it happened in, and new tables are watched as they arrive.
  const added = new MutationObserver((records) => {
    for (const record of records) {
      const at = record.target.nodeType === 1 ? record.target : record.target.parentElement;
      const scroller = at && at.closest(SCROLLERS);
      if (scroller) sync(scroller);
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.matches(SCROLLERS)) {
          sync(node);
          observer.observe(node);
        }
        watch(node);
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
