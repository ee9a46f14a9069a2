// Wide tables and display math scroll sideways inside their own box (the page never does). A box that
// actually scrolls gets tabindex=0, so a keyboard reader can focus it and scroll it with the arrow keys
// (axe: scrollable-region-focusable); one that fits is left out of the tab order.
(() => {
  // Every table: prose tables, and the calculators' result tables, which scroll in their own box too.
  const SCROLLERS = ".md-typeset table, .md-typeset .arithmatex > .katex-display, .md-typeset div.arithmatex";
  const sync = (el) => {
    if (el.scrollWidth > el.clientWidth + 1) el.tabIndex = 0;
    else if (el.getAttribute("tabindex") === "0") el.removeAttribute("tabindex");
  };
  const observer = new ResizeObserver((entries) => entries.forEach((entry) => sync(entry.target)));
  const watch = (root) => {
    for (const el of root.querySelectorAll(SCROLLERS)) {
      sync(el);
      observer.observe(el);
    }
  };
  // A calculator replaces its result tables on every answer: watch the new ones as they arrive.
  const added = new MutationObserver((records) => {
    for (const record of records) {
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
    if (content) added.observe(content, { childList: true, subtree: true });
  });
})();
