(function () {
  var SVG_NS = 'http://www.w3.org/2000/svg';
  var COLORS = { 'amqp-client': '#e8710a', 'warren': '#1a73e8' };
  var SPARE = ['#188038', '#a142f4', '#d93025', '#007b83'];
  var DASHES = ['', '7 4', '2 3', '10 3 2 3', '4 4'];
  var LEGEND_PER_ROW = 5;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVG_NS, tag);
    for (var k in attrs || {}) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function fmt(v, decimals) {
    if (v === null || v === undefined || isNaN(v)) { return '-'; }
    return Number(v).toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  }
  function niceStep(span, count) {
    var raw = span / count;
    var pow = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var n = raw / pow;
    return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * pow;
  }
  function shortNumber(v) {
    var a = Math.abs(v);
    if (a >= 1e9) { return fmt(v / 1e9, a % 1e9 === 0 ? 0 : 1) + 'G'; }
    if (a >= 1e6) { return fmt(v / 1e6, a % 1e6 === 0 ? 0 : 1) + 'M'; }
    if (a >= 1e4) { return fmt(v / 1e3, a % 1e3 === 0 ? 0 : 1) + 'k'; }
    return fmt(v, a < 10 && a % 1 !== 0 ? 1 : 0);
  }
  function runLabel(run, data) {
    var many = data.runs.filter(function (r) { return r.client === run.client; }).length > 1;
    return run.client + (many ? ' #' + run.run : '');
  }
  function runStyle(run, data) {
    var color = COLORS[run.client];
    if (!color) { color = SPARE[data.clients.indexOf(run.client) % SPARE.length]; }
    return { color: color, dash: DASHES[(run.run - 1) % DASHES.length] };
  }

  // A latency axis's unit, chosen once per chart from its largest value, so every tick reads in the same unit.
  function latencyUnit(maxUs) {
    if (maxUs >= 1e6) { return { div: 1e6, name: 's' }; }
    if (maxUs >= 1e3) { return { div: 1e3, name: 'ms' }; }
    return { div: 1, name: 'us' };
  }
  function unitNumber(v) {
    var a = Math.abs(v);
    var decimals = a === 0 || a >= 10 ? 0 : a >= 1 ? 1 : a >= 0.1 ? 2 : 3;
    return fmt(v, decimals).replace(/\.0+$/, '');
  }

  // One chart; series: [{label, color, dash, run, points: [[x, y], ...]}]. Returns null without data.
  // o.latency: y values are microseconds, drawn on a log scale in one unit (us, ms or s) with ticks at 1, 2 and 5
  // of each decade (only 1 and 10 when the values span more than three decades).
  function lineChart(o) {
    var W = 1180, L = 84, R = 24, B = 48;
    var xs = [], ys = [];
    o.series.forEach(function (s) {
      s.points = s.points.filter(function (p) {
        return p[1] !== null && p[1] !== undefined && isFinite(p[1]) && (!o.latency || p[1] > 0);
      });
      s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });
    });
    o.series = o.series.filter(function (s) { return s.points.length > 0; });
    if (ys.length === 0) { return null; }
    var T = 44 + Math.ceil(o.series.length / LEGEND_PER_ROW) * 16, H = T + 260 + B;
    var xmin = Math.min.apply(null, xs), xmax = Math.max.apply(null, xs);
    if (o.xmin !== undefined) { xmin = o.xmin; }
    if (xmax === xmin) { xmax = xmin + 1; }
    var ymax = Math.max.apply(null, ys), ymin = 0;
    var yLog = !!o.latency;
    var yTicks = [];
    var yFormat = o.yFormat || shortNumber;
    var yLabel = o.yLabel;
    if (yLog) {
      var unit = latencyUnit(ymax);
      yFormat = function (t) { return unitNumber(t / unit.div); };
      yLabel = o.yLabel + ' (' + unit.name + ', log scale)';
      var lo = Math.floor(Math.log(Math.min.apply(null, ys)) / Math.LN10 + 1e-9);
      var hi = Math.ceil(Math.log(ymax) / Math.LN10 - 1e-9);
      if (hi <= lo) { hi = lo + 1; }
      var steps = hi - lo > 3 ? [1] : [1, 2, 5];
      for (var k = lo; k <= hi; k++) {
        steps.forEach(function (m) { if (k < hi || m === 1) { yTicks.push(m * Math.pow(10, k)); } });
      }
      ymin = Math.pow(10, lo); ymax = Math.pow(10, hi);
    } else {
      if (ymax <= 0) { ymax = 1; }
      var step = niceStep(ymax, 5);
      ymax = Math.ceil(ymax / step) * step;
      for (var v = 0; v <= ymax + step / 2; v += step) { yTicks.push(v); }
    }
    function px(x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); }
    function py(y) {
      var f = yLog ? (Math.log(y) - Math.log(ymin)) / (Math.log(ymax) - Math.log(ymin)) : (y - ymin) / (ymax - ymin);
      return H - B - f * (H - T - B);
    }
    var svg = svgEl('svg', { width: '100%', viewBox: '0 0 ' + W + ' ' + H, 'data-chart': o.id,
      role: 'img', 'aria-label': o.title });
    svg.appendChild(svgEl('text', { x: L, y: 20, 'class': 'title' }, o.title));
    yTicks.forEach(function (t) {
      var y = py(t);
      svg.appendChild(svgEl('line', { x1: L, x2: W - R, y1: y, y2: y, 'class': 'grid' }));
      svg.appendChild(svgEl('text', { x: L - 8, y: y + 4, 'text-anchor': 'end', 'data-tick': 'y' },
        yFormat(t)));
    });
    var xTicks = o.xTicks;
    if (!xTicks) {
      xTicks = [];
      var xstep = niceStep(xmax - xmin, 10);
      for (var x = Math.ceil(xmin / xstep) * xstep; x <= xmax + 1e-9; x += xstep) { xTicks.push([x, shortNumber(x)]); }
    }
    xTicks.forEach(function (t) {
      var x = px(t[0]);
      svg.appendChild(svgEl('line', { x1: x, x2: x, y1: H - B, y2: H - B + 5, 'class': 'axis' }));
      svg.appendChild(svgEl('text', { x: x, y: H - B + 19, 'text-anchor': 'middle', 'data-tick': 'x' }, t[1]));
    });
    svg.appendChild(svgEl('line', { x1: L, x2: L, y1: T, y2: H - B, 'class': 'axis' }));
    svg.appendChild(svgEl('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis' }));
    svg.appendChild(svgEl('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle' }, o.xLabel));
    svg.appendChild(svgEl('text', { x: 16, y: (T + H - B) / 2, 'text-anchor': 'middle',
      transform: 'rotate(-90 16 ' + (T + H - B) / 2 + ')' }, yLabel));
    o.series.forEach(function (s) {
      var pts = s.points.map(function (p) { return px(p[0]).toFixed(1) + ',' + py(p[1]).toFixed(1); }).join(' ');
      var max = Math.max.apply(null, s.points.map(function (p) { return p[1]; }));
      svg.appendChild(svgEl('polyline', { points: pts, fill: 'none', stroke: s.color, 'stroke-width': 2,
        'stroke-dasharray': s.dash, 'data-run': s.run, 'data-series': s.label,
        'data-points': s.points.length, 'data-max': Math.round(max) }));
      if (s.points.length === 1) {
        svg.appendChild(svgEl('circle', { cx: px(s.points[0][0]), cy: py(s.points[0][1]), r: 3, fill: s.color }));
      }
    });
    // the legend: a row of entries under the title, wrapping, above the plot
    o.series.forEach(function (s, i) {
      var lx = L + (i % LEGEND_PER_ROW) * 190, ly = 34 + Math.floor(i / LEGEND_PER_ROW) * 16;
      svg.appendChild(svgEl('line', { x1: lx, x2: lx + 26, y1: ly, y2: ly, stroke: s.color,
        'stroke-width': 2, 'stroke-dasharray': s.dash }));
      svg.appendChild(svgEl('text', { x: lx + 32, y: ly + 4, 'data-legend': s.label }, s.label));
    });
    return svg;
  }

  function addChart(container, o) {
    var svg = lineChart(o);
    if (svg) { container.appendChild(svg); } else {
      container.appendChild(el('p', { 'class': 'empty', 'data-chart-empty': o.id }, o.title + ': nothing measured.'));
    }
  }

  function timelineSeries(data, field) {
    return data.runs.map(function (run, i) {
      var idx = run.timeline_fields.indexOf(field);
      var st = runStyle(run, data);
      return { label: runLabel(run, data), color: st.color, dash: st.dash, run: data.index[i],
        points: run.timeline.map(function (p) { return [p[0], p[idx]]; }) };
    });
  }

  function nines(p) { return p >= 100 ? 5 : -Math.log(1 - p / 100) / Math.LN10; }
  var PCT_TICKS = [[50, 'p50'], [90, 'p90'], [99, 'p99'], [99.9, 'p99.9'], [99.99, 'p99.99'], [100, 'max']]
    .map(function (t) { return [nines(t[0]), t[1]]; });

  function percentileSeries(data, key) {
    return data.runs.map(function (run, i) {
      var st = runStyle(run, data);
      return { label: runLabel(run, data), color: st.color, dash: st.dash, run: data.index[i],
        points: (run[key] || []).map(function (p) { return [nines(p[0]), p[1]]; }) };
    });
  }

  function renderSummary(data) {
    var div = document.getElementById('summary');
    div.appendChild(el('h2', {}, 'Runs' + data.heading));
    var cols = [
      ['client', 'client', null], ['duration_s', 'time (s)', 1], ['sent', 'sent', 0], ['confirmed', 'confirmed', 0],
      ['received', 'received', 0], ['sent_rate', 'sent msg/s', 0], ['confirmed_rate', 'confirmed msg/s', 0],
      ['received_rate', 'received msg/s', 0], ['sent_mb_s', 'sent MB/s', 2], ['received_mb_s', 'received MB/s', 2],
      ['confirm_latency_p50_us', 'confirm p50 (us)', 0], ['confirm_latency_p99_us', 'confirm p99 (us)', 0],
      ['consumer_latency_p50_us', 'consumer p50 (us)', 0], ['consumer_latency_p99_us', 'consumer p99 (us)', 0],
      ['consumer_latency_p999_us', 'consumer p99.9 (us)', 0], ['consumer_latency_max_us', 'consumer max (us)', 0],
      ['backlog_end', 'backlog at the end', 0], ['steal_percent', 'CPU stolen by the hypervisor (%)', 1],
      ['cpu_ns_per_msg', 'CPU ns/msg', 0], ['producer_cpu_ns_per_msg', 'of it producer threads', 0],
      ['other_cpu_ns_per_msg', 'of it other threads', 0], ['broker_cpu_ns_per_msg', 'broker CPU ns/msg', 0],
      ['ctx_switches_per_msg', 'context switches/msg', 2],
      ['alloc_bytes_per_msg', 'alloc B/msg', 0],
      ['peak_heap_bytes', 'peak heap (MiB)', -1], ['live_heap_peak_bytes', 'live heap after GC (MiB)', -1],
      ['peak_direct_bytes', 'peak direct (MiB)', -1]];
    // one row per figure, one column per run
    var table = el('table', { id: 'runs' + data.suffix });
    var head = el('tr');
    head.appendChild(el('th', {}, 'figure'));
    data.runs.forEach(function (run, i) {
      head.appendChild(el('th', { 'data-run': data.index[i] }, runLabel(run, data)));
    });
    table.appendChild(head);
    cols.slice(1).forEach(function (c) {
      var tr = el('tr', { 'data-key': c[0] });
      tr.appendChild(el('td', {}, c[1]));
      data.runs.forEach(function (run, i) {
        var v = run[c[0]];
        var text = c[2] < 0 ? (v === null ? '-' : fmt(v / 1048576, 1)) : fmt(v, c[2]);
        tr.appendChild(el('td', { 'data-run': data.index[i], 'data-key': c[0],
          'data-value': v === null ? '' : String(v) }, text));
      });
      table.appendChild(tr);
    });
    div.appendChild(table);
    data.runs.forEach(function (run, i) {
      var bits = [runLabel(run, data) + ': ' + run.producers + ' producer(s), ' + run.consumers + ' consumer(s), '
        + run.size + ' B', 'to ' + run.target, 'stopped by ' + run.stopped_by];
      if (run.transport) { bits.push('transport ' + run.transport); }
      if (run.confirm !== null) { bits.push('confirm ' + run.confirm); }
      if (run.rate !== null) { bits.push('rate ' + run.rate + ' msg/s per producer'); }
      if (run.peer) { bits.push('peer read ' + fmt(run.peer.publish_rate, 0) + ' publishes/s, wrote '
        + fmt(run.peer.delivery_rate, 0) + ' deliveries/s'); }
      if (run.failure) { bits.push('FAILED: ' + run.failure); }
      div.appendChild(el('p', { 'class': 'meta', 'data-run-meta': data.index[i] }, bits.join('; ')));
    });
  }

  function renderComparison(data) {
    if (!data.comparison) { return; }
    var div = document.getElementById('comparison');
    div.appendChild(el('h2', {}, 'Comparison' + data.heading));
    var table = el('table', { id: 'comparison-table' + data.suffix });
    data.comparison.forEach(function (row, r) {
      var tr = el('tr');
      row.forEach(function (cell) { tr.appendChild(el(r === 0 ? 'th' : 'td', {}, cell)); });
      table.appendChild(tr);
    });
    div.appendChild(table);
  }

  function renderHeadline(data) {
    var div = document.getElementById('headline');
    var first = data.runs[0];
    var perClient = {};
    data.runs.forEach(function (r) { perClient[r.client] = (perClient[r.client] || 0) + 1; });
    var bits = [first.producers + ' producer(s), ' + first.consumers + ' consumer(s), ' + first.size + ' B messages',
      first.rate !== null ? 'each producer paced at ' + fmt(first.rate, 0) + ' msg/s' : 'unthrottled producers',
      first.confirm !== null ? 'confirms, ' + first.confirm + ' outstanding' : 'no confirms',
      'to ' + first.target,
      data.clients.map(function (c) { return perClient[c] + ' run(s) of ' + c; }).join(', ') + ', alternating'];
    div.appendChild(el('p', { id: 'settings' + data.suffix }, 'Settings' + data.heading + ': ' + bits.join('; ') + '.'));
    if (data.headline && data.headline.length > 0) {
      div.appendChild(el('h2', {}, 'Headline' + data.heading + ' (medians over runs, min-max in brackets)'));
      var ul = el('ul', { id: 'headline-list' + data.suffix });
      data.headline.forEach(function (line) { ul.appendChild(el('li', {}, line)); });
      div.appendChild(ul);
    }
    var warned = data.runs.filter(function (r) { return r.backlog_warning; });
    warned.forEach(function (r) {
      div.appendChild(el('p', { 'class': 'warning', 'data-warning': runLabel(r, data) },
        'Warning, ' + runLabel(r, data) + ': ' + r.backlog_warning));
    });
  }

  // One target's runs (the broker, or one loopback peer): compared, tabled and charted apart from another
  // target's, whose runs measure another side of the client (publishing to a sink, consuming from a source).
  function targetView(data, group, k, several) {
    return { generated: data.generated, target: group.target, clients: group.clients,
      comparison: group.comparison, headline: group.headline, index: group.runs,
      runs: group.runs.map(function (i) { return data.runs[i]; }),
      suffix: k === 0 ? '' : '-' + (k + 1), heading: several ? ', to ' + group.target : '' };
  }

  function render(data) {
    document.getElementById('meta').textContent = data.runs.length + ' run(s) of ' + data.clients.join(', ')
      + '; generated ' + data.generated;
    var several = data.targets.length > 1;
    data.targets.forEach(function (group, k) {
      var view = targetView(data, group, k, several);
      renderHeadline(view);
      renderComparison(view);
      renderSummary(view);
      renderCharts(view);
    });
  }

  function renderCharts(data) {
    var charts = document.getElementById('charts');
    if (data.heading) {
      charts = charts.appendChild(el('div', { 'data-target': data.target }));
      charts.appendChild(el('h2', {}, 'Charts' + data.heading));
    }
    charts.appendChild(el('h2', {}, 'Throughput over time'));
    addChart(charts, { id: 'sent-rate', title: 'Sent (msg/s)', xLabel: 'time (s)', yLabel: 'msg/s', xmin: 0,
      series: timelineSeries(data, 'sent_rate') });
    if (data.runs.some(function (r) { return r.confirm !== null; })) {
      addChart(charts, { id: 'confirmed-rate', title: 'Confirmed (msg/s)', xLabel: 'time (s)', yLabel: 'msg/s', xmin: 0,
        series: timelineSeries(data, 'confirmed_rate') });
    }
    addChart(charts, { id: 'received-rate', title: 'Received (msg/s)', xLabel: 'time (s)', yLabel: 'msg/s', xmin: 0,
      series: timelineSeries(data, 'received_rate') });
    if (data.runs.some(function (r) { return r.backlog_end !== null && r.backlog_end !== undefined; })) {
      charts.appendChild(el('h2', {}, 'Backlog over time'));
      addChart(charts, { id: 'backlog', title: 'Published, not yet received (msgs): flat near 0 when the consumers keep up',
        xLabel: 'time (s)', yLabel: 'messages', xmin: 0, series: timelineSeries(data, 'backlog') });
    }
    charts.appendChild(el('h2', {}, 'Latency over time'));
    [['confirm', 'Confirm'], ['consumer', 'Consumer']].forEach(function (kind) {
      ['p50', 'p99'].forEach(function (p) {
        addChart(charts, { id: kind[0] + '-latency-' + p, title: kind[1] + ' latency ' + p + ' per second',
          xLabel: 'time (s)', yLabel: 'latency', xmin: 0, latency: true,
          series: timelineSeries(data, kind[0] + '_' + p + '_us') });
      });
    });
    charts.appendChild(el('h2', {}, 'Process over time'));
    addChart(charts, { id: 'cpu', title: 'Process CPU (% of one core; the in-process peer\'s threads included)',
      xLabel: 'time (s)', yLabel: '% of a core', xmin: 0, series: timelineSeries(data, 'cpu_pct') });
    addChart(charts, { id: 'heap', title: 'Heap in use (MiB), sampled each second', xLabel: 'time (s)',
      yLabel: 'MiB', xmin: 0, series: timelineSeries(data, 'heap_mib') });
    charts.appendChild(el('h2', {}, 'Latency percentiles over the whole run'));
    addChart(charts, { id: 'confirm-latency-percentiles', title: 'Confirm latency by percentile',
      xLabel: 'percentile', yLabel: 'latency', xTicks: PCT_TICKS, xmin: nines(50), latency: true,
      series: percentileSeries(data, 'confirm_latency_percentiles_us') });
    addChart(charts, { id: 'consumer-latency-percentiles', title: 'Consumer latency by percentile (publish call to the consumer\'s handler)',
      xLabel: 'percentile', yLabel: 'latency', xTicks: PCT_TICKS, xmin: nines(50), latency: true,
      series: percentileSeries(data, 'consumer_latency_percentiles_us') });
    if (data.runs.some(function (r) { return r.peer_receipt_latency_percentiles_us && r.peer_receipt_latency_percentiles_us.length > 0; })) {
      addChart(charts, { id: 'peer-receipt-latency-percentiles',
        title: 'Publish call to the loopback peer\'s receipt, by percentile', xLabel: 'percentile', yLabel: 'latency',
        xTicks: PCT_TICKS, xmin: nines(50), latency: true,
        series: percentileSeries(data, 'peer_receipt_latency_percentiles_us') });
    }
  }

  try {
    render(JSON.parse(document.getElementById('data').textContent));
    document.body.setAttribute('data-rendered', 'ok');
  } catch (e) {
    document.body.setAttribute('data-rendered', 'error');
    document.body.appendChild(el('pre', { id: 'render-error' }, String(e && e.stack ? e.stack : e)));
  }
})();
