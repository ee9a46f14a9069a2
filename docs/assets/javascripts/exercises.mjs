// Exercises: [data-exercise] elements pre-rendered by hooks/lc_exercises.py, checked live by calc.guide.exercises
// in the page's one Pyodide worker (shared with the calculators through calc.mjs's engine()).
//
// Signals on the exercise root (tests wait on these, never on time):
//   data-state     prerendered | loading | ready | error
//   data-seq       incremented synchronously on every check and every new draw (0 at mount)
//   data-answered  the data-seq whose reply is shown; settled = data-state="ready" and data-answered == data-seq
//   data-verdict   right | wrong | invalid after a check (removed when a new case is drawn)
//   data-seed      the case shown; also in the address as ?ex-ID=SEED, so a link restores the case
// A reply for an older data-seq is never shown.

import { engine, request } from "./calc.mjs";

const MAX_SEED = 999_999;
let mounts = 0;

const param = (id) => `ex-${id}`;

function fill(root, c) {
  root.querySelector("[data-question]").textContent = c.question;
  root.querySelector("[data-hint-text]").textContent = c.hint;
  root.querySelector("[data-tolerance]").textContent = c.tolerance;
  root.querySelector("[data-display-unit]").textContent = c.display_unit;
  root.querySelector("[data-answer]").textContent = c.answer;
  const steps = root.querySelector("[data-steps]");
  steps.replaceChildren(
    ...c.steps.map((text) => {
      const li = document.createElement("li");
      li.textContent = text;
      return li;
    }),
  );
  root.dataset.seed = String(c.seed);
}

function mount(root) {
  if (root.dataset.mounted) return;
  root.dataset.mounted = "true";
  const id = root.dataset.exercise;
  const key = `exercise:${id}#${++mounts}`;
  const path = location.pathname;
  const form = root.querySelector("form");
  const input = form.querySelector("[name=answer]");
  const buttons = [...form.querySelectorAll("button")];
  const newNumbers = form.querySelector("[data-new-numbers]");
  const feedback = root.querySelector("[data-feedback]");
  const hint = root.querySelector("[data-hint]");
  const solution = root.querySelector("[data-solution]");
  const linked = new URLSearchParams(location.search).get(param(id));
  let seq = 0;

  const bump = () => {
    seq += 1;
    root.dataset.seq = String(seq);
    return seq;
  };
  const say = (text) => {
    if (feedback.textContent !== text) feedback.textContent = text;
  };
  const ask = (inputs) => {
    const mine = bump();
    return request(key, mine, "exercise", inputs, "exercise").then((reply) => {
      if (mine !== seq || reply.superseded) return null; // an answer for older input: never shown
      if (reply.type === "dead") {
        root.dataset.state = "error";
        say(`The live engine stopped (${reply.message}); the question and worked answer shown are the build's.`);
        root.dataset.answered = String(mine);
        return null;
      }
      return { mine, reply };
    });
  };

  const loadCase = async (seed) => {
    delete root.dataset.verdict;
    const got = await ask({ op: "case", exercise: id, seed: String(seed) });
    if (!got) return;
    if (got.reply.ok) {
      fill(root, got.reply.case);
      input.value = "";
      input.removeAttribute("aria-invalid");
      hint.open = false;
      solution.open = false;
      say("");
    } else {
      root.dataset.verdict = "invalid";
      say(got.reply.error.said ?? got.reply.error.message); // the reader's words (a worker's internal error has only a message)
    }
    root.dataset.answered = String(got.mine);
  };

  form.hidden = false;
  root.dataset.state = "loading";
  engine().then(
    () => {
      if (!root.isConnected) return;
      for (const button of buttons) button.disabled = false;
      const pending = linked !== null && linked !== root.dataset.seed ? loadCase(linked) : null;
      root.dataset.state = "ready";
      return pending;
    },
    (err) => {
      root.dataset.state = "error";
      say(`The live checker could not start (${err.message}); the question and worked answer are the build's.`);
    },
  );

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (root.dataset.state !== "ready") return;
    const got = await ask({ op: "check", exercise: id, seed: root.dataset.seed, answer: input.value });
    if (!got) return;
    if (got.reply.ok) {
      const right = got.reply.case.correct;
      root.dataset.verdict = right ? "right" : "wrong";
      if (right) input.removeAttribute("aria-invalid");
      else input.setAttribute("aria-invalid", "true");
      if (!right) hint.open = true;
      say(got.reply.case.message);
    } else {
      root.dataset.verdict = "invalid";
      input.setAttribute("aria-invalid", "true");
      say(got.reply.error.said ?? got.reply.error.message);
    }
    root.dataset.answered = String(got.mine);
  });

  newNumbers.addEventListener("click", () => {
    if (root.dataset.state !== "ready" || location.pathname !== path) return;
    let seed = root.dataset.seed;
    while (seed === root.dataset.seed) seed = String(1 + Math.floor(Math.random() * MAX_SEED));
    const url = new URL(location.href);
    url.searchParams.set(param(id), seed);
    url.hash = id;
    history.replaceState(history.state, "", url);
    loadCase(seed);
  });
}

document$.subscribe(() => {
  for (const root of document.querySelectorAll("[data-exercise]")) mount(root);
});
