// Live job rows: each `job` event of the daemon's stream fetches that job's row again (the server renders it).
(function () {
  "use strict";
  var table = document.querySelector("table[data-events]");
  if (!table || !window.EventSource) { return; }
  var rows = document.getElementById("job-rows");
  var live = document.getElementById("live");
  // One fetch per job at a time; an event that arrives while it is under way asks for one more fetch after it, so
  // the row always ends on the job's latest state (the last event is never lost to a fetch that read older state).
  var pending = {};
  function refresh(id) {
    if (pending[id]) { pending[id] = "again"; return; }
    pending[id] = true;
    setTimeout(function () {
      fetch("/jobs/" + encodeURIComponent(id) + "/row", { headers: { "HX-Request": "true" } })
        .then(function (answer) { return answer.ok ? answer.text() : ""; })
        .then(function (html) {
          if (!html) { return; }
          var holder = document.createElement("tbody");
          holder.innerHTML = html.trim();
          var row = holder.firstElementChild;
          var old = document.getElementById("job-" + id);
          var kind = table.getAttribute("data-kind"), state = table.getAttribute("data-status");
          if (old) { old.replaceWith(row); } else if (table.getAttribute("data-new") === "yes" &&
              (!kind || row.getAttribute("data-kind") === kind) && (!state || row.classList.contains("status-" + state))) {
            // A row not shown yet goes on top of the newest page only, and only when the page's filters hold it (a
            // job that reaches the filtered status later is added then, by the event that moved it there).
            rows.prepend(row);
            var empty = rows.querySelector("tr.empty");
            if (empty) { empty.remove(); }
          }
          if (window.htmx) { window.htmx.process(row); }
        })
        .catch(function () { if (source.readyState === EventSource.OPEN) { pending[id] = "again"; } })
        .then(function () {
          var again = pending[id] === "again";
          pending[id] = false;
          if (again) { refresh(id); }
        });
    }, 150);
  }
  var source = new EventSource(table.getAttribute("data-events"));
  source.addEventListener("job", function (event) {
    refresh(JSON.parse(event.data).id);
    document.dispatchEvent(new CustomEvent("memcastle:job-moved"));
  });
  source.addEventListener("reset", function () { window.location.reload(); });
  source.onerror = function () { live.textContent = "Live updates paused; reconnecting…"; };
  source.onopen = function () { live.textContent = "Live: following the daemon's event stream."; };
}());

// The search form follows the address: after Back or Forward restores a page of results, its fields are set from
// that page's URL (the URL is what the results were asked with; the box must not keep a later query).
(function () {
  "use strict";
  if (!document.querySelector("form.search")) { return; }
  function fill() {
    // Looked up each time: restoring a page from htmx's history replaces the body, and the form with it.
    var form = document.querySelector("form.search");
    if (!form) { return; }
    var params = new URLSearchParams(window.location.search);
    if (!params.has("query") && params.has("q")) { params.set("query", params.get("q")); }
    form.querySelectorAll("[name]").forEach(function (field) {
      var given = params.get(field.name);
      if (field.type === "checkbox") {
        field.checked = given === field.value;
      } else if (field.type === "radio") {
        field.checked = field.value === (given === null ? field.getAttribute("data-default") || "current" : given);
      } else if (field.tagName === "SELECT") {
        field.value = given === null ? (field.getAttribute("data-default") || field.options[0].value) : given;
      } else {
        field.value = given === null ? "" : given;
      }
    });
  }
  document.body.addEventListener("htmx:historyRestore", fill);
  window.addEventListener("pageshow", function (event) { if (event.persisted) { fill(); } });
}());

