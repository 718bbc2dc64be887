/* The viewer of `fair-forge view` (fair_forge_core/view/__init__.py says what the site holds).
 * Data arrives as scripts that call FF.put(name, value): a page opened from file:// may load
 * scripts, not fetch files. The index comes with the page; the rest when a view needs it.
 * Every text from the data goes into the page as text (textContent), never as markup. */
"use strict";

const FF = {
  data: {},
  waiting: {},
  put(name, value) {
    this.data[name] = value;
    (this.waiting[name] || []).forEach(([resolve]) => resolve(value));
    delete this.waiting[name];
    if (name === "index") route();
  },
  load(name) {
    if (name in this.data) return Promise.resolve(this.data[name]);
    return new Promise((resolve, reject) => {
      const first = !(name in this.waiting);
      (this.waiting[name] = this.waiting[name] || []).push([resolve, reject]);
      if (!first) return;
      const script = document.createElement("script");
      script.src = `data/${name}.js`;
      script.onerror = () => {
        // every view waiting for it learns it failed; a later visit asks again
        const waiting = this.waiting[name] || [];
        delete this.waiting[name];
        script.remove();
        waiting.forEach(([, failed]) => failed(new Error(`data/${name}.js could not be loaded`)));
      };
      document.body.appendChild(script);
    });
  },
};

/* ------------------------------------------------------------------ small helpers */

