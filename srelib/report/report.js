// The report's episode browser: an index with filters, and a viewer that opens an episode's
// compressed chunk on demand and shows one record at a time, in the trajectory viewer's panes.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("srl-data").textContent);
  const PANES = ["timeline", "counter", "incident", "board", "rewards", "status", "action",
                 "belief", "score"];
  const COLUMNS = ["policy", "task", "pool", "mode", "seed", "final", "resolved", "replay",
                   "records"];
  const PAGE = 200;  // rows of the index shown at a time
  const chunks = new Map();
  const $ = (id) => document.getElementById(id);
  const esc = (v) => String(v === null || v === undefined ? "" : v).replace(/[&<>"']/g,
    (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  let shown = [], page = 0, current = null;

  // a fragment is a string, or an edit of an earlier one: [index, prefix, suffix, middle]
  function fragment(data, ref) {
    let item = data.f[ref];
    if (typeof item !== "string") {
      const old = fragment(data, item[0]);
      item = data.f[ref] = old.slice(0, item[1]) + item[3] + old.slice(old.length - item[2]);
    }
    return item;
  }

  async function chunk(i) {
    if (!chunks.has(i)) {
      const bytes = Uint8Array.from(atob(DATA.chunks[i]), (c) => c.charCodeAt(0));
      if (typeof DecompressionStream === "undefined") {
        throw new Error("this browser cannot unpack the episodes (no DecompressionStream)");
      }
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      chunks.set(i, JSON.parse(await new Response(stream).text()));
    }
    return chunks.get(i);
  }

  function filters() {
    const box = $("srl-filters");
    const options = (col) => [...new Set(DATA.episodes.map((e) => e[col]))].sort();
    box.innerHTML = ["policy", "task", "pool"].map((name) => {
      const col = COLUMNS.indexOf(name);
      return `<label>${name}<select id="srl-f-${name}"><option value="">all</option>` +
        options(col).map((v) => `<option>${esc(v)}</option>`).join("") + "</select></label>";
    }).join("") + '<label>seed<input id="srl-f-seed" size="5"></label>' +
      '<span id="srl-count" class="srl-meta"></span>';
    box.addEventListener("input", () => { page = 0; list(); });
  }

  function list() {
    const want = ["policy", "task", "pool"].map((n) => $("srl-f-" + n).value);
    const seed = $("srl-f-seed").value.trim();
    shown = DATA.episodes.map((e, i) => i).filter((i) => {
      const e = DATA.episodes[i];
      return want.every((v, c) => !v || String(e[c]) === v) && (!seed || String(e[4]) === seed);
    });
    const rows = shown.slice(page * PAGE, (page + 1) * PAGE).map((i) => {
      const e = DATA.episodes[i];
      const replay = e[7] === null ? "not replayed" :
        e[7] ? '<span class="srl-good">verified</span>' : '<span class="srl-bad">differs</span>';
      const final = typeof e[5] === "number" ? e[5].toFixed(3) : "";
      const cells = [e[0], e[1], e[2], e[3], e[4], final, e[6] ? "yes" : "no"].map(
        (v) => `<td>${esc(v)}</td>`).join("");
      return `<tr class="srl-row${i === current ? " srl-open" : ""}" data-i="${i}">${cells}` +
        `<td>${replay}</td><td>${e[8]}</td></tr>`;
    }).join("");
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    $("srl-count").textContent = `${shown.length} of ${DATA.episodes.length} episodes`;
    $("srl-list").innerHTML = `<table><tr>${COLUMNS.map((c) => `<th>${c}</th>`).join("")}</tr>` +
      rows + "</table>" + (pages > 1 ? `<div class="srl-controls"><button id="srl-prev-page">` +
      `previous page</button><span>page ${page + 1} of ${pages}</span>` +
      `<button id="srl-next-page">next page</button></div>` : "");
    if (pages > 1) {
      $("srl-prev-page").onclick = () => { page = Math.max(0, page - 1); list(); };
      $("srl-next-page").onclick = () => { page = Math.min(pages - 1, page + 1); list(); };
    }
  }

  async function open(i, step) {
    const viewer = $("srl-viewer");
    let data;
    try {
      data = await chunk(DATA.episodes[i][9]);
    } catch (err) {
      viewer.innerHTML = `<div class="srl-error">${esc(err.message)}</div>`;
      return;
    }
    const episode = data.e[DATA.episodes[i][10]];
    current = i;
    list();
    const last = episode.s.length - 1;
    viewer.innerHTML = `<div class="srl" id="srl-header">${fragment(data, episode.h)}</div>` +
      '<div class="srl-controls"><button id="srl-back">\u25c0 previous</button>' +
      `<input type="range" id="srl-step" min="0" max="${last}" value="0">` +
      '<button id="srl-next">next \u25b6</button><span id="srl-pos"></span></div>' +
      PANES.filter((p) => ["timeline", "counter"].includes(p)).map(
        (p) => `<div id="srl-p-${p}"></div>`).join("") +
      '<div class="srl-cols"><div class="srl-col-a">' +
      ["incident", "board", "rewards", "status"].map((p) => `<div id="srl-p-${p}"></div>`).join("") +
      '</div><div class="srl-col-b">' +
      ["belief", "score"].map((p) => `<div id="srl-p-${p}"></div>`).join("") +
      '</div></div><div id="srl-p-action"></div>';
    const show = (k) => {
      k = Math.max(0, Math.min(last, k));
      $("srl-step").value = k;
      $("srl-pos").textContent = `record ${k + 1} of ${last + 1}`;
      episode.s[k].forEach((ref, p) => {
        const html = fragment(data, ref);
        $("srl-p-" + PANES[p]).innerHTML = html ? `<div class="srl">${html}</div>` : "";
      });
      history.replaceState(null, "", `#e=${i}&r=${k}`);
    };
    $("srl-back").onclick = () => show(Number($("srl-step").value) - 1);
    $("srl-next").onclick = () => show(Number($("srl-step").value) + 1);
    $("srl-step").oninput = () => show(Number($("srl-step").value));
    show(step || 0);
    viewer.scrollIntoView();
  }

  filters();
  list();
  $("srl-list").addEventListener("click", (ev) => {
    const row = ev.target.closest("tr.srl-row");
    if (row) open(Number(row.dataset.i), 0);
  });
  const hash = /^#e=(\d+)(?:&r=(\d+))?$/.exec(location.hash);
  if (hash && Number(hash[1]) < DATA.episodes.length) open(Number(hash[1]), Number(hash[2] || 0));
})();
