/* encoder-course site: what the theme does not do for us, offline and without a server.

   - The menu buttons open the notebook list at every width (the pinned Book Theme's buttons have no
     handler of their own with pydata-sphinx-theme 0.17: only the header's hidden button has one).
   - The quizzes: options in an order of the reader's own, the first checked answer counts, the
     explanation appears, the score adds up (the page's HTML comes from the notebooks' question banks).
   - A copy button on every code block, figures that open enlarged, and boxes that scroll sideways
     (a wide equation, a wide table) reachable by keyboard.
   The theme's buttons get their names in files/templates/. */
"use strict";

/* -- the menu ------------------------------------------------------------------------------------ */

// Where each sidebar sits beside the text instead of opening as a dialog (the themes' breakpoints).
const IN_PLACE = { primary: "(min-width: 960px)", secondary: "(min-width: 1200px)" };

function setupMenus() {
  for (const side of ["primary", "secondary"]) {
    const sidebar = document.getElementById(`pst-${side}-sidebar`);
    const dialog = document.getElementById(`pst-${side}-sidebar-modal`);
    // The theme opens its dialog from the header's button only; that button is hidden in this layout.
    const opener = document.querySelector(`.bd-header .${side}-toggle`);
    const toggles = document.querySelectorAll(`.bd-header-article .${side}-toggle`);
    const hiddenClass = `ec-${side}-hidden`;
    const wide = window.matchMedia(IN_PLACE[side]);
    if (!sidebar || !toggles.length) continue;
    const sync = () => {
      const open = wide.matches ? !document.documentElement.classList.contains(hiddenClass)
                                : Boolean(dialog && dialog.open);
      toggles.forEach((t) => t.setAttribute("aria-expanded", String(open)));
    };
    toggles.forEach((toggle) => {
      toggle.addEventListener("click", (event) => {
        event.preventDefault();
        if (wide.matches) {
          document.documentElement.classList.toggle(hiddenClass);
        } else if (opener && dialog) {
          document.documentElement.classList.remove(hiddenClass);
          opener.click(); // the theme moves the sidebar into its dialog and opens it
        }
        sync();
      });
    });
    if (dialog) dialog.addEventListener("close", sync);
    wide.addEventListener("change", sync);
    sync();
  }
}

/* -- quizzes ------------------------------------------------------------------------------------- */

const LETTERS = "ABCDEFGH";

function readerSeed() {
  // One seed per reader, kept in the browser like the notebook keeps ~/.encoder_course_learner.
  const key = "encoder-course-reader";
  try {
    let seed = window.localStorage.getItem(key);
    if (!seed) {
      seed = String(Math.random()).slice(2);
      window.localStorage.setItem(key, seed);
    }
    return seed;
  } catch (error) {
    return String(Math.random()).slice(2); // storage refused: a new order for each visit
  }
}

