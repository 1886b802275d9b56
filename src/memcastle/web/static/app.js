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
          if (old) { old.replaceWith(row); } else { rows.prepend(row); }
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
  source.addEventListener("job", function (event) { refresh(JSON.parse(event.data).id); });
  source.addEventListener("reset", function () { window.location.reload(); });
  source.onerror = function () { live.textContent = "Live updates paused; reconnecting…"; };
  source.onopen = function () { live.textContent = "Live: following the daemon's event stream."; };
}());