// On the jobs page, what a queued job waits behind changes as other jobs move, and a running job's age grows: the
// queued rows are fetched again (at most every 2 s) whenever any job moves, and ages tick every second.
(function () {
  "use strict";
  if (!document.querySelector("table[data-events]")) { return; }
  var timer = null;
  function refreshQueued() {
    if (timer) { return; }
    timer = setTimeout(function () {
      timer = null;
      document.querySelectorAll("#job-rows tr.status-queued").forEach(function (row) {
        var id = row.id.replace(/^job-/, "");
        fetch("/jobs/" + encodeURIComponent(id) + "/row", { headers: { "HX-Request": "true" } })
          .then(function (answer) { return answer.ok ? answer.text() : ""; })
          .then(function (html) {
            var current = document.getElementById("job-" + id);
            if (!html || !current || !current.classList.contains("status-queued")) { return; }
            var holder = document.createElement("tbody");
            holder.innerHTML = html.trim();
            current.replaceWith(holder.firstElementChild);
          })
          .catch(function () {});
      });
    }, 2000);
  }
  document.addEventListener("memcastle:job-moved", refreshQueued);
  setInterval(function () {
    document.querySelectorAll(".running-for[data-since]").forEach(function (cell) {
      var seconds = Math.max(0, (Date.now() - Date.parse(cell.getAttribute("data-since"))) / 1000);
      cell.textContent = "running for " + (seconds < 60 ? Math.round(seconds) + " s"
        : Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s");
    });
  }, 1000);
}());

// The overview's recent activity, newest first: one line per job, kept up to date as it moves (a mine reports
// progress several times a second: that is one line, not a line per report); a line for each note, checkpoint or
// diary entry filed outside a job; a line for each forget.
(function () {
  "use strict";
  var list = document.getElementById("activity-list");
  if (!list || !window.EventSource) { return; }
  var live = document.getElementById("live");
  function add(key, words) {
    var empty = list.querySelector("li.empty");
    if (empty) { empty.remove(); }
    var line = document.createElement("li");
    if (key) { line.setAttribute("data-key", key); }
    var when = document.createElement("time");
    when.textContent = new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC";
    line.appendChild(when);
    line.appendChild(document.createTextNode(" · " + words));
    list.prepend(line);
    while (list.children.length > 50) { list.removeChild(list.lastElementChild); }
    return line;
  }
  var source = new EventSource(list.getAttribute("data-events"));
  source.addEventListener("job", function (event) {
    var job = JSON.parse(event.data);
    var progress = job.progress || {};
    var state = (job.status || "moved") + (job.status === "running" && progress.total ?
      " (" + (progress.current || 0) + "/" + progress.total + ")" : "");
    var line = list.querySelector('li[data-key="job-' + job.id + '"]');
    if (!line) {
      line = add("job-" + job.id, (job.kind || "job") + " " + String(job.id || "").slice(0, 8) + " — ");
      var span = document.createElement("span");
      span.className = "state";
      line.appendChild(span);
    }
    line.querySelector(".state").textContent = state;
  });
  source.addEventListener("drawers", function (event) {
    var filed = JSON.parse(event.data);
    if (filed.job_id || !filed.drawers || !filed.drawers.length) { return; }  // a job's drawers: its line says so
    var first = filed.drawers[0];
    var verb = filed.action === "marked" ? "marked a " : filed.action === "invalidated" ? "closed a " :
      filed.supersedes ? "filed a replacing " : "filed a ";
    add(null, verb + (first.kind || "drawer") + " in " + first.wing + "/" + first.room +
      (filed.drawers.length > 1 ? " (" + filed.drawers.length + " drawers)" : ""));
  });
  source.addEventListener("forget", function (event) {
    var counts = (JSON.parse(event.data).tombstone || {}).counts || {};
    var said = Object.keys(counts).filter(function (k) { return counts[k]; });  // what it erased, not the zeros
    add(null, "forgot " + (said.map(function (k) { return counts[k] + " " + k.replace("_", " "); }).join(", ") ||
      "nothing"));
  });
  source.onerror = function () { live.textContent = "Live updates paused; reconnecting…"; };
  source.onopen = function () { live.textContent = "Live: following the daemon's event stream."; };
}());

// The graph page's picture: the nodes and edges the page lists as text, drawn by Cytoscape.js (vendored beside
// htmx). Entities are round, facts are small squares labelled with their predicate; links between facts are dashed.
(function () {
  "use strict";
  var holder = document.getElementById("graph");
  var data = document.getElementById("graph-data");
  if (!holder || !data) { return; }
  function draw() {
    if (!window.cytoscape) { return; }
    var graph = JSON.parse(data.textContent);
    var elements = graph.nodes.map(function (n) {
      return { data: { id: n.id, label: n.label, kind: n.kind, seed: n.seed ? "yes" : "no", state: n.state || "" } };
    });
    var known = {};
    graph.nodes.forEach(function (n) { known[n.id] = true; });
    graph.edges.forEach(function (e, i) {
      if (known[e.from] && known[e.to]) {
        elements.push({ data: { id: "e" + i, source: e.from, target: e.to, kind: e.kind } });
      }
    });
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    var ink = dark ? "#e8e6df" : "#1d1d1b";
    window.memcastleGraph = window.cytoscape({
      container: holder,
      elements: elements,
      layout: { name: "cose", animate: false },
      style: [
        { selector: "node", style: { label: "data(label)", color: ink, "font-size": 11, "text-wrap": "wrap",
                                     "text-max-width": 120 } },
        { selector: "node[kind = 'entity']", style: { "background-color": "#2b5fab", width: 22, height: 22 } },
        { selector: "node[seed = 'yes']", style: { "border-width": 3, "border-color": "#d9730d" } },
        { selector: "node[kind = 'fact']", style: { shape: "round-rectangle", "background-color": "#8a8677",
                                                    width: 10, height: 10 } },
        { selector: "node[state = 'conflicting']", style: { "background-color": "#a3461c" } },
        { selector: "node[kind = 'drawer']", style: { shape: "diamond", "background-color": "#1e7a3c" } },
        { selector: "edge", style: { width: 1, "line-color": "#8a8677", "curve-style": "bezier",
                                     "target-arrow-shape": "triangle", "target-arrow-color": "#8a8677" } },
        { selector: "edge[kind != 'subject'][kind != 'object'][kind != 'mentions']",
          style: { "line-style": "dashed", "line-color": "#d9730d", "target-arrow-color": "#d9730d" } }
      ]
    });
    holder.setAttribute("data-drawn", String(window.memcastleGraph.nodes().length));
  }
  if (window.cytoscape) { draw(); } else { window.addEventListener("load", draw); }
}());
