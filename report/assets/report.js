// strata's HTML report: draws the prefix tree from the embedded data and answers clicks
// and keys. No libraries, nothing loaded: the page must open offline from an e-mail.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const S = data.strings;
  const views = new Map(data.views);
  const NS = "http://www.w3.org/2000/svg";
  const BOX_H = 24, LEVEL = 62, GAP = 14, CHAR = 7.3, MAX_TEXT = 56, MAX_LABEL = 44;
  const CHILD_LIMIT = 40, FIRST_BUDGET = 200, EXPAND_BUDGET = 3000;
  const state = { kind: "3d", gran: "function", per: new Map(), rank: null };
  const graph = document.getElementById("graph");
  const details = document.getElementById("details");

  // ----- rank sets ("0,2-255") -----
  function parseRanks(s) {
    const out = [];
    if (!s) return out;
    for (const part of s.split(",")) {
      const dash = part.indexOf("-");
      if (dash < 0) { const r = +part; out.push(r, r); } else { out.push(+part.slice(0, dash), +part.slice(dash + 1)); }
    }
    return out;
  }
  function contains(pairs, r) {
    let lo = 0, hi = pairs.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (r < pairs[2 * mid]) hi = mid - 1; else if (r > pairs[2 * mid + 1]) lo = mid + 1; else return true;
    }
    return false;
  }
  function setOf(v, i) {
    if (!v.sets) v.sets = new Array(v.parent.length);
    return v.sets[i] || (v.sets[i] = parseRanks(v.ranks[i]));
  }

  // ----- views -----
  function prepare(v) {
    if (v.children) return v;
    const n = v.parent.length;
    v.children = Array.from({ length: n }, () => []);
    for (let i = 1; i < n; i++) v.children[v.parent[i]].push(i);
    return v;
  }
  function key() { return state.kind + "-" + state.gran; }
  function viewState(k) {
    let st = state.per.get(k);
    if (!st) {
      const v = prepare(views.get(k));
      st = { collapsed: new Set(), more: new Map(), selected: -1, t: null };
      expandBudget(v, st, FIRST_BUDGET);
      state.per.set(k, st);
    }
    return st;
  }
  // Collapses everything, then opens breadth first while fewer than `budget` nodes show.
  function expandBudget(v, st, budget) {
    st.collapsed.clear();
    for (let i = 1; i < v.children.length; i++) if (v.children[i].length) st.collapsed.add(i);
    let shown = 1 + Math.min(v.children[0].length, CHILD_LIMIT);
    const queue = v.children[0].slice(0, CHILD_LIMIT);
    for (let q = 0; q < queue.length; q++) {
      const i = queue[q], kids = v.children[i];
      if (!kids.length) continue;
      const add = Math.min(kids.length, CHILD_LIMIT);
      if (shown + add > budget) continue;
      st.collapsed.delete(i);
      shown += add;
      for (const c of kids.slice(0, CHILD_LIMIT)) queue.push(c);
    }
  }
  function nodeText(v, i) {
    let t = S[v.text[i]];
    if (v.label[i]) t += "@[" + v.label[i] + "]";
    return t;
  }
  function short(t, max) { return t.length > max ? t.slice(0, max - 1) + "…" : t; }
  function edgeLabel(v, i) {
    let l = v.count[i] + ":[" + v.ranks[i] + "]";
    if (v.threads) l += " (" + v.threads[i] + " thr)";
    return l;
  }

  // ----- layout: each subtree as wide as its widest level of children -----
  function layout(v, st) {
    const items = [];
    function visit(i, depth, parentItem) {
      const cls = v.class[i] >= 0 ? "C" + (v.class[i] + 1) + " " : "";
      const kids = st.collapsed.has(i) ? [] : v.children[i];
      const limit = st.more.get(i) || CHILD_LIMIT;
      const text = i === 0 ? "(all tasks)" : cls + short(nodeText(v, i), MAX_TEXT) + (st.collapsed.has(i) ? "  ▸" + v.children[i].length : "");
      const item = { i, depth, text, w: text.length * CHAR + 20, kids: [], parent: parentItem };
      items.push(item);
      for (const c of kids.slice(0, limit)) item.kids.push(visit(c, depth + 1, item));
      if (kids.length > limit) {
        const t = "+" + (kids.length - limit) + " more branches";
        const w = t.length * CHAR + 20;
        const more = { i: -1, of: i, depth: depth + 1, text: t, w, sw: w, kids: [], parent: item };
        items.push(more);
        item.kids.push(more);
      }
      let sum = 0;
      for (const k of item.kids) sum += k.sw;
      sum += GAP * Math.max(0, item.kids.length - 1);
      item.sw = Math.max(item.w, sum);
      return item;
    }
    const root = visit(0, 0, null);
    (function place(item, left) {
      item.x = left + item.sw / 2;
      item.y = item.depth * (BOX_H + LEVEL);
      let sum = GAP * Math.max(0, item.kids.length - 1);
      for (const k of item.kids) sum += k.sw;
      let x = left + (item.sw - sum) / 2;
      for (const k of item.kids) { place(k, x); x += k.sw + GAP; }
    })(root, 0);
    let depth = 0;
    for (const it of items) depth = Math.max(depth, it.depth);
    return { items, width: root.sw, height: (depth + 1) * (BOX_H + LEVEL) };
  }

  // ----- drawing -----
  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const a in attrs) e.setAttribute(a, attrs[a]);
    if (parent) parent.appendChild(e);
    return e;
  }
  let current = null;
  function render(focus) {
    const k = key(), v = prepare(views.get(k)), st = viewState(k);
    const lay = layout(v, st);
    graph.textContent = "";
    const svg = el("svg", { role: "tree", "aria-label": "prefix tree, " + k }, graph);
    const g = el("g", { class: "viewport" }, svg);
    const edges = el("g", {}, g), nodes = el("g", {}, g);
    const byNode = new Map();
    for (const it of lay.items) {
      if (it.parent) {
        const x1 = it.parent.x, y1 = it.parent.y + BOX_H, x2 = it.x, y2 = it.y, my = (y1 + y2) / 2;
        el("path", { class: "edge", d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}` }, edges);
        if (it.i > 0) {
          const t = el("text", { class: "elabel", x: x2, y: y2 - 8 }, edges);
          t.textContent = short(edgeLabel(v, it.i), MAX_LABEL);
        }
      }
      const node = el("g", { class: "node", transform: `translate(${it.x - it.w / 2},${it.y})`, tabindex: it.i === 0 ? "-1" : "0" }, nodes);
      if (it.i < 0) {
        node.setAttribute("class", "node more");
        node.setAttribute("role", "button");
        node.dataset.more = it.of;
      } else {
        let c = "node kind-" + v.kind[it.i];
        if (v.class[it.i] >= 0) c += " c" + (v.class[it.i] % 12);
        if (st.collapsed.has(it.i)) c += " collapsed";
        if (st.selected === it.i) c += " selected";
        node.setAttribute("class", c);
        node.setAttribute("role", "treeitem");
        node.setAttribute("aria-level", it.depth);
        node.setAttribute("aria-label", nodeText(v, it.i) + ", " + edgeLabel(v, it.i));
        if (v.children[it.i].length) node.setAttribute("aria-expanded", st.collapsed.has(it.i) ? "false" : "true");
        node.dataset.i = it.i;
        byNode.set(it.i, it);
      }
      el("rect", { width: it.w, height: BOX_H, rx: 4 }, node);
      const t = el("text", { x: 10, y: BOX_H / 2 + 1 }, node);
      t.textContent = it.text;
      const title = el("title", {}, node);
      title.textContent = it.i >= 0 ? S[v.detail[it.i]] || nodeText(v, it.i) : it.text;
      if (it.i > 0 && v.children[it.i].length) {
        const knob = el("g", { class: "knob", transform: `translate(${it.w / 2},${BOX_H + 8})` }, node);
        knob.dataset.toggle = it.i;
        el("circle", { r: 7 }, knob);
        el("text", {}, knob).textContent = st.collapsed.has(it.i) ? "+" : "−";
      }
    }
    current = { k, v, st, lay, svg, g, byNode };
    if (!st.t) firstView(); else apply();
    if (focus !== undefined && focus >= 0) {
      const e = graph.querySelector(`g.node[data-i="${focus}"]`);
      if (e) { ensureVisible(focus); e.focus({ preventScroll: true }); }
    }
  }

  // ----- zoom and pan -----
  function apply() { const t = current.st.t; current.g.setAttribute("transform", `translate(${t.x},${t.y}) scale(${t.k})`); }
  function fit() {
    const W = graph.clientWidth || 800, H = graph.clientHeight || 500, lay = current.lay;
    const k = Math.min(1, (W - 20) / (lay.width + 20), (H - 20) / (lay.height + 20));
    current.st.t = { k, x: (W - lay.width * k) / 2, y: 16 };
    apply();
  }
  // A tree too wide to fit readably opens at a readable scale with its root centred
  // (drag or "fit" for the rest): a fitted million-rank tree would be a line of dots.
  const MIN_FIRST_SCALE = 0.6;
  function firstView() {
    const W = graph.clientWidth || 800, H = graph.clientHeight || 500, lay = current.lay;
    const fitted = Math.min(1, (W - 20) / (lay.width + 20), (H - 20) / (lay.height + 20));
    if (fitted >= MIN_FIRST_SCALE) { fit(); return; }
    const root = lay.items[0], k = MIN_FIRST_SCALE;
    current.st.t = { k, x: W / 2 - root.x * k, y: 16 };
    apply();
  }
  function zoom(f, cx, cy) {
    const t = current.st.t, W = graph.clientWidth, H = graph.clientHeight;
    if (cx === undefined) { cx = W / 2; cy = H / 2; }
    const k = Math.max(0.05, Math.min(4, t.k * f));
    t.x = cx - (cx - t.x) * (k / t.k); t.y = cy - (cy - t.y) * (k / t.k); t.k = k;
    apply();
  }
  function ensureVisible(i) {
    const it = current.byNode.get(i), t = current.st.t;
    if (!it) return;
    const W = graph.clientWidth, H = graph.clientHeight;
    const x = t.x + it.x * t.k, y = t.y + it.y * t.k;
    if (x < 40 || x > W - 40) t.x += W / 2 - x;
    if (y < 20 || y > H - 60) t.y += H / 2 - y;
    apply();
  }
  graph.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = graph.getBoundingClientRect();
    zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  let drag = null;
  graph.addEventListener("pointerdown", (e) => {
    if (e.target.closest("g.node")) return;
    drag = { x: e.clientX, y: e.clientY };
    current.svg.classList.add("panning");
  });
  window.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const t = current.st.t;
    t.x += e.clientX - drag.x; t.y += e.clientY - drag.y;
    drag = { x: e.clientX, y: e.clientY };
    apply();
  });
  window.addEventListener("pointerup", () => { drag = null; if (current) current.svg.classList.remove("panning"); });

  // ----- interaction -----
  function toggle(i) {
    const st = current.st;
    if (!current.v.children[i].length) return;
    if (st.collapsed.has(i)) st.collapsed.delete(i); else st.collapsed.add(i);
    render(i);
  }
  function select(i, focus) {
    current.st.selected = i;
    for (const e of graph.querySelectorAll("g.node.selected")) e.classList.remove("selected");
    const e = graph.querySelector(`g.node[data-i="${i}"]`);
    if (e) { e.classList.add("selected"); if (focus) { ensureVisible(i); e.focus({ preventScroll: true }); } }
    showDetails(current.v, i);
  }
  graph.addEventListener("click", (e) => {
    const knob = e.target.closest("g.knob");
    if (knob) { toggle(+knob.dataset.toggle); return; }
    const node = e.target.closest("g.node");
    if (!node) return;
    if (node.dataset.more !== undefined) { more(+node.dataset.more); return; }
    select(+node.dataset.i, true);
  });
  graph.addEventListener("dblclick", (e) => {
    const node = e.target.closest("g.node[data-i]");
    if (node && !e.target.closest("g.knob")) toggle(+node.dataset.i);
  });
  function more(i) {
    const st = current.st;
    st.more.set(i, (st.more.get(i) || CHILD_LIMIT) + CHILD_LIMIT);
    render(i);
  }
  graph.addEventListener("focusin", (e) => {
    const node = e.target.closest("g.node[data-i]");
    if (node && +node.dataset.i !== current.st.selected) select(+node.dataset.i, false);
  });
  graph.addEventListener("keydown", (e) => {
    const node = e.target.closest("g.node");
    if (e.key === "+" || e.key === "=") { zoom(1.25); e.preventDefault(); return; }
    if (e.key === "-") { zoom(0.8); e.preventDefault(); return; }
    if (e.key === "0") { fit(); e.preventDefault(); return; }
    if (!node) return;
    if (node.dataset.more !== undefined) {
      if (e.key === "Enter" || e.key === " ") { more(+node.dataset.more); e.preventDefault(); }
      return;
    }
    const i = +node.dataset.i, v = current.v, st = current.st;
    const visibleKids = st.collapsed.has(i) ? [] : v.children[i].slice(0, st.more.get(i) || CHILD_LIMIT);
    const p = v.parent[i], sibs = p >= 0 ? v.children[p].slice(0, st.more.get(p) || CHILD_LIMIT) : [i];
    const at = sibs.indexOf(i);
    let to = -1;
    switch (e.key) {
      case "Enter": case " ": toggle(i); e.preventDefault(); return;
      case "ArrowUp": to = p > 0 ? p : -1; break;
      case "ArrowDown": to = visibleKids.length ? visibleKids[0] : -1; break;
      case "ArrowLeft": to = at > 0 ? sibs[at - 1] : -1; break;
      case "ArrowRight": to = at + 1 < sibs.length ? sibs[at + 1] : -1; break;
      default: return;
    }
    e.preventDefault();
    if (to > 0) select(to, true);
  });
  function button(id, f) { document.getElementById(id).addEventListener("click", f); }
  button("zoom-in", () => zoom(1.25));
  button("zoom-out", () => zoom(0.8));
  button("zoom-fit", () => fit());
  button("expand-all", () => { const st = current.st; expandBudget(current.v, st, EXPAND_BUDGET); st.t = null; render(); });
  button("collapse-all", () => {
    const st = current.st, v = current.v;
    for (let i = 1; i < v.children.length; i++) if (v.children[i].length) st.collapsed.add(i);
    st.t = null;
    render();
  });
  for (const input of document.querySelectorAll("input[name=kind], input[name=granularity]")) {
    input.addEventListener("change", () => {
      if (input.name === "kind") state.kind = input.value; else state.gran = input.value;
      const k = key();
      document.getElementById("job-line").textContent = views.get(k).header;
      for (const t of document.querySelectorAll(".class-table")) t.hidden = t.dataset.view !== k;
      render();
      const st = current.st;
      if (st.selected > 0) showDetails(current.v, st.selected);
      else details.innerHTML = "<p>Select a node: click it, or Tab to the tree and move with the arrow keys.</p>";
      if (state.rank !== null) showRank(state.rank, false);
    });
  }

  // ----- the details pane and a rank's stack -----
  function h(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function snippetEl(id) {
    const s = data.snippets.list[id];
    const pre = h("pre", undefined, "snippet");
    pre.setAttribute("aria-label", s.file + " around line " + s.line);
    s.lines.forEach((line, j) => {
      const n = s.first + j;
      // The newline stays outside the span: inside the highlighted inline-block it would
      // take the next line's place.
      pre.appendChild(h("span", String(n).padStart(5) + "  " + line, n === s.line ? "hit" : undefined));
      pre.appendChild(document.createTextNode("\n"));
    });
    return pre;
  }
  function rankLink(r) {
    const a = h("a", String(r), "rank");
    a.href = "#rank"; a.dataset.rank = r;
    return a;
  }
  function showDetails(v, i) {
    details.textContent = "";
    details.appendChild(h("h3", nodeText(v, i)));
    for (const line of (S[v.detail[i]] || "").split("\n").slice(1)) details.appendChild(h("p", line, "mono"));
    const cls = v.class[i] >= 0 ? "class C" + (v.class[i] + 1) : "ranks of several classes";
    details.appendChild(h("p", v.count[i] + " task" + (v.count[i] === 1 ? "" : "s") + " took this edge (" + cls + ")" + (v.threads ? ", " + v.threads[i] + " threads" : "")));
    details.appendChild(h("div", "[" + v.ranks[i] + "]", "ranks"));
    if (v.label[i]) details.appendChild(h("p", "Progress: T" + v.label[i].replace(/^T/, "")));
    const first = setOf(v, i)[0];
    if (first !== undefined) {
      const p = h("p", "Stack of rank ");
      p.appendChild(rankLink(first));
      details.appendChild(p);
    }
    if (v.snippet[i] >= 0) details.appendChild(snippetEl(v.snippet[i]));
    else if (state.gran === "line" && v.kind[i] !== "s" && /:\d+$/.test((S[v.detail[i]] || "").split("\n")[1] || ""))
      details.appendChild(h("p", "Source not found" + (data.snippets.list.length ? "." : " (or left out)."), "note"));
  }
  function pathsOf(v, r) {
    const paths = [];
    (function walk(i, path) {
      const next = v.children[i].filter((c) => contains(setOf(v, c), r));
      if (!next.length) { if (path.length) paths.push(path); return; }
      for (const c of next) walk(c, path.concat([c]));
    })(0, []);
    return paths;
  }
  function showRank(r, scroll) {
    const out = document.getElementById("stack");
    out.textContent = "";
    state.rank = r;
    if (!(r >= 0 && r < data.job_size)) { out.appendChild(h("p", "There is no rank " + r + ": the job has ranks 0 to " + (data.job_size - 1) + ".")); return; }
    const v = prepare(views.get(state.kind + "-line"));
    const head = h("h3", "Rank " + r);
    head.tabIndex = -1;
    out.appendChild(head);
    const row = data.ranks && data.ranks.find((x) => x.rank === r);
    if (row) {
      const parts = [];
      if (row.host) parts.push("host " + row.host);
      if (row.pid) parts.push("pid " + row.pid);
      if (row.state) parts.push("state " + row.state);
      if (row.executable) parts.push(row.executable);
      if (parts.length) out.appendChild(h("p", parts.join(" · ")));
      if (row.error) out.appendChild(h("p", "Not fully sampled: " + row.error, "missing"));
    }
    for (const [ranks, line] of data.seen) if (contains(parseRanks(ranks), r)) out.appendChild(h("p", "Seen: " + line));
    const paths = pathsOf(v, r);
    if (!paths.length) out.appendChild(h("p", "Rank " + r + " is in no stack of this tree: it was not sampled."));
    paths.forEach((path, n) => {
      if (paths.length > 1) out.appendChild(h("h4", "Path " + (n + 1) + " of " + paths.length + " (the 3D tree keeps every sample's)"));
      const ol = h("ol", undefined, "frames");
      let lastSnippet = -1;
      path.forEach((i, j) => { if (v.snippet[i] >= 0) lastSnippet = j; });
      path.forEach((i, j) => {
        const li = h("li", S[v.text[i]]);
        const where = (S[v.detail[i]] || "").split("\n").slice(1).join(" · ");
        if (where) { li.appendChild(document.createElement("br")); li.appendChild(h("span", where, "where")); }
        if (v.snippet[i] >= 0) {
          const d = h("details");
          d.open = j === lastSnippet;
          d.appendChild(h("summary", "source"));
          d.appendChild(snippetEl(v.snippet[i]));
          li.appendChild(d);
        }
        ol.appendChild(li);
      });
      out.appendChild(ol);
    });
    if (scroll !== false) { document.getElementById("rank").scrollIntoView(); head.focus({ preventScroll: true }); }
  }
  document.addEventListener("click", (e) => {
    const a = e.target.closest("a.rank");
    if (!a) return;
    e.preventDefault();
    document.getElementById("rank-input").value = a.dataset.rank;
    showRank(+a.dataset.rank);
  });
  document.getElementById("rank-form").addEventListener("submit", (e) => {
    e.preventDefault();
    showRank(+document.getElementById("rank-input").value);
  });

  render();
  performance.mark("strata-tree-drawn");
})();