function h(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

const number = (value, digits = 3) => (value === null || value === undefined ? "—" : Number(value).toFixed(digits));
const pill = (value, text) => h("span", { class: `pill pill-${value}` }, text || value || "—");
const when = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC") : "—");
const rate = (figure) => (figure && figure[0] ? figure[1] / figure[0] : null);

function decoded(text) {
  try {
    return decodeURIComponent(text);
  } catch (error) {
    throw new Error(`this address is not one of the viewer's (${error.message})`);
  }
}

function params(query) {
  const found = Object.create(null);
  for (const part of (query || "").split("&")) {
    if (!part) continue;
    const [key, value = ""] = part.split("=");
    found[decoded(key)] = decoded(value);
  }
  return found;
}

function setParams(view, values) {
  const query = Object.entries(values)
    .filter(([, value]) => value !== "" && value !== null && value !== undefined)
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
    .join("&");
  history.replaceState(null, "", `#${view}${query ? "?" + query : ""}`);
}

function runText(run) {
  const labels = Object.entries(run.labels).map(([key, value]) => `${key}=${value}`);
  return [run.id, run.source, run.tier, run.status, ...run.assistants, ...labels].join(" ").toLowerCase();
}

/* ------------------------------------------------------------------ the router */

let routed = 0; // the latest route: a slower view that resolves after a newer one is dropped

function route() {
  const index = FF.data.index;
  if (!index) return;
  const number = ++routed;
  const main = document.getElementById("view");
  const focused = document.activeElement && document.activeElement.id;
  const show = (content, title) => {
    if (number !== routed) return;
    main.replaceChildren(content);
    document.title = `${title} · Fair-Forge runs`;
    const again = focused && document.getElementById(focused);
    if (again && again !== document.getElementById("search")) again.focus();
  };
  let shown;
  try {
    const [path, query] = location.hash.replace(/^#/, "").split("?");
    const [view, ...rest] = (path || "runs").split("/").map(decoded);
    for (const link of document.querySelectorAll("nav a[data-view]")) {
      if (link.dataset.view === view) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    const values = params(query);
    const search = document.getElementById("search");
    if (document.activeElement !== search) search.value = values.q || "";
    shown = view === "tasks" ? tasksView(index, values) : view === "diff" ? diffView(index, rest) : runsView(index, values);
  } catch (error) {
    shown = Promise.reject(error);
  }
  Promise.resolve(shown).then(
    ([content, title]) => show(content, title),
    (error) => show(h("p", { role: "alert" }, String(error)), "Error"),
  );
}

/* ------------------------------------------------------------------ runs */

const RUN_COLUMNS = [
  ["id", "Run", (r) => r.id],
  ["started_at", "When", (r) => r.started_at || ""],
  ["assistants", "Assistants", (r) => r.assistants.join(", ")],
  ["status", "Readiness", (r) => r.status || ""],
  ["headline", "pass^k", (r) => r.headline.value ?? -1],
  ["cost_usd", "Cost", (r) => r.cost_usd ?? -1],
];

function runsView(index, query) {
  const search = (query.q || "").toLowerCase();
  const status = query.status || "";
  const assistant = query.assistant || "";
  const [sortKey, sortOrder] = (query.sort || "id:desc").split(":");
  const column = RUN_COLUMNS.find(([key]) => key === sortKey) || RUN_COLUMNS[0];
  const runs = index.runs
    .filter((run) => !search || runText(run).includes(search))
    .filter((run) => !status || run.status === status)
    .filter((run) => !assistant || run.assistants.includes(assistant))
    .sort((a, b) => {
      const [x, y] = [column[2](a), column[2](b)];
      return (x < y ? -1 : x > y ? 1 : 0) * (sortOrder === "asc" ? 1 : -1);
    });
  const update = (change) => {
    setParams("runs", { q: search, status, assistant, sort: `${sortKey}:${sortOrder}`, ...change });
    route();
  };
  const assistants = [...new Set(index.runs.flatMap((run) => run.assistants))].sort();
  const statuses = [...new Set(index.runs.map((run) => run.status).filter(Boolean))].sort();
  const controls = h(
    "div",
    { class: "controls" },
    h("label", {}, "Status", h("select", { id: "filter-status", onchange: (e) => update({ status: e.target.value }) },
      h("option", { value: "" }, "any"), statuses.map((s) => h("option", { value: s, selected: s === status }, s)))),
    h("label", {}, "Assistant", h("select", { id: "filter-assistant", onchange: (e) => update({ assistant: e.target.value }) },
      h("option", { value: "" }, "any"), assistants.map((a) => h("option", { value: a, selected: a === assistant }, a)))),
    h("span", { class: "muted", role: "status" }, `${runs.length} of ${index.runs.length} runs`),
  );
  const header = h("tr", {}, RUN_COLUMNS.map(([key, label]) => {
    const sorted = key === sortKey ? (sortOrder === "asc" ? "ascending" : "descending") : null;
    const order = key === sortKey && sortOrder === "desc" ? "asc" : "desc";
    return h("th", { scope: "col", "aria-sort": sorted }, h("button", { type: "button", onclick: () => update({ sort: `${key}:${order}` }) }, label));
  }), h("th", { scope: "col" }, "Labels"), h("th", { scope: "col" }, "Report"));
  const before = Object.fromEntries(index.runs.map((run, i) => [run.id, i ? index.runs[i - 1].id : null]));
  const rows = runs.map((run) => h("tr", { "data-run": run.id },
    h("td", {}, before[run.id] ? h("a", { href: `#diff/${before[run.id]}/${run.id}`, title: `diff with ${before[run.id]}` }, run.id) : run.id,
      h("span", { class: "reason" }, run.source)),
    h("td", { class: "num" }, when(run.started_at)),
    h("td", {}, run.assistants.join(", ")),
    h("td", {}, pill(run.status, run.tier ? `${run.tier} · ${run.status || ""}` : run.status)),
    h("td", { class: "num" }, number(run.headline.value), run.headline.low === null || run.headline.low === undefined ? "" :
      h("span", { class: "reason" }, `[${number(run.headline.low)}, ${number(run.headline.high)}] ${run.headline.name}`)),
    h("td", { class: "num" }, run.cost_usd === null ? "—" : `$${Number(run.cost_usd).toFixed(4)}`),
    h("td", {}, Object.entries(run.labels).map(([key, value]) => h("span", { class: "label" }, `${key}=${value}`))),
    h("td", {}, run.report ? h("a", { href: `runs/${run.id}/report.html` }, "report") : h("span", { class: "muted" }, "—")),
  ));
  return [h("section", { "aria-labelledby": "runs-title" }, h("h2", { id: "runs-title" }, "Runs"), controls,
    h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "Runs table" }, h("table", { id: "runs-table" }, h("thead", {}, header), h("tbody", {}, rows)))), "Runs"];
}

/* ------------------------------------------------------------------ tasks over time */

async function tasksView(index, query) {
  const matrix = await FF.load("tasks");
  const show = query.show || "all";
  const search = (query.q || "").toLowerCase();
  const last = matrix.runs.length - 1;
  const latest = (t) => {
    for (let r = last; r >= 0; r -= 1) if (matrix.runs[r].figures[t]) return matrix.runs[r].figures[t];
    return null;
  };
  const everChanged = new Set(matrix.runs.flatMap((run) => run.changed));
  const keep = matrix.tasks
    .map((task, t) => [task, t])
    .filter(([task]) => !search || task.toLowerCase().includes(search))
    .filter(([task, t]) => show === "all" || (show === "changed" ? everChanged.has(task) : (latest(t) || [])[2] === show));
  const span = ["20", "50", "all"].includes(query.runs) ? query.runs : "20";
  const shownRuns = span === "all" ? matrix.runs : matrix.runs.slice(-Number(span));
  const update = (change) => { setParams("tasks", { show, q: search, runs: span === "20" ? "" : span, ...change }); route(); };
  const controls = h("div", { class: "controls" },
    h("label", {}, "Show", h("select", { id: "filter-tasks", onchange: (e) => update({ show: e.target.value }) },
      ["all", "failing", "flaky", "stable", "changed"].map((v) => h("option", { value: v, selected: v === show }, v === "all" ? "every task" : `${v} tasks`)))),
    h("label", {}, "Runs", h("select", { id: "filter-runs", onchange: (e) => update({ runs: e.target.value === "20" ? "" : e.target.value }) },
      ["20", "50", "all"].map((v) => h("option", { value: v, selected: v === span }, v === "all" ? "every run" : `the last ${v}`)))),
    h("span", { class: "muted", role: "status" }, `${keep.length} of ${matrix.tasks.length} tasks; ${shownRuns.length} of ${matrix.runs.length} runs; ● changed from the run before`));
  const header = h("tr", {}, h("th", { scope: "col" }, "Task"), shownRuns.map((run) => h("th", { scope: "col" }, run.run)));
  const rows = keep.map(([task, t]) => h("tr", { "data-task": task }, h("th", { scope: "row" }, task), shownRuns.map((run) => {
    const figure = run.figures[t];
    const changed = run.changed.includes(task);
    const label = figure ? figure[2] || "" : "";
    return h("td", { class: `cell${label ? " cell-" + label : ""}${changed ? " changed" : ""}`, title: figure ? `${label || "fewer than 2 scored attempts"}${changed ? ", changed" : ""}` : "no attempt" },
      figure ? `${figure[1]}/${figure[0]}${label ? " " + label : ""}` : "—");
  })));
  return [h("section", { "aria-labelledby": "tasks-title" }, h("h2", { id: "tasks-title" }, "Tasks over time"),
    headlineChart(index), controls,
    h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "Tasks table" }, h("table", { id: "tasks-table" }, h("thead", {}, header), h("tbody", {}, rows)))), "Tasks over time"];
}

