// Typeset TeX with the pinned KaTeX (node_modules/katex) for hooks/lc_math.py, so pages ship rendered math and no
// KaTeX JavaScript.
//   node tools/katex_render.mjs < [{"tex": "...", "display": false}, ...]
// prints a JSON array of HTML strings, one per formula, in order. TeX that KaTeX cannot parse exits 1 with the
// formula and KaTeX's message on stderr: the build fails on it rather than showing a red error in a page.
import { readFileSync } from "node:fs";
import katex from "katex";

const items = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const { tex, display } of items) {
  try {
    out.push(katex.renderToString(tex, { displayMode: Boolean(display), throwOnError: true, output: "htmlAndMathml" }));
  } catch (err) {
    process.stderr.write(`cannot typeset ${JSON.stringify(tex)}: ${err.message}\n`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(out));
