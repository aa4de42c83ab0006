/* Filters of the claims ledger by family and verdict (no network, no libraries).
 *
 * Every ledger row carries the classes "family-<name>" and "verdict-<level>"; the two menus hide the
 * rows that do not match, and a line says how many claims are shown.
 */
(function () {
  "use strict";

  function valuesOf(rows, prefix) {
    const seen = [];
    rows.forEach(function (row) {
      row.classList.forEach(function (c) {
        if (c.startsWith(prefix) && seen.indexOf(c.slice(prefix.length)) < 0) seen.push(c.slice(prefix.length));
      });
    });
    return seen;
  }

  function menu(label, name, values) {
    const wrap = document.createElement("label");
    wrap.textContent = label;
    const select = document.createElement("select");
    select.name = name;
    ["all"].concat(values).forEach(function (v) {
      const option = document.createElement("option");
      option.value = v;
      option.textContent = v.replace(/_/g, " ");
      select.appendChild(option);
    });
    wrap.appendChild(select);
    return [wrap, select];
  }

  function setUp(table) {
    const rows = Array.from(table.querySelectorAll("tbody tr.claim-row"));
    if (!rows.length) return;
    const bar = document.createElement("div");
    bar.className = "geoattn-ledger-filter";
    const [familyLabel, family] = menu("Family", "family", valuesOf(rows, "family-"));
    const [verdictLabel, verdict] = menu("Verdict", "verdict", valuesOf(rows, "verdict-"));
    const count = document.createElement("span");
    count.className = "geoattn-ledger-count";
    bar.append(familyLabel, verdictLabel, count);
    const anchor = table.closest(".table-wrapper") || table;
    anchor.parentNode.insertBefore(bar, anchor);

    function apply() {
      let shown = 0;
      rows.forEach(function (row) {
        const ok = (family.value === "all" || row.classList.contains("family-" + family.value)) &&
                   (verdict.value === "all" || row.classList.contains("verdict-" + verdict.value));
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + " of " + rows.length + " claims shown";
    }
    family.addEventListener("change", apply);
    verdict.addEventListener("change", apply);
    apply();
  }

  function start() { document.querySelectorAll("table.geoattn-ledger").forEach(setUp); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
