// Typeset pymdownx.arithmatex (generic mode) output with the self-hosted KaTeX, on every page view.
document$.subscribe(() => {
  for (const el of document.querySelectorAll(".arithmatex")) {
    if (el.dataset.typeset) continue;
    const display = el.tagName === "DIV";
    const tex = el.textContent.trim().replace(/^\\[([]/, "").replace(/\\[)\]]$/, "");
    katex.render(tex, el, { displayMode: display, throwOnError: false });
    el.dataset.typeset = "true";
  }
});
