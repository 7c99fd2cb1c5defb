// framelab's HTML report: draws the data embedded in #framelab-data (a document's words,
// tables and plots, written by src/render/html_writer.rs) with uPlot. Every text from a run
// goes into the page with textContent or setAttribute, never as markup. After drawing, each plot's
// box carries data-series and data-points (a time plot also data-visible, the points drawn
// in its x range, and data-bucket, of the level of detail drawn: zooming picks a finer
// one), and <body> data-rendered, data-errors,
// data-render-ms (the page built, ms after navigation started), data-painted-ms (a frame
// after that) and the browser's paint timings: tests/html_browser.rs and
// tests/html_scale.rs read them from the DOM.
(function () {
  "use strict";
  var body = document.body;
  var errors = [];
  function markErrors() {
    body.setAttribute("data-errors", String(errors.length));
    if (errors.length) body.setAttribute("data-error-messages", errors.join(" | "));
  }
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    markErrors();
  });
  markErrors();

  var COLORS = ["#2f6fde", "#e8710a", "#188038", "#c5221f", "#8e44ad", "#00838f",
    "#b06000", "#5f6368", "#d01884", "#1e8e3e", "#7b61ff", "#9e7700"];
  // A comparison's variants: the baseline grey, the others in hues that say nothing about
  // better or worse (no green, no red, which the verdicts use): only a verdict says that.
  var VARIANT_COLORS = ["#2f6fde", "#e8710a", "#8e44ad", "#00838f", "#b06000", "#7b61ff", "#9e7700"];
  var BASELINE_COLOR = "#5f6368";
  function variantColor(d, name) {
    if (name === d.baseline && d.variants.length > 1) return BASELINE_COLOR;
    var k = d.variants.filter(function (v) { return v !== d.baseline; }).indexOf(name);
    return VARIANT_COLORS[Math.max(k, 0) % VARIANT_COLORS.length];
  }
  var SVGNS = "http://www.w3.org/2000/svg";
  var root = document.getElementById("page");
  var data = JSON.parse(document.getElementById("framelab-data").textContent);
  var plotCount = 0;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, tag, attrs, text) {
    var e = el(tag, attrs, text);
    parent.appendChild(e);
    return e;
  }
  function svg(parent, tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    parent.appendChild(e);
    return e;
  }
  function section(title, hint) {
    var s = add(root, "section");
    add(s, "h2", null, title);
    if (hint) add(s, "p", { "class": "hint" }, hint);
    return s;
  }
  function table(parent, headers, rows) {
    var t = add(parent, "table", { "class": "data" });
    var tr = add(add(t, "thead"), "tr");
    headers.forEach(function (h) { add(tr, "th", null, h); });
    var tb = add(t, "tbody");
    rows.forEach(function (r) {
      var row = add(tb, "tr");
      r.forEach(function (c) { add(row, "td", null, c); });
    });
    return t;
  }
  function width() {
    return Math.max(480, Math.min(1150, root.clientWidth - 20));
  }
  // The comparison data names units by their JSON keys; hover texts show symbols.
  var UNIT_SYMBOLS = { microseconds: "µs", seconds: "s", percent: "%", joules: "J" };
  function fmt(v, unit) {
    if (v === null || v === undefined || isNaN(v)) return "–";
    var a = Math.abs(v);
    var s = a >= 1000 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(3);
    unit = UNIT_SYMBOLS[unit] || unit;
    return unit ? s + " " + unit : s;
  }
  function setCounts(box, series, points) {
    box.setAttribute("data-series", String(series));
    box.setAttribute("data-points", String(points));
    plotCount++;
  }

  // A uPlot chart in its own box; data-series / data-points say what it holds.
  function chart(parent, name, opts, aligned) {
    var box = add(parent, "div", { "class": "plot", "data-plot": name });
    opts.width = width();
    opts.height = opts.height || 240;
    var u = new uPlot(opts, aligned, box);
    setCounts(box, aligned.length - 1, aligned[0].length);
    return { box: box, u: u };
  }

  // Charts over time share their x axis: the cursor moves in all, a zoom applies to all.
  var timeCharts = [];
  var syncing = false;
  function timeHooks(extra) {
    var hooks = {
      setScale: [function (u, key) {
        if (key !== "x") return;
        showLevel(u);
        if (syncing) return;
        syncing = true;
        var min = u.scales.x.min, max = u.scales.x.max;
        timeCharts.forEach(function (o) {
          if (o !== u && (o.scales.x.min !== min || o.scales.x.max !== max)) {
            o.setScale("x", { min: min, max: max });
          }
        });
        syncing = false;
      }]
    };
    if (extra) hooks.draw = [extra];
    return hooks;
  }
  // Levels of detail of a frame plot: the whole run's min/max pairs, then finer ones.
  // How many of the sorted values `x` lie in [min, max] (two binary searches).
  function countIn(x, min, max) {
    function firstAtLeast(v, strict) {
      var lo = 0, hi = x.length;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (x[mid] < v || (strict && x[mid] === v)) lo = mid + 1; else hi = mid;
      }
      return lo;
    }
    return Math.max(0, firstAtLeast(max, true) - firstAtLeast(min, false));
  }
  // The level to draw for the range [min, max]: the finest one with no more points in
  // it than the whole run's view (level 0) has, so a zoom brings detail back and never
  // draws more than the first view did. Levels are coarsest first.
  function pickLevel(levels, min, max) {
    var budget = levels[0].x.length, pick = 0;
    for (var i = 1; i < levels.length; i++) {
      if (countIn(levels[i].x, min, max) > budget) break;
      pick = i;
    }
    return pick;
  }
  window.framelabPickLevel = pickLevel;
  // Draws the level the chart's x range calls for; the box says what is drawn.
  // The levels of detail, parsed on the first zoom: they follow this script in the page,
  // so the plots are drawn before the browser has even read them.
  var detail = null;
  function levelsOf(u) {
    if (!u.framelabLevels) {
      var el = document.getElementById("framelab-detail");
      if (!el) return [{ bucket: u.framelabSeries.bucket, x: u.framelabSeries.x, y: u.framelabSeries.y }];
      detail = detail || JSON.parse(el.textContent);
      var s = u.framelabSeries;
      u.framelabLevels = [{ bucket: s.bucket, x: s.x, y: s.y }].concat(detail[u.framelabDetail] || []);
      u.framelabLevel = 0;
    }
    return u.framelabLevels;
  }
  function showLevel(u) {
    var min = u.scales.x.min, max = u.scales.x.max;
    if (min == null || max == null) return;
    var x = u.data[0], bucket = u.framelabSeries ? u.framelabSeries.bucket : 1;
    // The whole run in view: the first level, whatever the others.
    var whole = !x.length || (min <= x[0] && max >= x[x.length - 1] && !u.framelabLevel);
    if (u.framelabDetail && !whole) {
      var levels = levelsOf(u), k = pickLevel(levels, min, max);
      if (k !== u.framelabLevel) {
        u.framelabLevel = k;
        // After the redraw in progress: data set inside it would not be drawn.
        Promise.resolve().then(function () {
          u.setData([levels[k].x, levels[k].y], false);
          u.redraw();
        });
      }
      x = levels[k].x;
      bucket = levels[k].bucket;
    }
    if (u.framelabBox) {
      u.framelabBox.setAttribute("data-visible", String(countIn(x, min, max)));
      u.framelabBox.setAttribute("data-bucket", String(bucket));
    }
  }
  var timeCursor = { sync: { key: "framelab-time" }, drag: { x: true, y: false } };

  // Shading, a horizontal line and markers drawn over a chart.
  function overlay(spec) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox, r = window.devicePixelRatio || 1;
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();
      (spec.shade || []).forEach(function (s) {
        var x0 = u.valToPos(s[0], "x", true), x1 = u.valToPos(s[1], "x", true);
        ctx.fillStyle = "rgba(110,110,110,0.13)";
        ctx.fillRect(x0, b.top, x1 - x0, b.height);
      });
      var lines = spec.lines || [];
      lines.forEach(function (l) {
        var y = u.valToPos(l.y, "y", true);
        ctx.strokeStyle = l.color;
        ctx.lineWidth = r;
        ctx.setLineDash([6 * r, 4 * r]);
        ctx.beginPath();
        ctx.moveTo(b.left, y);
        ctx.lineTo(b.left + b.width, y);
        ctx.stroke();
        ctx.setLineDash([]);
      });
      lineLabels(u, lines);
      ctx.restore();
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();
      (spec.markers || []).forEach(function (m) {
        ctx.fillStyle = m.color;
        for (var i = 0; i < m.x.length; i++) {
          var px = u.valToPos(m.x[i], "x", true), py = u.valToPos(m.y[i], "y", true);
          ctx.beginPath();
          ctx.arc(px, py, 3 * r, 0, 2 * Math.PI);
          ctx.fill();
        }
      });
      ctx.restore();
    };
  }

  // The labels of the dashed lines, at the right of the plot, each just above its line
  // unless that would cover another: lines a few fps apart (the FPS lows) get a column of
  // labels, each joined to its line by a tick. Their boxes go in the plot's data-labels
  // (CSS px: x, y, width, height), so a test can check that none overlaps another.
  function lineLabels(u, lines) {
    var ctx = u.ctx, b = u.bbox, r = window.devicePixelRatio || 1;
    var h = 13 * r, pad = 4 * r;
    ctx.font = (11 * r) + "px sans-serif";
    var labels = lines.filter(function (l) { return l.label; }).map(function (l) {
      var lineY = u.valToPos(l.y, "y", true);
      return { l: l, lineY: lineY, w: ctx.measureText(l.label).width, base: lineY - 3 * r };
    });
    labels.sort(function (a, c) { return a.base - c.base; });
    // A line at the top of the plot (a budget that is the y axis' maximum) has its label
    // under it, inside the plot, rather than cut off above it.
    if (labels.length) labels[0].base = Math.max(labels[0].base, b.top + 11 * r);
    // Top to bottom: a label sits at least a line of text below the one above it.
    for (var i = 1; i < labels.length; i++) {
      labels[i].base = Math.max(labels[i].base, labels[i - 1].base + h);
    }
    // Pushed out at the bottom: the column moves up, but not out at the top.
    var over = labels.length ? labels[labels.length - 1].base - (b.top + b.height - 3 * r) : 0;
    if (over > 0) {
      var room = labels.length ? labels[0].base - (b.top + 11 * r) : 0;
      var up = Math.min(over, Math.max(room, 0));
      labels.forEach(function (a) { a.base -= up; });
      for (var k = labels.length - 2; k >= 0; k--) {
        labels[k].base = Math.min(labels[k].base, labels[k + 1].base - h);
      }
    }
    var boxes = [];
    labels.forEach(function (a) {
      var x = b.left + b.width - a.w - pad;
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(x - 2 * r, a.base - 10 * r, a.w + 4 * r, h - r);
      ctx.fillStyle = a.l.color;
      ctx.fillText(a.l.label, x, a.base);
      if (Math.abs(a.base - 3 * r - a.lineY) > r) {
        // Moved off its line: a tick from the label's end down (or up) to it.
        ctx.strokeStyle = a.l.color;
        ctx.lineWidth = r;
        ctx.beginPath();
        ctx.moveTo(x + a.w + 2 * r, a.base - 4 * r);
        ctx.lineTo(x + a.w + 2 * r, a.lineY);
        ctx.stroke();
      }
      boxes.push([x / r, (a.base - 10 * r) / r, a.w / r, (h - r) / r].map(function (v) {
        return Math.round(v * 10) / 10;
      }));
    });
    var plot = u.root.parentNode;
    if (plot && plot.setAttribute) {
      plot.setAttribute("data-labels", JSON.stringify(boxes));
      plot.setAttribute("data-plot-box", JSON.stringify([b.left / r, b.top / r, b.width / r, b.height / r]));
    }
  }

  function timeChart(parent, name, series, unit, extra, height) {
    var opts = {
      height: height || 220,
      cursor: timeCursor,
      scales: { x: { time: false }, y: extra && extra.yMin !== undefined ? {
        range: function (u, min, max) { return [extra.yMin, Math.max(max, extra.yMax || 0) * 1.05]; }
      } : {} },
      axes: [{ label: "s after launch" }, { label: unit, size: 70 }],
      series: [{ label: "t s", value: function (u, v) { return v === null ? "–" : v.toFixed(3); } },
        { label: series.label, stroke: (extra && extra.color) || COLORS[0], width: 1,
          points: { show: series.x.length < 3000 },
          value: function (u, v) { return fmt(v, unit); } }],
      hooks: timeHooks(extra ? overlay(extra) : null)
    };
    var c = chart(parent, name, opts, [series.x, series.y]);
    c.u.framelabBox = c.box;
    c.u.framelabSeries = series;
    if (extra && extra.detail && series.finest_bucket) c.u.framelabDetail = extra.detail;
    timeCharts.push(c.u);
    return c;
  }

  // All plots over time start on the same span: the frames' and the readings' together.
  function alignTime() {
    var lo = Infinity, hi = -Infinity;
    timeCharts.forEach(function (u) {
      var x = u.data[0];
      if (x.length) { lo = Math.min(lo, x[0]); hi = Math.max(hi, x[x.length - 1]); }
    });
    if (!(lo < hi)) return;
    syncing = true;
    timeCharts.forEach(function (u) { u.setScale("x", { min: lo, max: hi }); });
    syncing = false;
  }
  // A link can open the time plots zoomed: #t=FROM,TO (seconds after launch).
  function zoomFromLink() {
    var m = /^#t=([-0-9.e+]+),([-0-9.e+]+)$/.exec(window.location.hash);
    var lo = m && parseFloat(m[1]), hi = m && parseFloat(m[2]);
    if (m && timeCharts.length && lo < hi) timeCharts[0].setScale("x", { min: lo, max: hi });
  }

  function decimationHint(s) {
    var finest = s.finest_bucket || 0;
    return s.bucket > 1
      ? s.points + " values; each plotted pair is the smallest and largest of " + s.bucket +
        " consecutive ones, so every extreme stays visible" + (finest ? "; zooming in draws " +
        (finest > 1 ? "pairs of as few as " + finest : "every value") : "")
      : s.points + " values, all plotted";
  }

  // A quantile-function chart: x percentile, one line per named series, log y on demand.
  function quantileChart(parent, name, p, series, unit, colorOf) {
    var holder = add(parent, "div");
    var controls = add(holder, "div", { "class": "controls" });
    var label = add(controls, "label");
    var log = add(label, "input", { type: "checkbox" });
    label.appendChild(document.createTextNode(" log axis"));
    var current = null;
    function draw() {
      if (current) {
        current.u.destroy();
        holder.removeChild(current.box);
        plotCount--;
      }
      var logOn = log.checked;
      var aligned = [p].concat(series.map(function (s) {
        return s.values.map(function (v) { return logOn && v <= 0 ? null : v; });
      }));
      current = chart(holder, name, {
        height: 260,
        scales: { x: { time: false }, y: logOn ? { distr: 3 } : {} },
        axes: [{ label: "percentile of spans" }, { label: unit, size: 70 }],
        series: [{ label: "p", value: function (u, v) { return v === null ? "–" : "p" + v; } }]
          .concat(series.map(function (s, i) {
            return { label: s.name, stroke: colorOf ? colorOf(s.name) : COLORS[i % COLORS.length], width: 1.5,
              value: function (u, v) { return fmt(v, unit); } };
          })),
      }, aligned);
      current.box.setAttribute("data-log", logOn ? "1" : "0");
    }
    log.addEventListener("change", draw);
    draw();
  }

  function factsList(parent, facts) {
    var dl = add(parent, "dl", { "class": "facts" });
    facts.forEach(function (f) {
      add(dl, "dt", null, f[0]);
      add(dl, "dd", null, f[1]);
    });
  }

  function notes(parent, list) {
    list.forEach(function (n) { add(parent, "div", { "class": "note" }, n); });
  }

  // ---- one run ----

  function gantt(parent, g) {
    var W = width(), left = 170, rowH = 20, top = 18;
    var H = top + g.threads.length * rowH + 24;
    var end = g.total_us;
    g.spans.forEach(function (s) { end = Math.max(end, s[2] + s[3]); });
    end = end > 0 ? end : 1;
    var box = add(parent, "div", { "class": "plot", "data-plot": "gantt-" + g.frame });
    var s = svg(box, "svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H });
    var x = function (us) { return left + (W - left - 10) * us / end; };
    svg(s, "text", { x: 4, y: 12 }, "frame " + g.frame + " at " + g.t_s.toFixed(3) +
      " s: total " + fmt(g.total_us, "µs"));
    g.threads.forEach(function (t, i) {
      svg(s, "text", { x: 4, y: top + i * rowH + 14 }, t);
      svg(s, "line", { x1: left, x2: W - 10, y1: top + i * rowH + rowH - 1,
        y2: top + i * rowH + rowH - 1, stroke: "#e3e7ee" });
    });
    g.spans.forEach(function (sp) {
      var r = svg(s, "rect", { x: x(sp[2]), y: top + sp[1] * rowH + 3,
        width: Math.max(1, x(sp[2] + sp[3]) - x(sp[2])), height: rowH - 6,
        fill: COLORS[sp[0] % COLORS.length], "data-stage": g.stage_names[sp[0]] });
      svg(r, "title", null, g.stage_names[sp[0]] + ": " + fmt(sp[3], "µs") + " from " +
        fmt(sp[2], "µs"));
    });
    for (var k = 0; k <= 4; k++) {
      var us = end * k / 4;
      svg(s, "text", { x: x(us) - (k === 4 ? 40 : 0), y: H - 6 }, fmt(us, "µs"));
    }
    setCounts(box, g.threads.length, g.spans.length);
  }

  function renderRun(d) {
    add(root, "h1", null, d.title);
    factsList(root, d.facts);
    notes(root, d.notes);
    var f = d.frames;
    var xmin = f.total.x.length ? f.total.x[0] : 0;
    var xmax = f.total.x.length ? f.total.x[f.total.x.length - 1] : 0;
    var shade = [[Math.min(xmin, d.window_start_s), d.window_start_s],
      [d.window_end_s, Math.max(xmax, d.window_end_s)]];

    var s = section("Frame time over the run",
      "Drag to zoom on the time axis (all time plots follow), double-click to reset. Grey: " +
      "warmup and after the window (not in statistics). " + decimationHint(f.total) + ".");
    var lines = d.budget_us ? [{ y: d.budget_us, color: "#c5221f", label: "budget " + fmt(d.budget_us, "µs") }] : [];
    add(s, "h3", null, "total (end-to-end latency), late frames in red" +
      (f.late.of > f.late.x.length ? " (the worst " + f.late.x.length + " of " + f.late.of + ")" : " (" + f.late.of + ")"));
    timeChart(s, "frame-total", f.total, "µs", { shade: shade, lines: lines, detail: "total",
      markers: [{ x: f.late.x, y: f.late.y, color: "#c5221f" }], yMin: 0, yMax: d.budget_us || 0 });
    add(s, "h3", null, "interval (output cadence), stutters in orange" +
      (f.stutters.of > f.stutters.x.length ? " (the worst " + f.stutters.x.length + " of " + f.stutters.of + ")" : " (" + f.stutters.of + ")"));
    timeChart(s, "frame-interval", f.interval, "µs", { shade: shade, lines: lines, color: COLORS[2], detail: "interval",
      markers: [{ x: f.stutters.x, y: f.stutters.y, color: "#e8710a" }], yMin: 0, yMax: d.budget_us || 0 });

    if (d.telemetry.length) {
      var t = section("Telemetry", "On the same time axis as the frame times: hover one plot, " +
        "the cursor shows in all." + (d.telemetry_left_out ? " " + d.telemetry_left_out +
        " more series not plotted (bit masks, or over the limit)." : ""));
      d.telemetry.forEach(function (series, i) {
        add(t, "h3", null, series.label + " (" + series.unit + ")");
        timeChart(t, "telemetry-" + i, series, series.unit,
          { shade: shade, color: COLORS[(i + 3) % COLORS.length] }, 150);
      });
    }

    alignTime();
    // Once the whole page is read (the levels of detail come after this script).
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", zoomFromLink);
    } else {
      zoomFromLink();
    }

    if (d.stages.series.length) {
      var st = section("Stage distributions",
        "Each stage's span durations in measured frames: the value at each percentile (a CDF with its axes swapped).");
      quantileChart(st, "stages", d.stages.p, d.stages.series.map(function (x) {
        return { name: x.name + " (" + x.count + ")", values: x.us };
      }), "µs");
    }

    if (d.fps) {
      var fp = section("FPS percentiles",
        "The frame rate at each percentile of frames (fps_p = 1e6 / Q(1 − p) of the interval); the dashed lines are the named 1% and 0.1% lows.");
      var named = d.fps.named;
      chart(fp, "fps", {
        height: 240,
        scales: { x: { time: false } },
        axes: [{ label: "percentile of frames" }, { label: "fps", size: 60 }],
        series: [{ label: "p", value: function (u, v) { return v === null ? "–" : "p" + v; } },
          { label: "fps", stroke: COLORS[0], width: 1.5, value: function (u, v) { return fmt(v, "fps"); } }],
        hooks: { draw: [overlay({ lines: named.map(function (n, i) {
          return { y: n[1], color: COLORS[(i + 1) % COLORS.length], label: n[0] + " " + n[1].toFixed(1) };
        }) })] }
      }, [d.fps.p, d.fps.fps]);
      if (named.length) table(fp, ["1% low", "fps"], named.map(function (n) { return [n[0], n[1].toFixed(1)]; }));
    }

    if (d.gantt.length) {
      var g = section("Worst frames, stage by stage",
        "Each span of the frame on the row of its thread, from the frame's first start; gaps are waits between stages.");
      var legend = add(g, "div", { "class": "controls" });
      d.gantt[0].stage_names.forEach(function (n, i) {
        var l = add(legend, "label");
        add(l, "span", { "class": "bar", style: "width:12px;background:" + COLORS[i % COLORS.length] });
        l.appendChild(document.createTextNode(" " + n));
      });
      d.gantt.forEach(function (fr) { gantt(g, fr); });
    }

    d.tables.forEach(function (tb) {
      var ts = section(tb.title);
      table(ts, tb.headers, tb.rows);
    });
    // The report's other words (telemetry's sampling sources), as text shows them.
    words(d.blocks || []);

    if (d.histograms.length) {
      var hs = section("Imported histograms", "As the tool that made them counted them.");
      d.histograms.forEach(function (h, i) {
        add(hs, "h3", null, h.name + (h.unit ? " (" + h.unit + ")" : ""));
        var max = 1;
        h.buckets.forEach(function (b) { max = Math.max(max, b[2]); });
        var t = table(hs, ["bucket", "count", ""], []);
        t.setAttribute("data-plot", "histogram-" + i);
        var tb = t.querySelector("tbody");
        h.buckets.forEach(function (b) {
          var row = add(tb, "tr");
          add(row, "td", null, "[" + (b[0] === null ? "…" : b[0]) + ", " + (b[1] === null ? "…" : b[1]) + ")");
          add(row, "td", null, b[2]);
          var cell = add(row, "td");
          add(cell, "span", { "class": "bar", style: "width:" + Math.round(300 * b[2] / max) + "px" });
        });
        setCounts(t, 1, h.buckets.length);
      });
    }
  }

  // ---- a comparison ----

  function forest(parent, fo, d) {
    var noisePct = d.noise_pct;
    var rows = fo.rows;
    var W = width(), left = 230, right = 110, rowH = 26, top = 24;
    var H = top + rows.length * rowH + 28;
    var lo = 1 - noisePct / 100, hi = 1 + noisePct / 100;
    rows.forEach(function (r) {
      [r.low, r.high, r.ratio].concat(r.runs).forEach(function (v) {
        if (v !== null && v !== undefined && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      });
    });
    var pad = (hi - lo) * 0.08 || 0.01;
    // Ratios of non-negative figures: the axis never shows a negative ratio.
    lo = lo >= 0 ? Math.max(lo - pad, 0) : lo - pad;
    hi += pad;
    var x = function (v) { return left + (W - left - right) * (v - lo) / (hi - lo); };
    var box = add(parent, "div", { "class": "plot", "data-plot": "forest-" + fo.metric });
    var s = svg(box, "svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H });
    var better = fo.higher_is_better ? "right is better" : "left is better";
    svg(s, "text", { x: 4, y: 14 }, fo.label + " — ratio to the baseline's median (" + better + ")");
    svg(s, "rect", { x: x(1 - noisePct / 100), y: top, width: x(1 + noisePct / 100) - x(1 - noisePct / 100),
      height: rows.length * rowH, fill: "rgba(110,110,110,0.13)" });
    svg(s, "line", { x1: x(1), x2: x(1), y1: top, y2: top + rows.length * rowH, stroke: "#5f6368" });
    var dots = 0;
    rows.forEach(function (r, i) {
      var y = top + i * rowH + rowH / 2;
      var color = r.baseline ? BASELINE_COLOR : variantColor(d, r.variant);
      svg(s, "text", { x: 4, y: y + 4 }, r.label);
      r.runs.forEach(function (v) {
        if (v === null || !isFinite(v)) return;
        var c = svg(s, "circle", { cx: x(v), cy: y - 6, r: 2.5, fill: color, "fill-opacity": 0.55, "class": "run" });
        svg(c, "title", null, r.label + ": run at " + fmt(v * (r.baseline_median || 0), fo.unit) + " (×" + v.toFixed(3) + ")");
        dots++;
      });
      // An interval unbounded on one side (JSON has no infinity: null) runs to the plot's edge.
      if (r.low !== null || r.high !== null) {
        svg(s, "line", { x1: x(r.low === null ? lo : r.low), x2: x(r.high === null ? hi : r.high),
          y1: y + 2, y2: y + 2, stroke: color, "stroke-width": 2 });
      }
      if (r.ratio !== null) {
        var m = svg(s, "rect", { x: x(r.ratio) - 4, y: y - 2, width: 8, height: 8, fill: color,
          transform: "rotate(45 " + x(r.ratio) + " " + (y + 2) + ")" });
        svg(m, "title", null, r.label + ": median " + fmt(r.median, fo.unit) + ", ×" + r.ratio.toFixed(3) +
          (r.low !== null || r.high !== null ? " [" + (r.low === null ? "−∞" : r.low.toFixed(3)) +
            ", " + (r.high === null ? "+∞" : r.high.toFixed(3)) + "]" : ""));
      }
      svg(s, "text", { x: W - right + 8, y: y + 4, "class": "verdict-" + r.verdict }, r.verdict);
    });
    for (var k = 0; k <= 4; k++) {
      var v = lo + (hi - lo) * k / 4;
      svg(s, "text", { x: x(v) - 14, y: H - 8 }, "×" + v.toFixed(3));
    }
    setCounts(box, rows.length, dots);
  }

  // A document's words besides its title, facts, notes and titled tables (a comparison's,
  // a run's telemetry sources, history's tables: what text and Markdown show): a heading opens a section; paragraphs, bullets, titled
  // lists and tables go in it. A column headed "verdict" colours its cells as a verdict.
  function words(blocks) {
    var box = root;
    function bullets(items) {
      var ul = add(box, "ul");
      items.forEach(function (t) { add(ul, "li", null, t); });
    }
    blocks.forEach(function (b) {
      if (b.heading !== undefined) box = section(b.heading);
      else if (b.paragraph !== undefined) add(box, "p", null, b.paragraph);
      else if (b.bullets) bullets(b.bullets);
      else if (b.list) { add(box, "p", null, b.list.title + ":"); bullets(b.list.items); }
      else if (b.lines !== undefined) add(box, "pre", null, b.lines);
      else if (b.table) {
        if (b.table.title) add(box, "h3", null, b.table.title);
        var t = table(box, b.table.headers, b.table.rows);
        var at = b.table.headers.indexOf("verdict");
        if (at >= 0) {
          Array.prototype.forEach.call(t.querySelectorAll("tbody tr"), function (tr) {
            var cell = tr.children[at];
            if (cell) cell.setAttribute("class", "verdict-" + cell.textContent);
          });
        }
      }
    });
  }

  function renderCompare(d) {
    add(root, "h1", null, d.title);
    words(d.blocks || []);

    var f = section("Every metric, every variant",
      "Diamond: the variant's median across runs ÷ the baseline's, with its 95% interval; dots: each run; " +
      "grey band: the noise band (±" + d.noise_pct + "%). Hover for values.");
    d.forests.forEach(function (fo) { forest(f, fo, d); });

    d.sweeps.forEach(function (sw, i) {
      var s = section("Sweep: " + sw.label, "The median across runs at each parameter value, one line per variant.");
      var xs = sw.params.map(function (_, k) { return k; });
      chart(s, "sweep-" + i, {
        height: 260,
        scales: { x: { time: false } },
        axes: [{ values: function (u, ticks) { return ticks.map(function (t) { return Number.isInteger(t) ? (sw.params[t] || "") : ""; }); } },
          { label: sw.unit, size: 70 }],
        series: [{ label: "values", value: function (u, t) { return t === null ? "–" : (sw.params[t] || ""); } }]
          .concat(sw.lines.map(function (l, k) {
            return { label: l[0], stroke: variantColor(d, l[0]), width: 2, points: { size: 7 },
              value: function (u, y) { return fmt(y, sw.unit); } };
          }))
      }, [xs].concat(sw.lines.map(function (l) { return l[1]; })));
    });

    if (d.stages.length) {
      var st = section("Stage distributions by variant",
        "Spans of every measured run pooled per variant" + (d.stages[0].group ? " (at " + d.stages[0].group + ")" : "") +
        ": the value at each percentile.");
      d.stages.forEach(function (o, i) {
        add(st, "h3", null, o.stage);
        quantileChart(st, "stage-" + i, o.p, o.variants.map(function (v) { return { name: v[0], values: v[1] }; }), "µs",
          function (name) { return variantColor(d, name); });
      });
    }
  }

  // History (src/history/show.rs): one plot per metric over commits, one line per machine
  // (machines are never averaged together), then the tables `history show` prints.
  function renderHistory(d) {
    add(root, "h1", null, d.title);
    add(root, "p", { "class": "hint" },
      "Each point: the median of a commit's runs on one machine. Commits in the order first recorded.");
    d.trends.forEach(function (tr, i) {
      var unit = tr.unit, commits = tr.commits;
      var s = section(tr.metric + (unit ? " [" + unit + "]" : ""));
      var xs = commits.map(function (_, k) { return k; });
      chart(s, "history-" + i, {
        height: 260,
        scales: { x: { time: false } },
        axes: [{ values: function (u, ticks) { return ticks.map(function (t) { return Number.isInteger(t) && commits[t] ? commits[t].slice(0, 8) : ""; }); } },
          { label: unit, size: 70 }],
        series: [{ label: "commit", value: function (u, t) { return t === null || !commits[t] ? "–" : commits[t].slice(0, 12); } }]
          .concat(tr.lines.map(function (line, k) {
            return { label: line[0], stroke: COLORS[k % COLORS.length], width: 2,
              points: { size: 7 }, spanGaps: true, value: function (u, y) { return fmt(y, unit); } };
          }))
      }, [xs].concat(tr.lines.map(function (line) { return line[1]; })));
    });
    words(d.blocks || []);
  }

  try {
    if (data.kind === "compare") renderCompare(data);
    else if (data.kind === "history") renderHistory(data);
    else renderRun(data);
  } catch (e) {
    errors.push(String(e && e.stack || e));
    markErrors();
    add(root, "pre", null, "framelab: the page could not be drawn: " + e);
  }
  body.setAttribute("data-plots", String(plotCount));
  body.setAttribute("data-render-ms", performance.now().toFixed(1));
  body.setAttribute("data-rendered", "1");
  // The frame after the one that drew the plots: by then they are on screen.
  requestAnimationFrame(function () {
    requestAnimationFrame(function () {
      body.setAttribute("data-painted-ms", performance.now().toFixed(1));
    });
  });
  try {
    new PerformanceObserver(function (list) {
      list.getEntries().forEach(function (e) {
        body.setAttribute("data-" + e.name + "-ms", e.startTime.toFixed(1));
      });
    }).observe({ type: "paint", buffered: true });
  } catch (e) { /* no paint timing in this browser */ }
})();