function headlineChart(index) {
  const runs = index.runs.filter((run) => run.headline.value !== null && run.headline.value !== undefined);
  const [width, height, pad] = [900, 220, 32];
  const svg = (tag, attributes) => {
    const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
    return element;
  };
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": "chart-title" });
  const title = svg("title", { id: "chart-title" });
  title.textContent = `The headline pass^k of ${runs.length} runs over time, with its interval band`;
  chart.append(title);
  if (!runs.length) return chart;
  const x = (i) => pad + (runs.length === 1 ? (width - 2 * pad) / 2 : (i * (width - 2 * pad)) / (runs.length - 1));
  const y = (v) => height - pad - v * (height - 2 * pad);
  chart.append(svg("line", { class: "axis", x1: pad, y1: y(0), x2: width - pad, y2: y(0) }), svg("line", { class: "axis", x1: pad, y1: y(1), x2: width - pad, y2: y(1) }));
  for (const [v, text] of [[0, "0"], [1, "1"]]) { const label = svg("text", { x: 4, y: y(v) + 4 }); label.textContent = text; chart.append(label); }
  const bounded = runs.map((run, i) => [i, run]).filter(([, run]) => run.headline.low !== null && run.headline.low !== undefined);
  if (bounded.length) {
    const upper = bounded.map(([i, run]) => `${x(i)},${y(run.headline.high)}`);
    const lower = bounded.reverse().map(([i, run]) => `${x(i)},${y(run.headline.low)}`);
    chart.append(svg("polygon", { class: "band", points: [...upper, ...lower].join(" ") }));
  }
  chart.append(svg("polyline", { class: "curve", points: runs.map((run, i) => `${x(i)},${y(run.headline.value)}`).join(" ") }));
  runs.forEach((run, i) => {
    const dot = svg("circle", { class: "dot", cx: x(i), cy: y(run.headline.value), r: 3 });
    const tip = svg("title", {});
    tip.textContent = `${run.id}: ${number(run.headline.value)}`;
    dot.append(tip);
    chart.append(dot);
  });
  const every = Math.max(1, Math.ceil(runs.length / 12)); // at most 12 run names under the axis
  runs.forEach((run, i) => {
    if (i % every && i !== runs.length - 1) return;
    const label = svg("text", { x: x(i), y: height - 10, "text-anchor": "middle" });
    label.textContent = run.id;
    chart.append(label);
  });
  return chart;
}

/* ------------------------------------------------------------------ diff of two runs */

