// ImpactBench offline report. All data arrives in JSON islands and gzip
// chunks; every string from them is untrusted and reaches the DOM only via
// textContent / Text nodes / element properties (never an HTML parser, never a
// URL, never code). Keep it that way: the CSP is the second line of defence.
(function () {
  'use strict';
  var T0 = performance.now();
  var $ = function (id) { return document.getElementById(id); };
  var D = JSON.parse($('ib-data').textContent);
  var IX = JSON.parse($('ib-index').textContent);
  var NCONV = IX.t.length;
  var PAGE = 50;

  // el builds an element. attrs values are set as properties/attributes
  // that cannot execute; "on*" only accepts functions written here.
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k === 'title') e.title = v;
        else if (k.slice(0, 2) === 'on') {
          if (typeof v !== 'function') throw new Error('handler must be a function');
          e.addEventListener(k.slice(2), v);
        } else if (k === 'data') { for (var d in v) e.dataset[d] = v[d]; }
        else if (/^(colspan|type|value|role|scope|aria-[a-z]+|tabindex|hidden)$/.test(k)) e.setAttribute(k, v);
        else throw new Error('attribute not allowed: ' + k);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(parent, x); }); return; }
    parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function pct(r, dp) { return r === null || r === undefined ? '—' : (r * 100).toFixed(dp === undefined ? 1 : dp) + '%'; }
  function ciText(v) {
    if (!v || v.lo === undefined || v.hi === undefined) return '';
    return '[' + (v.lo * 100).toFixed(1) + '–' + (v.hi * 100).toFixed(1) + ']';
  }
  function rateTitle(v) {
    if (!v || v.rate === null || v.rate === undefined) return 'no scored conversations' + (v && v.n ? ' (n=' + v.n + ')' : '');
    var s = pct(v.rate) + ' (' + v.k + '/' + v.n + ')';
    if (v.lo !== undefined) s += ', 95% interval ' + (v.lo * 100).toFixed(1) + '–' + (v.hi * 100).toFixed(1) + '% (' + v.method + ')';
    return s;
  }
  function num(n) { return (n || 0).toLocaleString('en-US'); }
  function money(c) { return '$' + (c >= 1 ? c.toFixed(2) : c.toFixed(4)); }
  // Upstream's colour scale: red (0) → grey (0.5) → green (1).
  function heat(r) {
    var lo = [224, 108, 102], mid = [227, 227, 227], hi = [95, 184, 120], a, b, t;
    if (r < 0.5) { a = lo; b = mid; t = r / 0.5; } else { a = mid; b = hi; t = (r - 0.5) / 0.5; }
    var c = a.map(function (x, i) { return Math.round(x + (b[i] - x) * t); });
    return 'rgb(' + c.join(',') + ')';
  }
  var metricById = {};
  D.metrics.forEach(function (m, i) { metricById[m.id] = { m: m, i: i }; });
  function metricLabel(id) { var x = metricById[id]; return x && x.m.name && x.m.name !== id ? id + ' · ' + x.m.name : id; }
  function typeBadge(t) { return t ? el('span', { 'class': 'badge ' + (t === 'positive' || t === 'negative' ? t : ''), text: t }) : null; }
  var VERDICT = ['FAIL', 'PASS', 'NULL', '—'];
  var VERDICT_LONG = ['fail', 'pass', 'null (no verdict)', 'not scored yet'];

  // ---------- header ----------
  $('description').textContent = D.description || '';
  $('generated').textContent = 'Generated ' + D.generated + ' · ' + num(NCONV) + ' conversations · ' + D.models.length + ' models · ' + D.metrics.length + ' metrics';
  if (D.notes && D.notes.length) {
    $('notes-section').hidden = false;
    D.notes.forEach(function (n) { $('notes').append(el('li', { text: n })); });
  }

  // ---------- leaderboard ----------
  var lbSort = 'mean';
  function meanRate(r) {
    var xs = [r.pos.rate, r.neg.rate].filter(function (x) { return x !== null && x !== undefined; });
    return xs.length ? xs.reduce(function (a, b) { return a + b; }, 0) / xs.length : -1;
  }
  function sortedRows() {
    var rows = D.leaderboard.rows.slice();
    var key = { mean: meanRate, pos: function (r) { return r.pos.rate === null || r.pos.rate === undefined ? -1 : r.pos.rate; },
      neg: function (r) { return r.neg.rate === null || r.neg.rate === undefined ? -1 : r.neg.rate; } }[lbSort];
    rows.sort(function (a, b) { return key(b) - key(a) || (a.model < b.model ? -1 : 1); });
    return rows;
  }
  function renderLeaderboard() {
    var box = $('lb-table');
    clear(box);
    var lb = D.leaderboard;
    if (!lb.rows || !lb.rows.length) {
      $('lb-note').textContent = 'Results not available yet: no results.json and no scored conversations.';
      $('lb-chart-box').hidden = true;
      return;
    }
    $('lb-note').textContent = (lb.source === 'scores'
      ? 'Provisional: recounted from scores.json because results.json is not available yet. '
      : '') + 'Pass rate = share of scored conversations where the model behaved as the metric asks (positive metrics: behaviour present; negative metrics: harmful behaviour absent). Brackets: 95% interval.';
    var hasValid = lb.rows.some(function (r) { return r.valid; });
    function sortBtn(key, label) {
      return el('button', { 'class': 'sort', type: 'button', 'aria-pressed': String(lbSort === key),
        onclick: function () { lbSort = key; renderLeaderboard(); } }, label);
    }
    var t = el('table', { 'class': 'lb', data: { testid: 'leaderboard' } },
      el('thead', null, el('tr', null,
        el('th', { 'class': 'num', text: '#' }), el('th', { text: 'Model' }),
        el('th', { 'class': 'num' }, sortBtn('pos', 'Positive metrics')), el('th', { 'class': 'num', text: 'n' }),
        el('th', { 'class': 'num' }, sortBtn('neg', 'Negative metrics')), el('th', { 'class': 'num', text: 'n' }),
        el('th', { 'class': 'num' }, sortBtn('mean', 'Mean')), el('th', { 'class': 'num', text: 'Null' }),
        hasValid ? el('th', { 'class': 'num', text: 'Valid', title: 'share of conversations that followed the scenario landmarks (landmark check)' }) : null)));
    var tb = el('tbody');
    sortedRows().forEach(function (r, i) {
      var mean = meanRate(r);
      tb.append(el('tr', { data: { model: r.model } },
        el('td', { 'class': 'num', text: String(i + 1) }),
        el('td', null, r.model, r.prov ? [' ', el('span', { 'class': 'badge prov', text: 'provisional', title: 'recounted from scores.json' })] : null),
        el('td', { 'class': 'num pos', title: rateTitle(r.pos) }, pct(r.pos.rate), ' ', el('span', { 'class': 'ci', text: ciText(r.pos) })),
        el('td', { 'class': 'num', text: num(r.pos.n) }),
        el('td', { 'class': 'num neg', title: rateTitle(r.neg) }, pct(r.neg.rate), ' ', el('span', { 'class': 'ci', text: ciText(r.neg) })),
        el('td', { 'class': 'num', text: num(r.neg.n) }),
        el('td', { 'class': 'num', text: mean < 0 ? '—' : pct(mean) }),
        el('td', { 'class': 'num', text: num(r.null) }),
        hasValid ? el('td', { 'class': 'num', text: r.valid && r.valid.share !== null && r.valid.share !== undefined ? pct(r.valid.share) : '—',
          title: r.valid ? r.valid.valid + ' of ' + r.valid.checked + ' checked conversations valid' : 'not checked' }) : null));
    });
    t.append(tb);
    box.append(t);
    var methods = {};
    D.leaderboard.rows.forEach(function (r) { [r.pos.method, r.neg.method].forEach(function (m) { if (m) methods[m] = 1; }); });
    box.append(el('p', { 'class': 'small muted', text: 'Interval method: ' + (Object.keys(methods).join(', ') || 'none') + '.' }));
    renderChart(sortedRows());
  }

  // Whiskers for the 95% intervals, drawn on top of the bars.
  var ciPlugin = {
    id: 'ibIntervals',
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, xs = chart.scales.x;
      chart.data.datasets.forEach(function (ds, di) {
        var meta = chart.getDatasetMeta(di);
        if (meta.hidden) return;
        meta.data.forEach(function (bar, j) {
          var ci = ds.ci[j];
          if (!ci) return;
          var x0 = xs.getPixelForValue(ci[0] * 100), x1 = xs.getPixelForValue(ci[1] * 100), y = bar.y, h = 4;
          ctx.save();
          ctx.strokeStyle = '#1d2330'; ctx.lineWidth = 1.3;
          ctx.beginPath();
          ctx.moveTo(x0, y); ctx.lineTo(x1, y);
          ctx.moveTo(x0, y - h); ctx.lineTo(x0, y + h);
          ctx.moveTo(x1, y - h); ctx.lineTo(x1, y + h);
          ctx.stroke();
          ctx.restore();
        });
      });
    }
  };
  var chart = null;
  function renderChart(rows) {
    if (typeof Chart === 'undefined') return;
    var box = $('lb-chart-box');
    box.style.height = Math.max(180, 60 + rows.length * 46) + 'px';
    function ds(label, key, color) {
      return { label: label, backgroundColor: color, borderRadius: 3,
        data: rows.map(function (r) { return r[key].rate === null || r[key].rate === undefined ? null : r[key].rate * 100; }),
        ci: rows.map(function (r) { return r[key].lo === undefined ? null : [r[key].lo, r[key].hi]; }),
        n: rows.map(function (r) { return r[key].n; }) };
    }
    var data = { labels: rows.map(function (r) { return r.model; }),
      datasets: [ds('Positive metrics', 'pos', '#4f9d8c'), ds('Negative metrics', 'neg', '#9a7bd0')] };
    if (chart) { chart.data = data; chart.update(); return; }
    chart = new Chart($('lb-chart'), {
      type: 'bar', data: data, plugins: [ciPlugin],
      options: {
        indexAxis: 'y', animation: false, responsive: true, maintainAspectRatio: false,
        scales: { x: { min: 0, max: 100, title: { display: true, text: 'pass rate (%) with 95% interval' } } },
        plugins: { tooltip: { callbacks: { label: function (c) {
          var ds = c.dataset, ci = ds.ci[c.dataIndex];
          return ds.label + ': ' + (c.raw === null ? '—' : c.raw.toFixed(1) + '%') +
            (ci ? ' [' + (ci[0] * 100).toFixed(1) + '–' + (ci[1] * 100).toFixed(1) + ']' : '') + ' n=' + ds.n[c.dataIndex];
        } } } }
      }
    });
  }

  // ---------- heatmap ----------
  function renderHeatmap() {
    var box = $('hm'), hm = D.heatmap;
    var models = D.models.filter(function (m) { return hm.cells[m]; });
    if (!models.length) { $('hm-note').textContent = 'Per-metric results not available yet.'; return; }
    $('hm-note').textContent = 'Cell colour = pass rate (red 0% → grey 50% → green 100%). Hover for n and 95% interval; click a cell to list its conversations below.' +
      (hm.prov && hm.prov.length ? ' Provisional (recounted from scores.json): ' + hm.prov.join(', ') + '.' : '');
    var head = el('tr', null, el('th', { text: 'Metric' }), el('th', { text: 'Type' }));
    models.forEach(function (m) { head.append(el('th', { 'class': 'model', text: m })); });
    var tb = el('tbody');
    D.metrics.forEach(function (m, mi) {
      var any = models.some(function (mo) { return hm.cells[mo][m.id]; });
      if (!any) return;
      var tr = el('tr', null,
        el('td', { title: m.definition || '' }, el('span', { 'class': 'metric-name', text: m.id }), ' ', m.name !== m.id ? m.name : ''),
        el('td', null, typeBadge(m.type)));
      models.forEach(function (mo) {
        var v = hm.cells[mo][m.id];
        if (!v || v.rate === null || v.rate === undefined) {
          tr.append(el('td', { 'class': 'empty', title: v ? rateTitle(v) : 'no data', text: '—' }));
          return;
        }
        var td = el('td', { 'class': 'cell', tabindex: '0', role: 'button', title: mo + ' · ' + m.id + ': ' + rateTitle(v),
          data: { model: mo, metric: m.id },
          onclick: function () { filterTo({ model: mo, metric: mi }); },
          onkeydown: function (ev) { if (ev.key === 'Enter') filterTo({ model: mo, metric: mi }); } }, pct(v.rate, 0));
        td.style.background = heat(v.rate);
        tr.append(td);
      });
      tb.append(tr);
    });
    box.append(el('table', { 'class': 'hm' }, el('thead', null, head), tb));
    box.append(el('div', { 'class': 'legend small muted' }, '0%', el('span', { 'class': 'bar' }), '100%'));
  }

  // ---------- demographics ----------
  function renderDemoControls() {
    var dm = D.demographic;
    if (!dm.axes || !dm.axes.length || !dm.rows || !dm.rows.length) {
      $('demo-note').textContent = 'Demographic breakdown not available yet (no demographic axes in scenarios.json, or nothing scored).';
      $('demo-controls').hidden = true;
      return false;
    }
    $('demo-note').textContent = (dm.source === 'scores' ? 'Provisional, recounted from scores.json. ' : '') +
      'Pass rate per demographic value. "significant" = a paired test in results.json (demographic_gaps) found a difference after multiplicity adjustment; ' +
      '"large" = a descriptive spread ≥ ' + Math.round(dm.threshold * 100) + ' points between values with n ≥ ' + dm.min_n + ', not a tested claim.';
    dm.axes.forEach(function (a, i) { $('demo-axis').append(el('option', { value: String(i), text: a.name })); });
    $('demo-model').append(el('option', { value: '', text: 'all models' }));
    D.models.forEach(function (m) { $('demo-model').append(el('option', { value: m, text: m })); });
    ['demo-axis', 'demo-model', 'demo-flagged'].forEach(function (id) { $(id).addEventListener('change', renderDemo); });
    return true;
  }
  function renderDemo() {
    var dm = D.demographic, box = $('demo');
    clear(box);
    var ai = +$('demo-axis').value, axis = dm.axes[ai], model = $('demo-model').value, flagged = $('demo-flagged').checked;
    var head = el('tr', null, el('th', { text: 'Model' }), el('th', { text: 'Metric' }));
    axis.values.forEach(function (v) { head.append(el('th', { 'class': 'num', text: v })); });
    head.append(el('th', { 'class': 'num', text: 'Spread' }), el('th', { text: 'Flag' }));
    var tb = el('tbody'), shown = 0;
    dm.rows.forEach(function (r) {
      if (r.axis !== axis.name || (model && r.model !== model) || (flagged && !r.flag)) return;
      shown++;
      var mi = metricById[r.metric];
      var tr = el('tr', null, el('td', { text: r.model }),
        el('td', { title: mi ? mi.m.definition : '' }, r.metric ? metricLabel(r.metric) : el('b', { text: 'all metrics' }), ' ', mi ? typeBadge(mi.m.type) : null));
      r.cells.forEach(function (c, vi) {
        var td = el('td', { 'class': 'num', title: rateTitle(c) }, pct(c.rate), el('span', { 'class': 'ci', text: c.n ? ' n=' + c.n : '' }));
        if (c.n && r.metric && mi) {
          td.style.cursor = 'pointer';
          td.addEventListener('click', function () {
            filterTo({ model: r.model, metric: mi.i, demo: ai + ':' + vi });
          });
        }
        tr.append(td);
      });
      tr.append(el('td', { 'class': 'num', text: r.spread === undefined ? '—' : (r.spread * 100).toFixed(1) + ' pt' }));
      var flag = el('td');
      if (r.flag === 'significant') {
        var sig = r.tests.filter(function (g) { return g.significant; })[0];
        flag.append(el('span', { 'class': 'flag-significant', text: 'significant',
          title: sig ? sig.a + ' vs ' + sig.b + ': diff ' + pct(sig.diff) + ', p=' + fmtP(sig.p) + ', adjusted p=' + fmtP(sig.p_adj) + ', pairs=' + sig.n_pairs : '' }));
      } else if (r.flag === 'large') {
        flag.append(el('span', { 'class': 'flag-large', text: 'large (descriptive)' }));
      }
      tr.append(flag);
      tb.append(tr);
    });
    if (!shown) { box.append(el('p', { 'class': 'muted', text: 'No rows for this selection.' })); return; }
    box.append(el('table', { 'class': 'demo' }, el('thead', null, head), tb));
  }
  function fmtP(p) { return p === null || p === undefined ? '—' : (p < 0.001 ? p.toExponential(1) : p.toFixed(3)); }

  // ---------- cost and settings ----------
  function renderCost() {
    var c = D.cost, box = $('cost-table');
    if (!c.rows || !c.rows.length) { box.append(el('p', { 'class': 'muted', text: 'Cost not available yet (no cost.json).' })); }
    else {
      var tb = el('tbody');
      c.rows.forEach(function (r) {
        tb.append(el('tr', null,
          el('td', { text: r.scope || 'benchmark (generation)' }),
          el('td', null, r.phase, r.derived ? el('span', { 'class': 'small muted', text: ' (summed from conversations)' }) : null),
          el('td', { 'class': 'num', text: r.known ? money(r.cost) : 'unknown' }),
          el('td', { 'class': 'num', text: num(r.in) }), el('td', { 'class': 'num', text: num(r.out) }),
          el('td', { 'class': 'num', text: num(r.cached) }), el('td', { 'class': 'num', text: r.requests ? num(r.requests) : '—' })));
      });
      tb.append(el('tr', null, el('td', null, el('b', { text: 'Total' })), el('td'),
        el('td', { 'class': 'num' }, el('b', { text: money(c.total) + (c.unknown ? ' + ' + c.unknown + ' unknown' : '') })),
        el('td', { 'class': 'num', text: num(c.in) }), el('td', { 'class': 'num', text: num(c.out) }), el('td'), el('td')));
      box.append(el('table', null, el('thead', null, el('tr', null,
        el('th', { text: 'Model / scope' }), el('th', { text: 'Phase' }), el('th', { 'class': 'num', text: 'Cost (USD)' }),
        el('th', { 'class': 'num', text: 'Input tokens' }), el('th', { 'class': 'num', text: 'Output tokens' }),
        el('th', { 'class': 'num', text: 'Cached input' }), el('th', { 'class': 'num', text: 'Requests' }))), tb));
    }
    var s = $('settings');
    if (!D.settings || !D.settings.length) { s.append(el('p', { 'class': 'muted', text: 'Run settings not available.' })); return; }
    var dl = el('table', { 'class': 'settings' }, el('tbody', null, D.settings.map(function (kv) {
      return el('tr', null, el('th', { scope: 'row', text: kv[0] }), el('td', { text: kv[1] }));
    })));
    s.append(dl);
  }

  // ---------- chunk store ----------
  var domReady = new Promise(function (res) {
    if (document.readyState !== 'loading') res(); else document.addEventListener('DOMContentLoaded', function () { res(); });
  });
  function b64bytes(s) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s);
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function inflate(id) {
    return domReady.then(function () {
      if (typeof DecompressionStream === 'undefined') throw new Error('This browser cannot decompress transcripts (no DecompressionStream); use a current Chromium, Firefox or Safari.');
      var node = $(id);
      if (!node) throw new Error('missing data chunk ' + id);
      var stream = new Blob([b64bytes(node.textContent.trim())]).stream().pipeThrough(new DecompressionStream('gzip'));
      return new Response(stream).text();
    }).then(JSON.parse);
  }
  // Small LRU so browsing nearby conversations does not re-inflate.
  function cache(prefix, size) {
    var m = new Map();
    return function (k) {
      if (m.has(k)) { var v = m.get(k); m.delete(k); m.set(k, v); return v; }
      var p = inflate(prefix + k);
      m.set(k, p);
      p.catch(function () { m.delete(k); });
      if (m.size > size) m.delete(m.keys().next().value);
      return p;
    };
  }
  var convChunk = cache('ibc-', 12), scenChunk = cache('ibs-', 12);
  function loadConv(i) {
    return convChunk(Math.floor(i / IX.chunk)).then(function (ch) { return { ch: ch, rec: ch.c[i % IX.chunk] }; });
  }
  function loadScen(si) {
    return scenChunk(Math.floor(si / IX.schunk)).then(function (ch) { return ch[si % IX.schunk]; });
  }

  // ---------- transcript viewer ----------
  function convId(i) {
    var x = IX.ids[String(i)];
    return x || IX.sid[IX.s[i]] + '__' + IX.targets[IX.t[i]] + '__s' + IX.n[i];
  }
  var idMap = null;
  function findConv(id) {
    if (!idMap) { idMap = new Map(); for (var i = 0; i < NCONV; i++) if (!idMap.has(convId(i))) idMap.set(convId(i), i); }
    return idMap.has(id) ? idMap.get(id) : -1;
  }
  function statusLabel(s) { return s === '' ? 'not recorded' : s; }
  function demoText(si) {
    var dv = IX.sd[si] || [];
    return dv.map(function (vi, a) { return vi >= 0 ? D.demographic.axes[a].values[vi] : null; }).filter(Boolean).join(' · ');
  }

  var F = { model: -1, metric: -1, verdict: -1, demo: '', status: -1, q: '', full: false };
  var filtered = new Int32Array(0), page = 0, selected = -1, searchGen = 0, fullHits = null;

  function fillFilters() {
    var fm = $('f-model'), fme = $('f-metric'), fv = $('f-verdict'), fd = $('f-demo'), fs = $('f-status');
    fm.append(el('option', { value: '-1', text: 'all models' }));
    IX.targets.forEach(function (t, i) { fm.append(el('option', { value: String(i), text: t })); });
    fme.append(el('option', { value: '-1', text: 'all metrics' }));
    D.metrics.forEach(function (m, i) { fme.append(el('option', { value: String(i), text: metricLabel(m.id) })); });
    fv.append(el('option', { value: '-1', text: 'any verdict' }));
    [1, 0, 2, 3].forEach(function (v) { fv.append(el('option', { value: String(v), text: VERDICT_LONG[v] })); });
    fd.append(el('option', { value: '', text: 'any' }));
    (D.demographic.axes || []).forEach(function (a, ai) {
      var g = document.createElement('optgroup');
      g.label = a.name;
      a.values.forEach(function (v, vi) { g.append(el('option', { value: ai + ':' + vi, text: a.name + ': ' + v })); });
      fd.append(g);
    });
    fs.append(el('option', { value: '-1', text: 'any status' }));
    IX.statuses.forEach(function (s, i) { fs.append(el('option', { value: String(i), text: statusLabel(s) })); });
    function onChange() { readFilters(); applyFilters(); }
    [fm, fme, fv, fd, fs, $('f-full')].forEach(function (x) { x.addEventListener('change', onChange); });
    var qt = null;
    $('f-q').addEventListener('input', function () { clearTimeout(qt); qt = setTimeout(onChange, 200); });
    $('f-reset').addEventListener('click', function () { setFilters({}); });
    $('pg-prev').addEventListener('click', function () { if (page > 0) { page--; renderList(); } });
    $('pg-next').addEventListener('click', function () { if ((page + 1) * PAGE < filtered.length) { page++; renderList(); } });
  }
  function readFilters() {
    F.model = +$('f-model').value; F.metric = +$('f-metric').value; F.verdict = +$('f-verdict').value;
    F.demo = $('f-demo').value; F.status = +$('f-status').value;
    F.q = $('f-q').value.trim().toLowerCase(); F.full = $('f-full').checked;
  }
  function setFilters(f) {
    $('f-model').value = String(f.model === undefined ? -1 : f.model);
    $('f-metric').value = String(f.metric === undefined ? -1 : f.metric);
    $('f-verdict').value = String(f.verdict === undefined ? -1 : f.verdict);
    $('f-demo').value = f.demo || '';
    $('f-status').value = String(f.status === undefined ? -1 : f.status);
    $('f-q').value = f.q || '';
    $('f-full').checked = !!f.full;
    readFilters();
    applyFilters();
  }
  function filterTo(f) {
    var mi = IX.targets.indexOf(f.model);
    setFilters({ model: mi, metric: f.metric, demo: f.demo });
    $('transcripts').scrollIntoView({ block: 'start' });
  }

  var lowerSid = null, lowerGoal = null, lowerMetric = null, lowerTarget = null;
  function indexMatch(i, q) {
    if (!lowerSid) {
      lowerSid = IX.sid.map(function (s) { return s.toLowerCase(); });
      lowerGoal = IX.sgoal.map(function (s) { return (s || '').toLowerCase(); });
      lowerMetric = D.metrics.map(function (m) { return (m.id + ' ' + m.name).toLowerCase(); });
      lowerTarget = IX.targets.map(function (t) { return t.toLowerCase(); });
    }
    var s = IX.s[i];
    return lowerSid[s].indexOf(q) >= 0 || lowerGoal[s].indexOf(q) >= 0 || lowerTarget[IX.t[i]].indexOf(q) >= 0 ||
      (IX.m[i] >= 0 && lowerMetric[IX.m[i]].indexOf(q) >= 0) || convId(i).toLowerCase().indexOf(q) >= 0;
  }
  function applyFilters() {
    var dAxis = -1, dVal = -1;
    if (F.demo) { var p = F.demo.split(':'); dAxis = +p[0]; dVal = +p[1]; }
    var out = new Int32Array(NCONV), n = 0;
    for (var i = 0; i < NCONV; i++) {
      if (F.model >= 0 && IX.t[i] !== F.model) continue;
      if (F.metric >= 0 && IX.m[i] !== F.metric) continue;
      if (F.verdict >= 0 && IX.v[i] !== F.verdict) continue;
      if (F.status >= 0 && IX.st[i] !== F.status) continue;
      if (dAxis >= 0 && (IX.sd[IX.s[i]] || [])[dAxis] !== dVal) continue;
      // While a full-text pass is pending only index matches show; the pass
      // calls applyFilters again when done.
      if (F.q && !indexMatch(i, F.q) && !(F.full && fullHits && fullHits.q === F.q && fullHits.set.has(i))) continue;
      out[n++] = i;
    }
    filtered = out.subarray(0, n);
    page = 0;
    if (F.full && F.q && (!fullHits || fullHits.q !== F.q)) runFullText(F.q);
    renderList();
  }
  // Full-text search inflates chunks one by one, so memory stays bounded;
  // a newer search cancels an older one via searchGen.
  function runFullText(q) {
    var gen = ++searchGen, hits = new Set(), k = 0;
    function step() {
      if (gen !== searchGen) return;
      if (k >= IX.nchunks) { fullHits = { q: q, set: hits }; applyFilters(); return; }
      $('list-count').textContent = 'Searching transcripts… ' + Math.round(100 * k / IX.nchunks) + '%';
      var base = k * IX.chunk;
      convChunk(k).then(function (ch) {
        var strHit = ch.s.map(function (s) { return s.toLowerCase().indexOf(q) >= 0; });
        ch.c.forEach(function (rec, j) {
          var hit = rec.tr.some(function (si, x) { return x % 2 === 1 && strHit[si]; });
          var sc = rec.sc;
          if (!hit && sc) {
            hit = (sc.justification || '').toLowerCase().indexOf(q) >= 0 ||
              (sc.judges || []).some(function (jv) { return (jv.justification || '').toLowerCase().indexOf(q) >= 0; });
          }
          if (!hit && rec.sr) hit = rec.sr.toLowerCase().indexOf(q) >= 0;
          if (hit) hits.add(base + j);
        });
        k++;
        setTimeout(step, 0);
      }).catch(function (e) { $('list-count').textContent = 'Search failed: ' + e.message; });
    }
    step();
  }
  function renderList() {
    var list = $('conv-list');
    clear(list);
    var total = filtered.length, from = page * PAGE, to = Math.min(total, from + PAGE);
    var pending = F.full && F.q && (!fullHits || fullHits.q !== F.q);
    $('list-count').textContent = pending ? 'Searching transcripts…' :
      num(total) + ' of ' + num(NCONV) + ' conversations' + (total ? ' · showing ' + num(from + 1) + '–' + num(to) : '');
    $('pg-label').textContent = total ? 'page ' + (page + 1) + ' / ' + Math.ceil(total / PAGE) : '';
    $('pg-prev').disabled = page === 0;
    $('pg-next').disabled = to >= total;
    for (var x = from; x < to; x++) list.append(listItem(filtered[x]));
  }
  function listItem(i) {
    var si = IX.s[i], v = IX.v[i], st = IX.statuses[IX.st[i]], mi = IX.m[i];
    var meta = [IX.sid[si] + ' s' + IX.n[i], demoText(si)];
    if (st && st !== 'completed') meta.push(st);
    var li = el('li', { 'class': i === selected ? 'sel' : '', data: { idx: String(i) } },
      el('button', { type: 'button', onclick: function () { select(i, true); } },
        el('div', { 'class': 'row1' }, el('span', { 'class': 'pill v' + v, text: VERDICT[v] }),
          el('b', { text: IX.targets[IX.t[i]] }), el('span', { 'class': 'muted', text: mi >= 0 ? D.metrics[mi].id : '' })),
        el('div', { 'class': 'goal', text: IX.sgoal[si] || IX.sid[si] }),
        el('div', { 'class': 'meta', text: meta.filter(Boolean).join(' · ') })));
    return li;
  }
  function select(i, updateHash) {
    selected = i;
    Array.prototype.forEach.call($('conv-list').children, function (li) { li.className = +li.dataset.idx === i ? 'sel' : ''; });
    if (updateHash) {
      var h = '#conv=' + encodeURIComponent(convId(i));
      if (location.hash !== h) history.replaceState(null, '', h);
    }
    return renderDetail(i);
  }

  var detailGen = 0;
  function renderDetail(i) {
    var gen = ++detailGen, box = $('detail');
    clear(box);
    box.append(el('p', { 'class': 'muted', text: 'Loading…' }));
    return Promise.all([loadConv(i), loadScen(IX.s[i])]).then(function (res) {
      if (gen !== detailGen) return;
      clear(box);
      drawDetail(box, i, res[0].ch.s, res[0].rec, res[1]);
      box.dataset.conv = convId(i);
      window.__openedConv = convId(i);
    }).catch(function (e) {
      if (gen !== detailGen) return;
      clear(box);
      box.append(el('p', { 'class': 'err', text: 'Could not open this conversation: ' + e.message }));
    });
  }
  function dlRows(pairs) {
    return el('dl', null, pairs.filter(function (p) { return p[1] !== '' && p[1] !== null && p[1] !== undefined; })
      .map(function (p) { return [el('dt', { text: p[0] }), el('dd', { text: String(p[1]) })]; }));
  }
  function textBlock(t) { return el('p', { 'class': 'text', text: t }); }
  function yesNo(b) { return b === true ? 'yes' : b === false ? 'no' : 'null'; }
  function drawDetail(box, i, strs, rec, sc) {
    var target = IX.targets[IX.t[i]], mi = IX.m[i], metric = mi >= 0 ? D.metrics[mi] : null, v = IX.v[i];
    var st = IX.statuses[IX.st[i]];
    box.append(el('div', { 'class': 'detail-head' },
      el('span', { 'class': 'pill v' + v, text: VERDICT[v] }),
      el('b', { text: target }),
      el('span', { text: IX.sid[IX.s[i]] + ' · sample ' + IX.n[i] }),
      el('span', { 'class': 'muted', text: 'status: ' + statusLabel(st) + (rec.sr ? ' (' + rec.sr + ')' : '') }),
      el('span', { 'class': 'cid', text: convId(i) })));
    var chat = el('div', { 'class': 'chat', data: { testid: 'transcript' } });
    if (!rec.tr.length) chat.append(el('p', { 'class': 'muted', text: 'Empty transcript.' }));
    var ut = rec.ut || [], nUser = 0;
    if (ut.length) chat.append(thoughtsToggle(chat));
    for (var x = 0; x + 1 < rec.tr.length; x += 2) {
      var role = strs[rec.tr[x]], cls = role === 'user' ? 'user' : role === 'assistant' ? 'assistant' : 'other';
      var who = role === 'user' ? 'Simulated user' : role === 'assistant' ? 'Assistant · ' + target : role;
      var thought = role === 'user' && nUser < ut.length ? strs[ut[nUser]] : '';
      if (role === 'user') nUser++;
      chat.append(el('div', { 'class': 'msg ' + cls }, el('div', { 'class': 'who', text: who }),
        thought ? el('div', { 'class': 'thought', hidden: 'hidden', data: { testid: 'thought' } },
          el('span', { 'class': 'muted', text: 'Hidden reasoning (the assistant never saw this): ' }), thought) : null,
        el('div', { 'class': 'body', text: strs[rec.tr[x + 1]] })));
    }
    var side = el('div', { 'class': 'side' });
    // Judge
    var judge = el('div', { 'class': 'box' }, el('h4', { text: 'Judge verdict' }));
    if (!rec.sc) judge.append(el('p', { 'class': 'muted', text: 'Not scored yet.' }));
    else {
      var s = rec.sc;
      judge.append(dlRows([['Verdict', VERDICT_LONG[v]], ['Behaviour present', yesNo(s.present)],
        ['Metric type', metric ? metric.type : ''], ['Null reason', s.null_reason || ''],
        ['Landmarks followed (valid)', s.valid === undefined ? '' : yesNo(s.valid)]]));
      if (s.justification) judge.append(el('h4', { text: 'Justification' }), textBlock(s.justification));
      if (s.judges && s.judges.length) {
        judge.append(el('h4', { text: 'Per-judge verdicts (' + s.judges.length + ')' }));
        s.judges.forEach(function (j) {
          judge.append(el('div', { 'class': 'judge' }, el('div', null, el('b', { text: j.judge || 'judge' }),
            ' · present: ' + yesNo(j.present), j.null_reason ? ' · ' + j.null_reason : ''),
            j.justification ? textBlock(j.justification) : null));
        });
      }
    }
    side.append(judge);
    // Scenario
    var sBox = el('div', { 'class': 'box' }, el('h4', { text: 'Metric' }));
    if (metric) {
      sBox.append(el('div', null, el('b', { text: metricLabel(metric.id) }), ' ', typeBadge(metric.type)));
      if (metric.definition) sBox.append(textBlock(metric.definition));
    }
    sBox.append(el('h4', { text: 'Scenario' }));
    if (sc.stub) sBox.append(el('p', { 'class': 'muted', text: 'Scenario not found in scenarios.json.' }));
    if (sc.d && sc.d.length) sBox.append(el('h4', { text: 'Demographic' }), dlRows(sc.d.map(function (p) { return [p[0], p[1]]; })));
    if (sc.goal) sBox.append(el('h4', { text: 'User goal' }), textBlock(sc.goal));
    if (sc.latent) sBox.append(el('h4', { text: 'Latent adversarial goal' }), textBlock(sc.latent));
    if (sc.persona) sBox.append(el('h4', { text: 'Persona' }), textBlock(sc.persona));
    if (sc.up) sBox.append(el('h4', { text: 'User persona (demographic variant)' }), textBlock(sc.up));
    if (sc.lm && sc.lm.length) {
      sBox.append(el('h4', { text: 'Landmarks' }), el('ol', null, sc.lm.map(function (l) {
        return el('li', null, el('b', { text: 'Turn ' + l[0] + ': ' }), l[1]);
      })));
    }
    if (sc.sys) sBox.append(el('h4', { text: 'Target system prompt' }), textBlock(sc.sys));
    side.append(sBox);
    // Run details
    var runRows = [];
    if (rec.u) runRows.push(['Cost', rec.u.cost_known === false ? 'unknown' : money(rec.u.cost || 0)],
      ['Input tokens', num(rec.u.input_tokens)], ['Output tokens', num(rec.u.output_tokens)]);
    if (rec.run) runRows.push(['User model', rec.run.user_model], ['Target model', rec.run.target_model], ['Turns', rec.run.turns], ['Seed', rec.run.seed]);
    if (rec.tm) runRows.push(['target_model field', rec.tm]);
    if (rec.val) runRows.push(['Validity', yesNo(rec.val.valid) + (rec.val.reason ? ' — ' + rec.val.reason : '')]);
    if (runRows.length) side.append(el('div', { 'class': 'box' }, el('h4', { text: 'Run' }), dlRows(runRows)));
    box.append(el('div', { 'class': 'detail-grid' }, chat, side));
  }

  // The simulated user's hidden reasoning ("Thought:") is kept apart from
  // what it said; one switch shows it under each of its messages.
  function thoughtsToggle(chat) {
    var box = el('input', { type: 'checkbox', data: { testid: 'show-thoughts' }, onchange: function () {
      chat.querySelectorAll('.thought').forEach(function (t) { t.hidden = !box.checked; });
    } });
    return el('label', { 'class': 'thought-toggle' }, box, ' Show the simulated user\u2019s hidden reasoning');
  }

  function openFromHash() {
    var h = location.hash;
    if (h.indexOf('#conv=') !== 0) return null;
    var id;
    try { id = decodeURIComponent(h.slice(6)); } catch (e) { return null; }
    var i = findConv(id);
    if (i < 0) {
      clear($('detail'));
      $('detail').append(el('p', { 'class': 'err', text: 'Conversation not found: ' + id }));
      return null;
    }
    var pos = Array.prototype.indexOf.call(filtered, i);
    if (pos >= 0 && Math.floor(pos / PAGE) !== page) { page = Math.floor(pos / PAGE); renderList(); }
    // A deep link is to the transcript: bring it into view once drawn.
    return select(i, false).then(function () {
      if ($('detail').dataset.conv === id) $('detail').scrollIntoView({ block: 'start' });
    });
  }
  window.addEventListener('hashchange', openFromHash);

  // ---------- boot ----------
  var errors = [];
  function guard(name, fn) { try { fn(); } catch (e) { errors.push(name + ': ' + e.message); console.error(e); } }
  guard('leaderboard', renderLeaderboard);
  guard('heatmap', renderHeatmap);
  guard('demographics', function () { if (renderDemoControls()) renderDemo(); });
  guard('cost', renderCost);
  guard('filters', function () { fillFilters(); readFilters(); applyFilters(); });
  // Timings are ms since navigation start: script start, first render of
  // all sections, and DOMContentLoaded (all transcript chunks parsed).
  var firstRender = performance.now();
  domReady.then(function () {
    window.__reportTimings = { scriptStartMs: T0, firstRenderMs: firstRender, domReadyMs: performance.now() };
    window.__reportErrors = errors;
    var opened = openFromHash();
    window.__reportReady = true;
    return opened;
  });
})();
