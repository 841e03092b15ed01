// The metrics page's charts (templates/agents/metrics.html), drawn with Chart.js (vendored:
// static/agentdesk/vendor/chart.umd.min.js, loaded just before this) from the figures the page
// carries in #metrics-data (json_script: data the Content-Security-Policy lets be). The table
// below the charts holds the same figures. Colours come from the page's custom properties, so
// the charts follow light and dark mode, also when the system switches while the page is open.
(function () {
  "use strict";

  function cssColour(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function palette() {
    return {
      text: cssColour("--text"),
      muted: cssColour("--muted"),
      line: cssColour("--line"),
      accent: cssColour("--accent"),
      succeeded: cssColour("--succeeded"),
      failed: cssColour("--failed"),
      cancelled: cssColour("--cancelled"),
      planning: cssColour("--planning"),
    };
  }

  function seconds(value) {
    if (value === null || value === undefined) return "—";
    if (value < 10) return value.toFixed(1) + " s";
    var whole = Math.round(value);
    var hours = Math.floor(whole / 3600);
    var minutes = Math.floor((whole % 3600) / 60);
    if (hours) return hours + " h " + String(minutes).padStart(2, "0") + " min";
    if (minutes) return minutes + " min " + String(whole % 60).padStart(2, "0") + " s";
    return whole + " s";
  }

  // Each chart: its canvas, its series and how a value reads in the tooltip.
  function specs(data, colours) {
    return [
      {
        id: "chart-outcomes",
        stacked: true,
        counts: true,
        datasets: [
          { label: "Succeeded", data: data.succeeded, backgroundColor: colours.succeeded },
          { label: "Failed", data: data.failed, backgroundColor: colours.failed },
          { label: "Cancelled", data: data.cancelled, backgroundColor: colours.cancelled },
        ],
      },
      {
        id: "chart-time",
        datasets: [
          { label: "Average completion time", data: data.average_seconds, backgroundColor: colours.accent },
        ],
        format: seconds,
      },
      {
        id: "chart-tokens",
        stacked: true,
        counts: true,
        datasets: [
          { label: "Prompt", data: data.prompt_tokens, backgroundColor: colours.accent },
          { label: "Completion", data: data.completion_tokens, backgroundColor: colours.planning },
        ],
      },
      {
        id: "chart-errors",
        datasets: [{ label: "Error rate", data: data.error_percent, backgroundColor: colours.failed }],
        format: function (value) { return value === null ? "—" : value + " %"; },
        max: 100,
      },
    ];
  }

  function options(spec, colours) {
    var axis = { stacked: !!spec.stacked, ticks: { color: colours.muted }, grid: { color: colours.line } };
    var valueAxis = Object.assign({}, axis, { beginAtZero: true });
    if (spec.max) valueAxis.max = spec.max;
    // Counts have no halves.
    if (spec.counts) valueAxis.ticks = Object.assign({}, axis.ticks, { precision: 0 });
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      scales: { x: axis, y: valueAxis },
      plugins: {
        legend: { display: spec.datasets.length > 1, labels: { color: colours.text } },
        tooltip: spec.format
          ? { callbacks: { label: function (item) { return item.dataset.label + ": " + spec.format(item.raw); } } }
          : {},
      },
    };
  }

  function draw() {
    var source = document.getElementById("metrics-data");
    if (!source || typeof window.Chart === "undefined") return;
    var data = JSON.parse(source.textContent);
    var charts = [];

    function build() {
      var colours = palette();
      charts.forEach(function (chart) { chart.destroy(); });
      charts = specs(data, colours).map(function (spec) {
        var canvas = document.getElementById(spec.id);
        return new window.Chart(canvas, {
          type: "bar",
          data: { labels: data.labels, datasets: spec.datasets },
          options: options(spec, colours),
        });
      });
    }

    build();
    var dark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
    if (dark && dark.addEventListener) dark.addEventListener("change", build);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