async function diffView(index, [first, second, task]) {
  const ids = index.runs.map((run) => run.id); // oldest first
  if (ids.length < 2) throw new Error("a diff needs two runs: this site has one");
  const [a, b] = first && second ? [first, second] : [ids[ids.length - 2], ids[ids.length - 1]];
  const known = (id) => ids.includes(id);
  if (!known(a) || !known(b)) throw new Error(`no run ${known(a) ? b : a} in this site`);
  if (a === b) throw new Error(`a diff of ${a} with itself: choose two runs`);
  const pick = (id, which) => h("label", {}, which, h("select", { id: `diff-${which}`, onchange: (e) => {
    location.hash = which === "baseline" ? `#diff/${e.target.value}/${b}` : `#diff/${a}/${e.target.value}`;
  } }, ids.map((other) => h("option", { value: other, selected: other === id }, other))));
  const matrix = await FF.load("tasks");
  const [ia, ib] = [a, b].map((id) => matrix.runs.findIndex((run) => run.run === id));
  const pair = index.pairs.find(([x, y, compared]) => x === a && y === b && compared);
  const comparison = pair ? await FF.load(`diff/${a}-${b}`) : null;
  const changed = comparison
    ? comparison.changed_tasks.map((t) => [t.task, `${t.baseline_successes}/${t.baseline_attempts} → ${t.candidate_successes}/${t.candidate_attempts}`])
    : matrix.tasks.map((name, t) => [name, matrix.runs[ia].figures[t], matrix.runs[ib].figures[t]])
        .filter(([, x, y]) => x && y && (x[2] !== y[2] || rate(x) !== rate(y)))
        .map(([name, x, y]) => [name, `${x[1]}/${x[0]} → ${y[1]}/${y[0]}`]);
  const verdict = comparison
    ? h("div", { class: "verdict", id: "verdict" }, h("strong", {}, `Verdict: ${comparison.verdict}`), " — ", comparison.explanation)
    : h("div", { class: "verdict", id: "verdict" },
        `No comparison of these two runs in this site (it compares each run with the one before it, and any two of the last ${index.paired_runs}, when they have one and the same assistant): the tasks whose pass rate or label changed. `,
        `For the test, run fair-forge compare ${index.runs.find((r) => r.id === a).source} ${index.runs.find((r) => r.id === b).source}.`);
  const list = h("ul", { id: "changed-tasks" }, changed.map(([name, text]) => h("li", { "data-task": name },
    h("a", { href: `#diff/${a}/${b}/${encodeURIComponent(name)}` }, name), " ", h("span", { class: "muted" }, text))));
  const parts = [h("h2", { id: "diff-title" }, `Diff ${a} → ${b}`), h("div", { class: "controls" }, pick(a, "baseline"), pick(b, "candidate")), verdict,
    h("h3", {}, `${changed.length} task(s) changed`), list];
  if (task) parts.push(await sideBySide(index, a, b, task));
  return [h("section", { "aria-labelledby": "diff-title" }, parts), `Diff ${a} → ${b}`];
}

async function sideBySide(index, a, b, task) {
  const [left, right] = await Promise.all([FF.load(`runs/${a}`), FF.load(`runs/${b}`)]);
  const reported = (id) => index.runs.some((run) => run.id === id && run.report);
  const attempts = (run) => (Object.hasOwn(run.tasks, task) ? run.tasks[task] : []);
  if (!attempts(left).length && !attempts(right).length) throw new Error(`no task ${task} in ${a} or ${b}`);
  const side = (run) => h("div", { class: "side", "data-side": run.id }, h("h4", {}, run.id),
    h("ul", {}, attempts(run).map((attempt) => h("li", { "data-outcome": attempt.outcome },
      pill(attempt.outcome), " ", reported(run.id) ? h("a", { href: `runs/${run.id}/report.html#conversation-${attempt.index}` }, attempt.session) : attempt.session,
      attempt.reason ? h("span", { class: "reason" }, attempt.reason) : null))));
  return h("section", { id: "side-by-side", "aria-label": `${task} in ${a} and ${b}` }, h("h3", {}, task), h("div", { class: "sides" }, side(left), side(right)));
}

/* ------------------------------------------------------------------ keys and start */

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement && document.activeElement.tagName);
  if (event.key === "/" && !typing) { event.preventDefault(); document.getElementById("search").focus(); return; }
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const views = { 1: "#runs", 2: "#tasks", 3: "#diff" };
  if (views[event.key]) location.hash = views[event.key];
});
window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("search").addEventListener("input", (event) => {
    // the search is the address's `q`: a searched view keeps its permalink
    const [path, query] = location.hash.replace(/^#/, "").split("?");
    const view = (path || "runs").split("/")[0];
    const values = { ...params(query), q: event.target.value };
    setParams(view === "diff" ? "runs" : view, values);
    route();
  });
});
