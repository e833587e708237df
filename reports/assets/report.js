// coordsim report: zoom, pan, hover details, local vs true time. Written for this page; no library.
(function () {
  "use strict";
  // The narrative's routine lines are in the page but hidden; the button shows and hides them.
  var routine = document.getElementById("routine");
  if (routine) {
    var n = routine.getAttribute("data-n");
    routine.addEventListener("click", function () {
      var show = routine.getAttribute("aria-pressed") !== "true";
      Array.prototype.forEach.call(document.querySelectorAll("#narrative li.routine"), function (li) { li.hidden = !show; });
      routine.setAttribute("aria-pressed", show ? "true" : "false");
      routine.textContent = (show ? "hide " : "show ") + n + " routine lines (leases granted, checkpoints, other events)";
    });
  }
  // A link to a section (report.html#narrative) lands on it once the script has laid the page out.
  function landOnAnchor() {
    var anchor = /^#([a-z][\w-]*)$/.exec(window.location.hash);
    var target = anchor && document.getElementById(anchor[1]);
    if (target) target.scrollIntoView();
  }
  var svg = document.getElementById("tl");
  if (!svg) { landOnAnchor(); return; }
  var NS = svg.namespaceURI;
  var data = JSON.parse(document.getElementById("data").textContent);
  var PW = +svg.getAttribute("data-pw");
  var LX = +svg.getAttribute("data-lx");
  var END = +svg.getAttribute("data-end");
  var STEPS = svg.getAttribute("data-axis") === "steps";
  var H = svg.viewBox.baseVal.height;
  var zs = document.getElementById("zs");
  var zp = document.getElementById("zp");
  var axisG = document.getElementById("axis");
  var cursor = document.getElementById("cursor");
  var readout = document.getElementById("readout");
  var tip = document.getElementById("tip");
  // Deepest zoom: 10 us across the plot (or 2 steps).
  var KMAX = STEPS ? Math.max(1, END / 2) : Math.max(1, END / 1e4);
  var k = 1, tx = 0;
  var each = function (list, f) { Array.prototype.forEach.call(list, f); };

  // A label's width as the browser draws it, in the font its class gives it, measured on a canvas
  // once per text and class: a per-character estimate ran labels of the real font into each other.
  var measure = (function () {
    var canvas = document.createElement("canvas"), ctx = canvas.getContext && canvas.getContext("2d");
    var fonts = {}, widths = {};
    return function (text, cls) {
      if (!ctx) return text.length * 4.6;
      var font = fonts[cls];
      if (font === undefined) {
        var probe = document.createElementNS(NS, "text");
        probe.setAttribute("class", cls);
        zp.appendChild(probe);
        var s = window.getComputedStyle(probe);
        font = fonts[cls] = s.fontWeight + " " + s.fontSize + " " + s.fontFamily;
        zp.removeChild(probe);
      }
      var key = cls + "\n" + text;
      if (!(key in widths)) { ctx.font = font; widths[key] = ctx.measureText(text).width; }
      return widths[key];
    };
  })();

  // Things drawn at an instant move with the zoom but keep their size: marks and labels, placed
  // by their x. Every label belongs to a row (its y): a span's label (`.sl`, the span's width in
  // data-w) shows when the span is wide enough, a mark's label (`.ml`) where it has room; on a row
  // no two shown labels touch. Red labels (a stale write accepted, a write rejected) get their
  // room first, then other mark labels, then span labels.
  var pts = [], violations = [], rows = {}, GAP = 2;
  function label(x, y, text, w, cls, el) {
    var l = { x: x, y: y, w: w, text: text, el: el, cls: cls };
    l.len = measure(text, cls) + (w === null ? 0 : 2);
    l.tier = w !== null ? 2 : /\bbad\b/.test(cls) ? 0 : 1;
    (rows[y] = rows[y] || []).push(l);
  }
  each(svg.querySelectorAll(".pt"), function (el) {
    var x = +el.getAttribute("x"), y = +el.getAttribute("y");
    if (el.classList.contains("sl")) { label(x, y, el.textContent, +el.getAttribute("data-w"), "pt sl", el); return; }
    if (el.classList.contains("ml")) { label(x, y, el.textContent, null, el.getAttribute("class"), el); return; }
    pts.push({ el: el, x: x });
    if (el.classList.contains("vl")) violations.push({ el: el, x: x, len: measure(el.textContent, "pt vl") });
    var lazy = el.getAttribute("data-l");
    if (lazy !== null) label(x, y - 7, lazy, null, el.classList.contains("stale") || el.classList.contains("rejected") ? "pt ml bad" : "pt ml", null);
  });
  // Spans whose label had no room at zoom 1.
  each(zs.querySelectorAll("rect[data-l]"), function (el) {
    var y = +el.getAttribute("y") + +el.getAttribute("height") - 2;
    label(+el.getAttribute("x"), y, el.getAttribute("data-l"), +el.getAttribute("width"), "pt sl", null);
  });

  // Detail index -> the elements that stand for it.
  var byRef = {};
  each(svg.querySelectorAll("[data-e]"), function (el) {
    el.getAttribute("data-e").split(" ").forEach(function (r) {
      if (r !== "") (byRef[r] = byRef[r] || []).push(el);
    });
  });

  function toT(x) { return (x - tx) / k / PW * END; }
  function toX(t) { return t / END * PW * k + tx; }
  function clamp() { tx = Math.min(0, Math.max(PW - PW * k, tx)); }

  function niceStep(range) {
    var raw = Math.max(range / 10, 1);
    var s = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = [1, 2, 5, 10];
    for (var i = 0; i < f.length; i++) { if (s * f[i] >= raw) { s *= f[i]; break; } }
    return STEPS ? Math.max(1, Math.round(s)) : s;
  }
  function tickLabel(t, step) {
    if (STEPS) return String(Math.round(t));
    var d = step >= 1e9 ? 0 : Math.min(9, Math.max(0, 9 - Math.floor(Math.log10(step))));
    return (t / 1e9).toFixed(d) + " s";
  }
  function drawAxis() {
    var t0 = Math.max(0, toT(0)), t1 = Math.min(END, toT(PW));
    var step = niceStep(t1 - t0);
    var first = Math.ceil(t0 / step);
    var out = "";
    for (var i = first; i * step <= t1 + 1e-9 && i - first < 40; i++) {
      var x = toX(i * step).toFixed(1);
      out += '<line class="grid" x1="' + x + '" x2="' + x + '" y1="18" y2="' + H + '"/>' +
        '<text class="tk" x="' + x + '" dx="3" y="14">' + tickLabel(i * step, step) + "</text>";
    }
    axisG.innerHTML = out;
  }

  function place(l, x, show) {
    if (!show) { if (l.el) l.el.classList.add("hid"); return; }
    if (!l.el) {
      l.el = document.createElementNS(NS, "text");
      l.el.setAttribute("class", l.cls);
      if (l.w !== null) l.el.setAttribute("dx", "2");
      l.el.setAttribute("y", l.y);
      l.el.textContent = l.text;
      zp.appendChild(l.el);
    }
    l.el.classList.remove("hid");
    if (l.w === null) l.el.removeAttribute("dx");
    l.el.setAttribute("x", x.toFixed(1));
  }
  function onScreen(x, right) { return right >= -60 && x <= PW + 60; }

  // Where a row's label would go at this zoom, as [left, right] and its text's x; null when it
  // has no place (its mark off screen, its span too narrow). A mark's label stays whole inside
  // the plot: moved inwards near either end.
  function spot(l) {
    var x = l.x * k + tx;
    if (l.w === null) {
      if (!onScreen(x, x)) return null;
      var half = l.len / 2;
      if (PW > 2 * half) x = Math.min(Math.max(x, half), PW - half);
      return { l: l, at: x, left: x - half, right: x + half };
    }
    // A span label sticks to the left edge of the plot while its span runs past it.
    var left = Math.max(x, 0), right = Math.min(x + l.w * k, PW);
    return right - left >= l.len + GAP ? { l: l, at: left, left: left, right: left + l.len } : null;
  }
  // Shows, tier by tier, each label that touches none already shown on its row.
  function layRow(row) {
    var spots = [], shown = [];
    row.forEach(function (l) { var s = spot(l); if (s) spots.push(s); else place(l, 0, false); });
    spots.sort(function (a, b) { return a.left - b.left; });
    for (var tier = 0; tier <= 2; tier++) {
      var last = -Infinity, j = 0, taken = [];
      spots.forEach(function (s) {
        if (s.l.tier !== tier) return;
        while (j < shown.length && shown[j].right + GAP <= s.left) j++;
        s.show = s.left >= last + GAP && (j === shown.length || shown[j].left >= s.right + GAP);
        if (s.show) { last = s.right; taken.push(s); }
      });
      shown = shown.concat(taken).sort(function (a, b) { return a.left - b.left; });
    }
    spots.forEach(function (s) { place(s.l, s.at, s.show); });
  }

  function apply() {
    zs.setAttribute("transform", "translate(" + tx.toFixed(3) + ",0) scale(" + k + ",1)");
    for (var i = 0; i < pts.length; i++) {
      var p = pts[i], x = p.x * k + tx, on = onScreen(x, x);
      p.el.classList.toggle("off", !on);
      if (on) p.el.setAttribute("x", x.toFixed(1));
    }
    // A violation's label starts just right of its line, or ends at the plot's right edge.
    violations.forEach(function (v) {
      var x = v.x * k + tx;
      v.el.setAttribute("dx", Math.min(3, PW - x - v.len - 1).toFixed(1));
    });
    Object.keys(rows).forEach(function (y) { layRow(rows[y]); });
    drawAxis();
  }
  var pending = false;
  // The next frame lays the plot out once however many zoom steps came before it; a page that
  // draws no frames (a background tab, a headless dump) gets the same layout from a timer.
  function schedule() {
    if (pending) return;
    pending = true;
    var run = function () { if (pending) { pending = false; apply(); } };
    window.requestAnimationFrame(run);
    window.setTimeout(run, 100);
  }
  function zoomAt(factor, px) {
    var nk = Math.min(KMAX, Math.max(1, k * factor));
    tx = px - (px - tx) / k * nk;
    k = nk;
    clamp();
    schedule();
  }
  function zoomTo(t) {
    var span = STEPS ? 8 : Math.max(END / 20, 1e6);
    k = Math.min(KMAX, Math.max(1, END / span));
    tx = PW / 2 - t / END * PW * k;
    clamp();
    schedule();
    svg.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }
  function plotPoint(e) {
    var pt = svg.createSVGPoint();
    pt.x = e.clientX; pt.y = e.clientY;
    var p = pt.matrixTransform(svg.getScreenCTM().inverse());
    return { x: p.x - LX, y: p.y };
  }

  // Ctrl/Cmd + wheel (and a trackpad pinch) zooms; a sideways wheel pans; a plain wheel scrolls the page.
  svg.addEventListener("wheel", function (e) {
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      zoomAt(e.deltaY < 0 ? 1.25 : 0.8, plotPoint(e).x);
    } else if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      tx -= e.deltaX;
      clamp();
      schedule();
    }
  }, { passive: false });
  svg.addEventListener("dblclick", function (e) { zoomAt(e.shiftKey ? 0.5 : 2, plotPoint(e).x); });
  var drag = null;
  svg.addEventListener("mousedown", function (e) { drag = { x: plotPoint(e).x, tx: tx }; e.preventDefault(); });
  window.addEventListener("mouseup", function () { drag = null; });
  each(document.querySelectorAll("[data-z]"), function (b) {
    b.addEventListener("click", function () {
      var z = b.getAttribute("data-z");
      if (z === "fit") { k = 1; tx = 0; schedule(); }
      else zoomAt(z === "in" ? 2 : 0.5, PW / 2);
    });
  });

  // Details: [time_ns, node index, type, other fields].
  function detail(r) {
    var d = data.details[r];
    if (!d) return null;
    return { time: d[0], node: d[1] === null ? null : data.nodes[d[1]], type: d[2], rest: d[3] };
  }
  function fmtTime(t) { return STEPS ? "step " + t : (t / 1e9).toFixed(9) + " s"; }
  function localAt(node, t) {
    var segs = data.clocks[node];
    if (!segs) return null;
    var s = null;
    for (var i = 0; i < segs.length; i++) if (segs[i][0] <= t) s = segs[i];
    return s ? s[1] + (t - s[0]) * s[2] / 1e6 : null;
  }
  function flat(v) {
    if (v === null || typeof v !== "object") return String(v);
    if (Array.isArray(v)) return "[" + v.map(flat).join(",") + "]";
    var parts = [];
    if (typeof v.f === "string") parts.push(v.f);
    Object.keys(v).forEach(function (key) { if (key !== "f") parts.push(key + "=" + flat(v[key])); });
    return parts.join(" ");
  }
  function describe(r) {
    var d = detail(r);
    if (!d) return "";
    var lines = ["#" + r + " " + (d.type || "") + (d.node ? "  " + d.node : "")];
    if (d.time !== null) {
      lines.push("  true time  " + fmtTime(d.time));
      var local = d.node ? localAt(d.node, d.time) : null;
      if (local !== null) lines.push("  local time " + (local / 1e9).toFixed(9) + " s (" + d.node + "'s clock)");
    }
    Object.keys(d.rest).forEach(function (key) { lines.push("  " + key + ": " + flat(d.rest[key])); });
    return lines.join("\n");
  }
  function tipText(refs) {
    var text = refs.map(describe).join("\n");
    var times = refs.map(function (r) { var d = detail(r); return d && d.time; })
      .filter(function (t) { return typeof t === "number"; });
    if (!STEPS && times.length >= 2) text += "\n  lasted " + ((times[times.length - 1] - times[0]) / 1e6).toFixed(3) + " ms";
    return text;
  }
  function showTip(e, text) {
    tip.textContent = text;
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 8) x = Math.max(8, e.clientX - w - 14);
    if (y + h > window.innerHeight - 8) y = Math.max(8, e.clientY - h - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }

  svg.addEventListener("mousemove", function (e) {
    var p = plotPoint(e);
    if (drag) { tx = drag.tx + (p.x - drag.x); clamp(); schedule(); }
    var t = toT(p.x);
    if (p.x < 0 || t < 0 || t > END) {
      cursor.setAttribute("x1", -10); cursor.setAttribute("x2", -10); readout.textContent = "";
    } else {
      cursor.setAttribute("x1", p.x.toFixed(1));
      cursor.setAttribute("x2", p.x.toFixed(1));
      var parts = [STEPS ? "step " + t.toFixed(1) : "true time " + (t / 1e9).toFixed(3) + " s"];
      Object.keys(data.clocks).forEach(function (node) {
        var l = localAt(node, t);
        if (l !== null) parts.push(node + " local " + (l / 1e9).toFixed(3) + " s");
      });
      readout.textContent = parts.join(" · ");
    }
    var target = e.target.closest ? e.target.closest("[data-e]") : null;
    if (target && svg.contains(target)) showTip(e, tipText(target.getAttribute("data-e").split(" ")));
    else tip.hidden = true;
  });
  svg.addEventListener("mouseleave", function () { tip.hidden = true; readout.textContent = ""; });

  // A link to report.html#t=12.003 (seconds, or a step number) opens zoomed in on that time.
  var wanted = /(?:^#|&)t=([0-9.]+)/.exec(window.location.hash);
  if (wanted) zoomTo(STEPS ? +wanted[1] : +wanted[1] * 1e9);

  // The narrative and the violations point into the timeline.
  var focused = [];
  function focus(refs) {
    focused.forEach(function (el) { el.classList.remove("focus"); });
    focused = [];
    refs.forEach(function (r) { (byRef[r] || []).forEach(function (el) { el.classList.add("focus"); focused.push(el); }); });
  }
  each(document.querySelectorAll("#narrative li, .violation, .entries li, .occurrences li"), function (el) {
    var refs = (el.getAttribute("data-e") || "").split(" ").filter(function (r) { return r !== ""; });
    el.addEventListener("mouseenter", function () { focus(refs); });
    el.addEventListener("mouseleave", function () { focus([]); });
    el.addEventListener("click", function (e) {
      e.stopPropagation();
      var t = el.getAttribute("data-t");
      if (t === null && refs.length) { var d = detail(refs[0]); if (d) t = d.time; }
      if (t !== null && t !== undefined) zoomTo(+t);
      focus(refs);
    });
  });
  // Lay the labels out once before the first zoom, so that the page as opened shows no label
  // cut by the plot's edge or running into its neighbour.
  apply();
  landOnAnchor();
})();
