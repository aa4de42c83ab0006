/* The page inspection of scripts/browser_check.py, run in the loaded page after MathJax has finished.
 *
 * inspectPage(claimIds, levels) returns the typesetting state of the math, the TeX sources MathJax typeset,
 * the page's sideways overflow, the blocks past their container, and (when claimIds is given) the claims of
 * the ledger without a visible verdict.
 */

/* Rounding of fractional layout positions: one CSS pixel. */
const SLACK = 1;

function mathState() {
  const nodes = Array.from(document.querySelectorAll("span.math, div.math"));
  const untypeset = nodes.filter(n => !n.querySelector("mjx-container")).map(n => n.textContent.slice(0, 80));
  const errors = Array.from(document.querySelectorAll("mjx-merror, [data-mjx-error]"))
    .map(n => (n.getAttribute("data-mjx-error") || n.textContent).slice(0, 80));
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll("pre, code, mjx-container, script, style, .highlight").forEach(n => n.remove());
  const text = clone.textContent;
  const raw = [];
  for (const pat of ["\\frac", "\\mathbb"]) {
    const i = text.indexOf(pat);
    if (i >= 0) raw.push(text.slice(Math.max(0, i - 30), i + 40));
  }
  const tex = [];
  if (window.MathJax && MathJax.startup && MathJax.startup.document && MathJax.startup.document.math) {
    for (const item of MathJax.startup.document.math) tex.push(String(item.math));
  }
  // U+005C in CHTML output: a backslash set as a glyph
  const backslashes = document.querySelectorAll("mjx-container mjx-c.mjx-c5C").length;
  return {math: nodes.length, untypeset, errors, raw, tex, backslashes};
}

function scrolls(el) {
  const o = getComputedStyle(el).overflowX;
  return o === "auto" || o === "scroll";
}

/* The nearest ancestor that lays out blocks (an inline element is no container). */
function containerOf(node) {
  let p = node.parentElement;
  while (p && ["inline", "contents"].includes(getComputedStyle(p).display)) p = p.parentElement;
  return p;
}

/* The box a container paints its content in: inside its border (content may sit in the padding: text-indent). */
function paddingBox(el) {
  const r = el.getBoundingClientRect(), s = getComputedStyle(el);
  return {left: r.left + parseFloat(s.borderLeftWidth), right: r.right - parseFloat(s.borderRightWidth)};
}

function describe(node) {
  const el = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
  const cls = (el.getAttribute("class") || "").trim().split(/\s+/).slice(0, 2).join(".");
  const kind = node.nodeType === Node.TEXT_NODE ? "text in " : "";
  return kind + el.tagName.toLowerCase() + (cls ? "." + cls : "") + " '" +
    (node.textContent || "").trim().replace(/\s+/g, " ").slice(0, 40) + "'";
}

/* Elements and text runs of the content column that reach past their container with no scroller between. */
function overflowing() {
  const column = document.querySelector("article") || document.body;
  const found = [];
  const walker = document.createTreeWalker(column, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    if (node.nodeType === Node.TEXT_NODE && !node.textContent.trim()) continue;
    if (el.closest("mjx-assistive-mml") || (el.parentElement && el.parentElement.closest("mjx-container"))) continue;
    if (node.nodeType === Node.TEXT_NODE && el.closest("mjx-container")) continue;
    if (found.some(f => f.node.contains(node))) continue;
    const style = getComputedStyle(el);
    if (style.display === "none" || style.position === "absolute" || style.position === "fixed") continue;
    let scrolled = false;
    for (let a = node.parentElement; a && a !== column.parentElement; a = a.parentElement) {
      if (a !== el && scrolls(a)) { scrolled = true; break; }
    }
    if (scrolled) continue;
    let rect;
    if (node.nodeType === Node.TEXT_NODE) {
      const range = document.createRange();
      range.selectNodeContents(node);
      rect = range.getBoundingClientRect();
    } else {
      rect = el.getBoundingClientRect();
    }
    if (rect.width === 0 && rect.height === 0) continue;
    const box = containerOf(node);
    if (!box) continue;
    const c = paddingBox(box);
    // a block pulled out of its container by a negative margin (furo's headings) may reach out by that margin
    const own = node.nodeType === Node.TEXT_NODE ? {marginLeft: "0", marginRight: "0"} : style;
    const allowLeft = Math.max(0, -parseFloat(own.marginLeft)), allowRight = Math.max(0, -parseFloat(own.marginRight));
    const past = Math.max(rect.right - c.right - allowRight, c.left - allowLeft - rect.left);
    if (past > SLACK) found.push({node, past});
  }
  return found.map(f => `${describe(f.node)} by ${Math.round(f.past)} px`);
}

/* Why an element is not fully visible: '' when it lies inside the window and inside every box that clips it. */
function hiddenBecause(el) {
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return "it has no size";
  const s = getComputedStyle(el);
  if (s.visibility !== "visible" || parseFloat(s.opacity) === 0) return "it is invisible";
  const viewport = document.documentElement.clientWidth;
  if (r.left < -SLACK || r.right > viewport + SLACK) {
    return `it lies at x = ${Math.round(r.left)}..${Math.round(r.right)} px, outside the ${viewport} px window`;
  }
  for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
    const as = getComputedStyle(a);
    if (as.overflowX === "visible" && as.overflowY === "visible") continue;
    const b = a.getBoundingClientRect();
    if (r.left < b.left - SLACK || r.right > b.right + SLACK) {
      return `it is cut off by ${describe(a).split(" '")[0]} (x = ${Math.round(r.left)}..${Math.round(r.right)} px ` +
        `in a box at ${Math.round(b.left)}..${Math.round(b.right)} px)`;
    }
  }
  return "";
}

function verdictProblems(claimIds, levels) {
  const rows = new Map();
  for (const row of document.querySelectorAll("table.geoattn-ledger tr.claim-row")) {
    const id = row.querySelector(".geoattn-claim-id");
    if (id) rows.set(id.textContent.trim(), row);
  }
  const problems = [];
  for (const id of claimIds) {
    const row = rows.get(id);
    if (!row) { problems.push(`${id}: no row in the ledger table`); continue; }
    const verdict = row.querySelector(".geoattn-verdict");
    if (!verdict) { problems.push(`${id}: no verdict in its row`); continue; }
    if (!levels.includes(verdict.textContent.trim())) {
      problems.push(`${id}: verdict ${JSON.stringify(verdict.textContent.trim())} is not one of ${levels}`);
      continue;
    }
    for (const [what, el] of [["verdict", verdict], ["id", row.querySelector(".geoattn-claim-id")],
                              ["statement", row.querySelector(".geoattn-statement")]]) {
      const why = el ? hiddenBecause(el) : "it is missing";
      if (why) { problems.push(`${id}: its ${what} is not visible: ${why}`); break; }
    }
  }
  return problems;
}

function inspectPage(claimIds, levels) {
  const de = document.documentElement;
  const out = mathState();
  out.page_width = de.scrollWidth > de.clientWidth + SLACK ? [de.scrollWidth, de.clientWidth] : null;
  out.overflow = overflowing();
  out.verdicts = claimIds ? verdictProblems(claimIds, levels) : [];
  out.external = performance.getEntriesByType("resource").map(e => e.name).filter(u => /^https?:/.test(u));
  return out;
}