function randomFrom(text) {
  let h = 2166136261; // FNV-1a of the text, then mulberry32
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return () => {
    h = (h + 0x6d2b79f5) | 0;
    let t = Math.imul(h ^ (h >>> 15), 1 | h);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled(items, random) {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function setupQuiz(quiz, seed) {
  const questions = Array.from(quiz.querySelectorAll("fieldset.ec-question"));
  const score = quiz.querySelector(".ec-score");
  quiz.addEventListener("submit", (event) => event.preventDefault()); // a static page: nothing to send
  let answered = 0;
  let right = 0;
  const showScore = () => {
    const open = questions.length - answered;
    score.textContent = `Score: ${right} / ${questions.length} right on the first answer`
      + (open ? `, ${open} not answered yet` : "") + ".";
    score.hidden = false;
  };
  questions.forEach((question, index) => {
    const box = question.querySelector(".ec-options");
    shuffled(Array.from(box.children), randomFrom(`${seed}|${quiz.dataset.quiz}.${index}`))
      .forEach((label) => box.appendChild(label));
    const button = question.querySelector(".ec-check");
    const verdict = question.querySelector(".ec-verdict");
    button.addEventListener("click", () => {
      if (question.classList.contains("ec-answered")) return; // only the first answer counts
      const chosen = question.querySelector("input:checked");
      if (!chosen) {
        verdict.textContent = "Pick an option first.";
        return;
      }
      const labels = Array.from(box.children);
      const key = labels.find((label) => label.querySelector("input").value === question.dataset.key);
      const correct = chosen.value === question.dataset.key;
      question.classList.add("ec-answered");
      key.classList.add("ec-key");
      if (!correct) chosen.closest("label").classList.add("ec-wrong");
      question.querySelectorAll("input").forEach((input) => { input.disabled = true; });
      button.setAttribute("aria-disabled", "true");
      button.textContent = "Answered";
      const text = key.querySelector(".ec-text").textContent;
      verdict.className = `ec-verdict ${correct ? "ec-verdict-right" : "ec-verdict-wrong"}`;
      verdict.textContent = correct ? "✓ Right."
        : `✗ Not this one: the answer is ${LETTERS[labels.indexOf(key)]}, “${text}”.`;
      question.querySelector(".ec-explain").hidden = false;
      answered += 1;
      right += correct ? 1 : 0;
      showScore();
    });
  });
  showScore();
}

/* -- copy buttons -------------------------------------------------------------------------------- */

function announce(text) {
  let status = document.getElementById("ec-status");
  if (!status) {
    status = document.createElement("p");
    status.id = "ec-status";
    status.className = "ec-visually-hidden";
    status.setAttribute("role", "status");
    document.body.appendChild(status);
  }
  status.textContent = "";
  window.setTimeout(() => { status.textContent = text; }, 50);
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (error) { // no clipboard API here (an http page, an old browser): the selection way
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done;
  }
}

function setupCopyButtons() {
  document.querySelectorAll("article div.highlight").forEach((block) => {
    const pre = block.querySelector("pre");
    if (!pre || block.querySelector(".ec-copy")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "ec-copy";
    button.textContent = "Copy";
    button.addEventListener("click", async () => {
      const done = await copyText(pre.innerText.replace(/\n$/, ""));
      button.textContent = done ? "Copied" : "Copy failed";
      announce(done ? "Code copied to the clipboard." : "The browser did not allow copying.");
      window.setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
    block.classList.add("ec-copyable");
    block.appendChild(button);
  });
}

/* -- figures that open enlarged ------------------------------------------------------------------ */

function setupLightbox() {
  const figures = document.querySelectorAll("article .cell_output img");
  if (!figures.length) return;
  const dialog = document.createElement("dialog");
  dialog.className = "ec-lightbox";
  dialog.setAttribute("aria-label", "The figure, enlarged");
  dialog.innerHTML = '<button type="button" class="ec-lightbox-close">Close</button>';
  document.body.appendChild(dialog);
  dialog.querySelector("button").addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
  dialog.addEventListener("close", () => { const big = dialog.querySelector("img"); if (big) big.remove(); });
  figures.forEach((figure) => {
    let link = figure.closest("a");
    if (!link) { // Sphinx links only the figures it scales: every figure gets the same link
      link = document.createElement("a");
      link.href = figure.src;
      link.className = "reference internal image-reference";
      figure.replaceWith(link);
      link.appendChild(figure);
    }
    link.classList.add("ec-enlarge");
    link.title = "Enlarge the figure";
    link.addEventListener("click", (event) => {
      event.preventDefault();
      const big = document.createElement("img");
      big.src = link.href;
      big.alt = figure.alt;
      // Twice the size shown in the column: within the window where the column shows the figure whole,
      // wider than the window where the column had to shrink it (a phone), and the dialog scrolls.
      const shown = figure.getBoundingClientRect().width;
      const drawn = parseFloat(figure.style.width) || figure.naturalWidth; // a 2x PNG's size from its notebook
      const width = shown < drawn - 1 ? 2 * shown : Math.min(2 * shown, window.innerWidth * 0.94);
      big.style.width = `${Math.round(Math.max(width, shown))}px`;
      dialog.appendChild(big);
      dialog.showModal();
    });
  });
}

/* -- boxes wider than the column scroll by themselves, and can be reached to scroll ----------------- */

const SCROLL_BOXES = "article div.math, article mjx-container[display='true'], article .pst-scrollable-table-container, "
  + "article .cell_output > .output, article pre";

function markScrollable() {
  // The theme does this too, 300 ms after a resize; done at once here so no box is left unreachable.
  document.querySelectorAll(SCROLL_BOXES).forEach((box) => {
    const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
    if (scrolls) box.tabIndex = 0;
    else if (box.tabIndex === 0) box.tabIndex = -1;
    if (scrolls && box.matches("div.math, mjx-container") && !box.getAttribute("aria-label")) {
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", "Equation (scrolls sideways)");
    }
  });
}

/* -- start --------------------------------------------------------------------------------------- */

function start() {
  setupMenus();
  const seed = readerSeed();
  document.querySelectorAll("form.ec-quiz").forEach((quiz) => setupQuiz(quiz, seed));
  setupCopyButtons();
  setupLightbox();
  const math = () => {
    const startup = window.MathJax && window.MathJax.startup;
    (startup && startup.promise ? startup.promise : Promise.resolve()).then(markScrollable);
  };
  if (document.readyState === "complete") math();
  else window.addEventListener("load", math);
  window.addEventListener("resize", markScrollable);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
