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

  // validCell is a leaderboard row's valid-rollout rate: the count, or,
  // when the audit read a sample, the estimate with its interval, n and share.
  function validCell(v) {
    var e = v && v.estimated;
    if (e) {
      return el('td', { 'class': 'num', data: { testid: 'valid-share' }, text: pct(e.share) + ' ' + ciText(e) + ' est.',
        title: 'estimated from a sample: ' + (e.suspect ? 'every flagged (' + e.flagged + ') and suspect (' + e.suspect + ') conversation audited' :
          'every flagged conversation audited (' + e.flagged + ')') + ', ' + e.sampled + ' of ' + (e.sampled + e.unsampled) +
          ' unflagged (share ' + e.audit_share.toFixed(2) + '); ' + e.method + (e.warning ? '; ' + e.warning : '') });
    }
    return el('td', { 'class': 'num', data: { testid: 'valid-share' }, text: v && v.share !== null && v.share !== undefined ? pct(v.share) : '—',
      title: v ? v.valid + ' of ' + v.checked + ' checked conversations valid' + (v.invalid ? '; ' + v.invalid + ' invalid, left out of every rate' : '') : 'not checked' });
  }
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
  // Rows are ordered by the leaderboard score (results.json's
  // leaderboard.score; statsview.go); the track buttons re-sort by one track.
  var lbSort = 'score';
  function trackKey(v) { return v.rate === null || v.rate === undefined ? -1 : v.rate; }
  function sortedRows() {
    var rows = D.leaderboard.rows.slice();
    var key = { score: lbScoreKey, pos: function (r) { return trackKey(r.pos); }, neg: function (r) { return trackKey(r.neg); } }[lbSort];
    rows.sort(function (a, b) { return key(b) - key(a) || (a.model < b.model ? -1 : 1); });
    return rows;
  }
  var UNV_TITLE = 'judge verdicts whose quotes of the assistant were not found in the transcript, even after the judge was asked once more, of all verdicts checked; the pass rates include them';
  // renderUnverified lists, per model, metric and judge, the verdicts whose
  // evidence was not found (results.json "unverified").
  function renderUnverified(rows) {
    var box = $('lb-unverified');
    clear(box);
    var lines = [], checked = 0;
    rows.forEach(function (r) {
      if (!r.unv) return;
      checked += r.unv.n_checked;
      Object.keys(r.unv.by_metric || {}).forEach(function (mid) {
        var bj = r.unv.by_metric[mid].by_judge || {};
        Object.keys(bj).forEach(function (j) {
          if (bj[j].n_unverified) lines.push([r.model, mid, j, bj[j].n_unverified, bj[j].n_checked]);
        });
      });
    });
    if (!checked) return;
    box.append(el('h3', { text: 'Unverified verdicts' }));
    if (!lines.length) {
      box.append(el('p', { 'class': 'note', text: 'Every one of the ' + num(checked) + ' checked judge verdicts cites words found in the assistant\'s messages.' }));
      return;
    }
    box.append(el('p', { 'class': 'note', text: 'Verdicts whose quotes of the assistant were not found in the transcript, even after the judge was asked once more. They are kept and included in the pass rates above; open a conversation to see the quotes.' }));
    box.append(el('table', { 'class': 'unv-table', data: { testid: 'unverified-table' } },
      el('thead', null, el('tr', null, el('th', { text: 'Model' }), el('th', { text: 'Metric' }), el('th', { text: 'Judge' }),
        el('th', { 'class': 'num', text: 'Unverified' }), el('th', { 'class': 'num', text: 'Checked' }))),
      el('tbody', null, lines.map(function (l) {
        return el('tr', null, el('td', { text: l[0] }), el('td', { text: metricLabel(l[1]) }), el('td', { text: l[2] }),
          el('td', { 'class': 'num', text: num(l[3]) }), el('td', { 'class': 'num', text: num(l[4]) }));
      }))));
  }
  var VALID_TITLE = 'valid-rollout rate: the share of checked conversations whose simulated user passed the turn checks and the audit (after redos); invalid ones have no verdict, so the rates beside it rest on valid conversations only';
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
    var hasUnv = lb.rows.some(function (r) { return r.unv; });
    function sortBtn(key, label) {
      return el('button', { 'class': 'sort', type: 'button', 'aria-pressed': String(lbSort === key),
        onclick: function () { lbSort = key; renderLeaderboard(); } }, label);
    }
    var t = el('table', { 'class': 'lb', data: { testid: 'leaderboard' } },
      el('thead', null, el('tr', null,
        el('th', { 'class': 'num', text: '#' }), el('th', { text: 'Model' }),
        el('th', { 'class': 'num', data: { testid: 'score-head' } }, sortBtn('score', lbScoreHeader())), el('th', { 'class': 'num', text: 'Rank [95%]' }),
        el('th', { 'class': 'num' }, sortBtn('pos', 'Positive metrics')), el('th', { 'class': 'num', text: 'n (scen.)', title: 'conversations with a verdict (base scenarios)' }),
        el('th', { 'class': 'num' }, sortBtn('neg', 'Negative metrics')), el('th', { 'class': 'num', text: 'n (scen.)', title: 'conversations with a verdict (base scenarios)' }),
        el('th', { 'class': 'num', text: 'Null' }),
        hasUnv ? el('th', { 'class': 'num', text: 'Unverified', title: UNV_TITLE }) : null,
        el('th', { text: 'Statistically tied with' }),
        hasValid ? el('th', { 'class': 'num', text: 'Valid rollouts', title: VALID_TITLE } ) : null)));
    var tb = el('tbody');
    sortedRows().forEach(function (r, i) {
      tb.append(el('tr', { data: { model: r.model } },
        el('td', { 'class': 'num', text: lbRankNo(r, i) }),
        el('td', null, r.model, r.prov ? [' ', el('span', { 'class': 'badge prov', text: 'provisional', title: 'recounted from scores.json' })] : null),
        lbScoreCell(r), lbRankCell(r),
        lbTrackCell(r, 'pos'), el('td', { 'class': 'num', text: nScen(r.pos) }),
        lbTrackCell(r, 'neg'), el('td', { 'class': 'num', text: nScen(r.neg) }),
        el('td', { 'class': 'num', text: num(r.null) }),
        hasUnv ? el('td', { 'class': 'num' + (r.unv && r.unv.n_unverified ? ' unv' : ''), data: { testid: 'unverified' },
          text: r.unv ? num(r.unv.n_unverified) + ' / ' + num(r.unv.n_checked) : '—',
          title: r.unv ? UNV_TITLE : 'judged before quotes were checked' }) : null,
        lbTiesCell(r),
        hasValid ? validCell(r.valid) : null));
    });
    t.append(tb);
    box.append(t);
    box.append(lbLegend());
    renderFewClusterWarnings();
    renderUnverified(lb.rows);
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
      datasets: [ds('Positive metrics', 'pos', '#4f9d8c'), ds('Negative metrics', 'neg', '#9a7bd0')].concat(correctedDatasets(rows)) };
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

  // ---------- statistics: score, ties, few-clusters warnings ----------
  // Everything here reads results.json's clustered statistics as prepared
  // by statsview.go; nothing is recomputed in the page.
  var METHOD_NAMES = {
    'cluster-score': 'cluster-score interval (base scenario = unit; sized for 95 % in simulation; results.json betting_low–betting_high is the any-mix bound)',
    'stratified-cluster-score': 'cluster-score interval, the track’s metrics as fixed strata (base scenario = unit; sized for 95 % in simulation)',
    'cluster-betting+t+wilson-eff': 'betting interval on scenario rates ∪ cluster t ∪ Wilson on effective n (base scenario = unit; older results.json)',
    'cluster-t+wilson-eff': 'cluster t + Wilson on effective n (base scenario = unit; older results.json)',
    'cluster bootstrap': 'cluster bootstrap (older results.json; too narrow with few scenarios)',
    'Wilson': 'Wilson (conversations as independent)',
    'results.json': 'as given in results.json'
  };
  function methodName(m) { return METHOD_NAMES[m] || m; }
  function scoreKey(r) { return r.score && r.score.score !== null && r.score.score !== undefined ? r.score.score : -1; }
  function ivText(lo, hi) {
    if (lo === null || lo === undefined || hi === null || hi === undefined) return '';
    return '[' + (lo * 100).toFixed(1) + '–' + (hi * 100).toFixed(1) + ']';
  }
  function warnMark(w) { return w ? el('span', { 'class': 'warn-mark', text: ' ⚠', title: w }) : null; }
  function scoreCell(r) {
    var s = r.score || {};
    var title = s.local ? 'mean of the track pass rates, computed here (this results.json has no leaderboard block): no interval'
      : 'leaderboard.score: mean of the positive and negative pass rates; 95% interval ' + ivText(s.lo, s.hi) + (s.method ? ' (' + s.method + ')' : '');
    return el('td', { 'class': 'num score', title: title }, el('b', { text: pct(s.score) }), ' ',
      el('span', { 'class': 'ci', text: s.local ? '(mean)' : ivText(s.lo, s.hi) }), warnMark(s.warn));
  }
  function rankCell(r) {
    var s = r.score || {};
    if (!s.rank) return el('td', { 'class': 'num muted', text: '—' });
    var iv = s.rank_lo ? (s.rank_lo === s.rank_hi ? ' [' + s.rank_lo + ']' : ' [' + s.rank_lo + '–' + s.rank_hi + ']') : '';
    return el('td', { 'class': 'num', title: 'rank by score; brackets: the 95% rank interval, from the same Holm-adjusted paired tests as the ties' },
      String(s.rank), el('span', { 'class': 'ci', text: iv }));
  }
  function trackCell(v, cls) {
    return el('td', { 'class': 'num ' + cls, title: rateTitle(v) + (v.g ? ', ' + v.g + ' base scenarios' : '') + (v.warn ? '. ' + v.warn : '') },
      pct(v.rate), ' ', el('span', { 'class': 'ci', text: ciText(v) }), warnMark(v.warn));
  }
  function nScen(v) { return num(v.n) + (v.g ? ' (' + v.g + ')' : ''); }
  function tiesCell(r) {
    var tied = (r.score && r.score.tied) || [];
    if (!tied.length) return el('td', { 'class': 'muted', text: r.score && r.score.rank ? 'none' : '—' });
    return el('td', { 'class': 'tie', data: { testid: 'tie' } }, el('span', { 'class': 'badge tie', text: '=' }), ' ' + tied.join(', '));
  }
  function leaderboardLegend() {
    var methods = {}, local = false, ranked = false;
    D.leaderboard.rows.forEach(function (r) {
      [r.pos.method, r.neg.method].forEach(function (m) { if (m) methods[m] = 1; });
      if (r.score && r.score.local) local = true;
      if (r.score && r.score.rank) ranked = true;
    });
    var p = el('p', { 'class': 'small muted legend-text', data: { testid: 'lb-legend' } });
    add(p, [el('b', { text: 'Score' }), ' = the mean of the model\u2019s positive and negative pass rates (results.json leaderboard.score); rows are ordered by it. ',
      'Its 95% interval is the mean of the two tracks\u2019 interval limits (conservative). ']);
    if (local) add(p, 'Rows marked "(mean)" come from a results.json without a leaderboard block: their score is the plain mean, without an interval. ');
    if (ranked) add(p, ['Rank [95%]: 1 + the models significantly better, to the number of models minus those significantly worse, from the same Holm-adjusted paired tests as the ties (all the intervals hold the true ranks together with 95% confidence). ',
      el('b', { text: 'Statistically tied' }), ' (=): the paired difference in score on the same base scenarios is not significant (Holm within every pair of models). ']);
    add(p, 'n = conversations with a verdict; scen. = base scenarios, the unit of evidence. Interval method: ' +
      (Object.keys(methods).map(methodName).join('; ') || 'none') + '.');
    return p;
  }
  // ---------- leaderboard: observed | corrected for judge error ----------
  // The corrected mode shows results.json's leaderboard.corrected (the
  // score from Rogan–Gladen-corrected track rates; calibview.go) and each
  // corrected track rate beside the observed one. It is offered only when
  // some model has leaderboard.corrected; a model whose score could not be
  // corrected shows results.json's warning, never a number.
  var lbMode = 'observed';
  function isCorrected() { return lbMode === 'corrected'; }
  function hasCorrected() { return D.leaderboard.rows.some(function (r) { return r.corr; }); }
  function isNum(x) { return x !== null && x !== undefined; }
  // correctedJudges lists the judges whose calibration corrected the scores.
  function correctedJudges() {
    var out = [];
    D.leaderboard.rows.forEach(function (r) { if (r.corr && r.corr.judge && out.indexOf(r.corr.judge) < 0) out.push(r.corr.judge); });
    return out;
  }
  function lbScoreHeader() {
    // With both scores on offer, the header names the one shown.
    if (!isCorrected()) return hasCorrected() ? 'Score (observed)' : 'Score';
    var js = correctedJudges();
    return 'Score (corrected for judge error, Rogan–Gladen, ' + (js.length === 1 ? 'judge ' : 'judges ') + (js.join(', ') || '—') + ')';
  }
  function lbScoreKey(r) {
    if (!isCorrected()) return scoreKey(r);
    return r.corr && isNum(r.corr.score) ? r.corr.score : -1;
  }
  function lbRankNo(r, i) {
    if (!isCorrected()) return String(r.score.rank || i + 1);
    return r.corr && isNum(r.corr.score) ? String(i + 1) : '—';
  }
  function corrWarn(w) { return (w || 'not corrected').replace(/^not corrected: /, ''); }
  function lbScoreCell(r) {
    if (!isCorrected()) return scoreCell(r);
    var c = r.corr;
    if (!c) return el('td', { 'class': 'num corr-warn', data: { testid: 'corr-score' }, text: 'no human labels for this model' });
    if (!isNum(c.score)) {
      return el('td', { 'class': 'corr-warn', data: { testid: 'corr-score' }, title: 'leaderboard.corrected.warning' },
        '⚠ not corrected: ' + corrWarn(c.warn));
    }
    return el('td', { 'class': 'num score', data: { testid: 'corr-score' },
      title: 'leaderboard.corrected: mean of the corrected track rates (judge ' + c.judge + '); 95% interval ' + ivText(c.lo, c.hi) + ' (' + c.method + '). Observed score: ' + pct(r.score.score) },
      el('b', { text: pct(c.score) }), ' ', el('span', { 'class': 'ci', text: ivText(c.lo, c.hi) }), warnMark(c.warn));
  }
  function lbRankCell(r) {
    if (!isCorrected()) return rankCell(r);
    return el('td', { 'class': 'num muted', text: '—', title: 'rank intervals are computed on the observed score only' });
  }
  function lbTiesCell(r) {
    if (!isCorrected()) return tiesCell(r);
    return el('td', { 'class': 'muted', text: '—', title: 'ties are tested on the observed score only' });
  }
  // lbTrackCell is the observed track rate, followed in corrected mode by
  // the corrected one (or why there is none).
  function lbTrackCell(r, key) {
    var td = trackCell(r[key], key);
    if (!isCorrected()) return td;
    var c = r.corr && r.corr[key];
    var span = el('span', { 'class': 'corr', data: { testid: 'corr-' + key } });
    if (!c) span.append(' → —');
    else if (!isNum(c.rate)) { span.className = 'corr corr-warn'; span.append(' → ⚠ not corrected'); span.title = corrWarn(c.warn); }
    else {
      span.append(' → ', el('b', { text: pct(c.rate) }), ' ', el('span', { 'class': 'ci', text: ivText(c.lo, c.hi) }));
      span.title = 'corrected for judge error (judge ' + c.judge + ', ' + c.n_labels + ' labelled rows): ' + pct(c.rate) + ' ' + ivText(c.lo, c.hi);
    }
    td.append(el('br'), span);
    return td;
  }
  function lbLegend() {
    if (!isCorrected()) return leaderboardLegend();
    var p = el('p', { 'class': 'small muted legend-text', data: { testid: 'lb-legend' } });
    add(p, [el('b', { text: 'Score (corrected for judge error)' }), ' = the mean of the model\u2019s corrected positive and negative pass rates (results.json leaderboard.corrected); rows are ordered by it. ',
      'Its 95% interval is the mean of the two corrected tracks\u2019 limits (conservative). Each track: the observed rate, then \u2192 the rate corrected with the main judge\u2019s measured sensitivity and specificity (Rogan–Gladen, with the judge\u2019s sensitivity and specificity from every target\u2019s labels unless said otherwise; interval: Fieller-type, from the study\u2019s cluster interval and the labels\u2019 intervals). ',
      'n = conversations with a verdict; scen. = base scenarios. Calibration per judge and metric: see Judge calibration below.']);
    return p;
  }
  function correctedDatasets(rows) {
    if (!isCorrected()) return [];
    function ds(label, key, color) {
      return { label: label, backgroundColor: color, borderRadius: 3,
        data: rows.map(function (r) { var c = r.corr && r.corr[key]; return c && isNum(c.rate) ? c.rate * 100 : null; }),
        ci: rows.map(function (r) { var c = r.corr && r.corr[key]; return c && isNum(c.rate) ? [c.lo, c.hi] : null; }),
        n: rows.map(function (r) { return r[key].n; }) };
    }
    return [ds('Positive, corrected for judge error', 'pos', '#a9d3c9'), ds('Negative, corrected for judge error', 'neg', '#cdbde8')];
  }
  // renderLbMode wires the toggle once and states which score is shown.
  var lbModeWired = false;
  function renderLbMode() {
    var ok = hasCorrected(), obs = $('lb-mode-observed'), cor = $('lb-mode-corrected');
    if (!lbModeWired) {
      lbModeWired = true;
      obs.addEventListener('click', function () { setLbMode('observed'); });
      cor.addEventListener('click', function () { setLbMode('corrected'); });
    }
    cor.disabled = !ok;
    cor.title = ok ? '' : 'No corrected scores in results.json: label conversations (labels.jsonl or impactbench view), then run impactbench calibrate.';
    $('lb-mode-why').textContent = ok ? '' : '(corrected: needs human labels and impactbench calibrate)';
    obs.setAttribute('aria-pressed', String(!isCorrected()));
    cor.setAttribute('aria-pressed', String(isCorrected()));
    var note = $('lb-mode-note');
    if (!isCorrected()) {
      note.textContent = ok ? 'Showing the observed scores: the judges\u2019 verdicts as given, which include their errors. Switch to "corrected for judge error" to see them corrected with the judges\u2019 measured sensitivity and specificity (see Judge calibration).' : '';
      return;
    }
    note.textContent = 'Showing scores corrected for judge error (results.json leaderboard.corrected): each pass rate is corrected with the main judge\u2019s sensitivity and specificity measured against human labels (Rogan–Gladen), and its 95% interval includes the labels\u2019 uncertainty. ' +
      'Each track cell shows the observed rate, then \u2192 the corrected one. Models whose judge is too thinly labelled or uninformative show the warning instead of a number and sort last. Rank intervals and ties are computed on the observed score only.';
  }
  function setLbMode(m) {
    if (m === 'corrected' && !hasCorrected()) return;
    lbMode = m;
    renderLbMode();
    renderLeaderboard();
  }

  // renderFewClusterWarnings lists each distinct few-clusters warning once,
  // with the models and tracks it applies to, above the leaderboard.
  function renderFewClusterWarnings() {
    var box = $('lb-warn'), groups = {}, order = [];
    clear(box);
    function note(w, where) {
      if (!w) return;
      if (!groups[w]) { groups[w] = []; order.push(w); }
      if (groups[w].indexOf(where) < 0) groups[w].push(where);
    }
    D.leaderboard.rows.forEach(function (r) {
      note(r.pos.warn, r.model + ' (positive)');
      note(r.neg.warn, r.model + ' (negative)');
    });
    if (!order.length) { box.hidden = true; return; }
    box.hidden = false;
    box.append(el('b', { text: '⚠ Few base scenarios. ' }),
      'These intervals rest on fewer than 10 independent base scenarios: they are valid but wide, and differences between models are hard to establish.');
    box.append(el('ul', null, order.map(function (w) { return el('li', null, w, el('span', { 'class': 'muted', text: ' — ' + groups[w].join(', ') })); })));
  }

  // ---------- model vs model ----------
  var PW_LABEL = { leaderboard: 'Score (mean of both tracks)', positive: 'Positive metrics', negative: 'Negative metrics' };
  function pwLabel(k) { return PW_LABEL[k] || metricLabel(k); }
  function multText(m) {
    if (!m) return 'p-values as given in results.json';
    if (m.families) return 'Holm within each family of tests that answer one question (the family is named on each row: every model pair for the score, each track, each metric; one model\'s demographic gaps on one metric); ' +
      'q: Benjamini–Hochberg within the family; significant = adjusted p < ' + m.alpha;
    return (m.correction === 'holm' ? 'Holm' : m.correction) + '-adjusted over ' + m.family_size + ' tests (one family: ' + m.family + '); significant = adjusted p < ' + m.alpha;
  }
  function famTitle(r) { return r.family ? 'family ' + r.family + ' (' + r.family_size + ' tests)' : ''; }
  function renderPairwise() {
    var pw = D.pairwise, box = $('pw');
    if (!pw.rows.length) {
      $('pw-note').textContent = 'No model-vs-model comparison: results.json has fewer than two models, or was written before pairwise differences were added (run aggregate again).';
      $('pw-controls').hidden = true;
      return false;
    }
    $('pw-note').textContent = 'A − B on the base scenarios both models ran: the mean over those scenarios of the difference in pass rate (percentage points; positive = A passes more). ' +
      'Interval and p come from one test over scenarios (a sign-flip test, with a floor for binomial noise within scenarios): the interval excludes 0 exactly when p < 0.05. Adjusted p: ' + multText(pw.mult) + '.';
    var sel = $('pw-key');
    sel.append(el('option', { value: '', text: 'all comparisons' }));
    pw.comparisons.forEach(function (k) { sel.append(el('option', { value: k, text: pwLabel(k) })); });
    sel.value = pw.comparisons.indexOf('leaderboard') >= 0 ? 'leaderboard' : '';
    ['pw-key', 'pw-sig'].forEach(function (id) { $(id).addEventListener('change', drawPairwise); });
    drawPairwise();
    return true;
  }
  function pp(x) { return x === null || x === undefined ? '—' : (x >= 0 ? '+' : '−') + Math.abs(x * 100).toFixed(1); }
  function ppIv(lo, hi) { return lo === null || lo === undefined ? '' : '[' + pp(lo) + ', ' + pp(hi) + ']'; }
  function pairVerdict(r) {
    if (r.sig) return el('span', { 'class': 'flag-significant', text: (r.diff > 0 ? r.a : r.b) + ' ahead (significant)' });
    if (r.family) return el('span', { 'class': 'badge tie', text: 'tie', title: 'not significant after the adjustment within ' + famTitle(r) + ': these scenarios cannot tell the models apart' });
    // Files written before families: ties came from the interval.
    if (r.lo !== null && r.lo !== undefined && r.lo <= 0 && r.hi >= 0) return el('span', { 'class': 'badge tie', text: 'tie', title: 'the 95% interval contains 0' });
    return el('span', { 'class': 'muted', text: 'not significant after adjustment' });
  }
  function drawPairwise() {
    var box = $('pw'), key = $('pw-key').value, sigOnly = $('pw-sig').checked;
    clear(box);
    var tb = el('tbody'), shown = 0;
    D.pairwise.rows.forEach(function (r) {
      if ((key && r.key !== key) || (sigOnly && !r.sig)) return;
      shown++;
      tb.append(el('tr', { data: { a: r.a, b: r.b, key: r.key } },
        el('td', { text: r.a }), el('td', { text: r.b }), el('td', { text: pwLabel(r.key) }),
        el('td', { 'class': 'num' }, el('b', { text: pp(r.diff) }), ' ', el('span', { 'class': 'ci', text: ppIv(r.lo, r.hi) })),
        el('td', { 'class': 'num' }, String(r.g), warnMark(r.warn)),
        el('td', { 'class': 'num', title: r.test, text: fmtP(r.p) }),
        el('td', { 'class': 'num', title: famTitle(r), text: fmtP(r.p_adj) }),
        el('td', { 'class': 'num', title: famTitle(r), text: r.q === undefined ? '—' : fmtP(r.q) }),
        el('td', null, pairVerdict(r))));
    });
    if (!shown) { box.append(el('p', { 'class': 'muted', text: 'No comparisons for this selection.' })); return; }
    box.append(el('table', { 'class': 'pw', data: { testid: 'pairwise' } }, el('thead', null, el('tr', null,
      el('th', { text: 'Model A' }), el('th', { text: 'Model B' }), el('th', { text: 'Comparison' }),
      el('th', { 'class': 'num', text: 'A − B (pt) [95%]' }), el('th', { 'class': 'num', text: 'Scenarios' }),
      el('th', { 'class': 'num', text: 'p' }), el('th', { 'class': 'num', text: 'Adjusted p' }), el('th', { 'class': 'num', text: 'q (FDR)' }), el('th', { text: 'Result' }))), tb));
  }

  // ---------- demographic gap tests ----------
  function gapTestsTable(rows) {
    var tb = el('tbody'), n = 0;
    rows.forEach(function (r) {
      (r.tests || []).forEach(function (g) {
        n++;
        var clustered = !!g.test;
        tb.append(el('tr', null, el('td', { text: r.model }), el('td', { text: r.metric ? metricLabel(r.metric) : 'all metrics' }),
          el('td', { text: g.a + ' vs ' + g.b }),
          el('td', { 'class': 'num' }, el('b', { text: pp(clustered ? g.cdiff : g.diff) }), ' ', el('span', { 'class': 'ci', text: ppIv(g.lo, g.hi) })),
          el('td', { 'class': 'num' }, clustered ? String(g.g) : '—', warnMark(g.warn)),
          el('td', { 'class': 'num', title: clustered ? g.test : 'McNemar over conversation pairs (older results.json)', text: fmtP(g.p) }),
          el('td', { 'class': 'num', title: famTitle(g), text: fmtP(g.p_adj) }),
          el('td', { 'class': 'num', title: famTitle(g), text: g.q === undefined ? '—' : fmtP(g.q) }),
          el('td', { 'class': 'num muted', text: clustered ? fmtP(g.mcnemar_p) : fmtP(g.p) }),
          el('td', null, g.significant ? el('span', { 'class': 'flag-significant', text: 'significant' }) : el('span', { 'class': 'muted', text: 'no' }))));
      });
    });
    if (!n) return null;
    return el('div', { data: { testid: 'gap-tests' } },
      el('h3', { text: 'Paired tests (demographic_gaps)' }),
      el('p', { 'class': 'small muted', text: 'For each base scenario, the pass rate of A minus that of B over its matched variants and samples; the difference is their mean. ' +
        'Interval and p come from one test over scenarios (sign-flip, with a floor for binomial noise): the interval excludes 0 exactly when p < 0.05. Adjusted p: ' + multText(D.pairwise.mult) + '. McNemar p treats every conversation pair as independent and overstates; it is shown for reference only.' }),
      el('table', { 'class': 'demo gaps' }, el('thead', null, el('tr', null,
        el('th', { text: 'Model' }), el('th', { text: 'Metric' }), el('th', { text: 'Values' }),
        el('th', { 'class': 'num', text: 'A − B (pt) [95%]' }), el('th', { 'class': 'num', text: 'Scenarios' }),
        el('th', { 'class': 'num', text: 'p' }), el('th', { 'class': 'num', text: 'Adjusted p' }), el('th', { 'class': 'num', text: 'q (FDR)' }),
        el('th', { 'class': 'num', text: 'McNemar p (reference)' }), el('th', { text: 'Significant' }))), tb));
  }

  // ---------- judges and agreement ----------
  function num3(x) { return x === null || x === undefined ? 'n/a' : x.toFixed(3); }
  // p3 is a p-value with 3 decimals, never printed on the other side of
  // 0.05 from its value (0.049996 stays 0.049996), as Go's artifacts.PValue.
  function p3(p) {
    for (var d = 3; d <= 17; d++) { var t = p.toFixed(d); if ((Number(t) < 0.05) === (p < 0.05)) return t; }
    return String(p);
  }
  function renderReliability() {
    var rel = D.reliability;
    rel.identical.forEach(function (id) {
      $('agreement').append(el('div', { 'class': 'warn', role: 'note', data: { testid: 'identical-samples' } },
        el('b', { text: id.model + ': ' }), 'the samples of ' + num(id.n) + ' scenario(s) are byte-identical conversations (' +
        id.scenarios.join(', ') + (id.n > id.scenarios.length ? ', …' : '') + '): a provider ignored the seed, so their agreement is no evidence of stability, and every agreement figure leaves them out.'));
    });
    if (!rel.panels.length && !rel.agreement.length) {
      $('rel-note').textContent = 'No judge panel and no repeated samples in results.json: nothing to measure agreement on.';
      return;
    }
    $('rel-note').textContent = 'Panel rate = the share of all judge verdicts that mean "pass" (a 1–1 split counts half), so no row is dropped; each judge\u2019s own rate beside it. ' +
      'Agreement is per metric on "present" (the judged quantity): Krippendorff\u2019s α (any number of raters, missing verdicts allowed) beside κ. 1 = perfect, 0 = chance level; n/a when every verdict is the same.';
    if (rel.panels.length) {
      var tb = el('tbody');
      rel.panels.forEach(function (p) {
        function row(label, v, strong) {
          return el('tr', null, el('td', { text: p.model }), el('td', null, strong ? el('b', { text: label }) : label),
            trackCell(v.pos, 'pos'), el('td', { 'class': 'num', text: nScen(v.pos) }),
            trackCell(v.neg, 'neg'), el('td', { 'class': 'num', text: nScen(v.neg) }));
        }
        tb.append(row('panel (every verdict)', p, true));
        p.by_judge.forEach(function (j) { tb.append(row(j.judge, j, false)); });
        tb.append(el('tr', { 'class': 'sub' }, el('td'), el('td', { 'class': 'small muted', colspan: '5',
          text: p.rows + ' rows, ' + p.split + ' split, ' + p.no_majority + ' without a majority (dropped from the upstream rates); α = ' + num3(p.alpha) + ', ' + (p.kappa_method || 'κ') + ' κ = ' + num3(p.kappa) })));
      });
      $('panels').append(el('table', { data: { testid: 'panels' } }, el('thead', null, el('tr', null,
        el('th', { text: 'Model' }), el('th', { text: 'Rate from' }),
        el('th', { 'class': 'num', text: 'Positive metrics' }), el('th', { 'class': 'num', text: 'n (scen.)' }),
        el('th', { 'class': 'num', text: 'Negative metrics' }), el('th', { 'class': 'num', text: 'n (scen.)' }))), tb));
    }
    if (rel.agreement.length) {
      var ab = el('tbody');
      rel.agreement.forEach(function (a) {
        function cells(c) {
          if (!c) return [el('td', { 'class': 'num muted', text: '—' }), el('td', { 'class': 'num muted', text: '—' }), el('td', { 'class': 'num muted', text: '—' })];
          return [el('td', { 'class': 'num', text: num3(c.alpha) }), el('td', { 'class': 'num', text: num3(c.kappa) }), el('td', { 'class': 'num', text: num(c.units) })];
        }
        ab.append(el('tr', null, el('td', { text: a.model }), el('td', { text: metricLabel(a.metric) }), cells(a.samples), cells(a.judges)));
      });
      $('agreement').append(el('table', { data: { testid: 'agreement' } }, el('thead', null,
        el('tr', null, el('th', { text: 'Model' }), el('th', { text: 'Metric' }),
          el('th', { 'class': 'num', text: 'Samples α' }), el('th', { 'class': 'num', text: 'Samples κ' }), el('th', { 'class': 'num', text: 'Scenarios' }),
          el('th', { 'class': 'num', text: 'Judges α' }), el('th', { 'class': 'num', text: 'Judges κ' }), el('th', { 'class': 'num', text: 'Rows' }))), ab));
    }
  }

  // ---------- the simulated users ----------
  // The scorecard (valid-rollout rate and failure kinds per user model ×
  // target) and results.json's break_turns curves; nothing is recomputed.
  function renderFidelity() {
    var f = D.fidelity;
    if (!f.scorecard.length && !f.breaks.length) {
      $('fid-note').textContent = 'No conversation here was checked (made before the checks of the simulated user, or with them off).';
      return;
    }
    $('fid-note').textContent = 'Every user turn is checked before it is sent (format, reasoning, role, refusal, reveal, empty, repeat, goal leak) and asked again when it fails; every conversation is audited and redone when invalid. ' +
      'Conversations still invalid after their redos are kept, marked and left out of every pass rate.';
    if (f.scorecard.length) {
      var tb = el('tbody');
      f.scorecard.forEach(function (r) {
        tb.append(el('tr', null, el('td', { text: r.user_model || '?' }), el('td', { text: r.target }),
          el('td', { 'class': 'num', text: num(r.checked) + ' / ' + num(r.n) }),
          el('td', { 'class': 'num', data: { testid: 'scorecard-share' }, text: pct(r.valid_share) }),
          el('td', { 'class': 'num', text: num(r.invalid) }), el('td', { 'class': 'num', text: num(r.rejected_replies) }),
          el('td', { 'class': 'num', text: num(r.redone) }), el('td', { text: kindsText(r.kinds) })));
      });
      $('fid-card').append(el('table', { data: { testid: 'scorecard' } }, el('thead', null, el('tr', null,
        el('th', { text: 'User model' }), el('th', { text: 'Target' }), el('th', { 'class': 'num', text: 'Checked' }),
        el('th', { 'class': 'num', text: 'Valid rollouts' }), el('th', { 'class': 'num', text: 'Invalid' }),
        el('th', { 'class': 'num', text: 'Rejected replies' }), el('th', { 'class': 'num', text: 'Redone' }), el('th', { text: 'Failure kinds' }))), tb));
    }
    renderBreaks(f.breaks);
  }
  function kindsText(k) {
    var keys = Object.keys(k || {}).sort(function (a, b) { return k[b] - k[a] || (a < b ? -1 : 1); });
    return keys.length ? keys.map(function (x) { return x + ' ' + k[x]; }).join(', ') : '—';
  }
  // renderBreaks: "share failed by turn k" per model, as a table and a line chart.
  function renderBreaks(breaks) {
    if (!breaks.length) return;
    var turns = Math.max.apply(null, breaks.map(function (b) { return b.curve.length; }));
    var head = el('tr', null, el('th', { text: 'Model' }));
    for (var k = 1; k <= turns; k++) head.append(el('th', { 'class': 'num', text: 'by turn ' + k }));
    head.append(el('th', { 'class': 'num', text: 'failed / n' }), el('th', { 'class': 'num', text: 'no turn cited' }));
    var tb = el('tbody');
    breaks.forEach(function (b) {
      var tr = el('tr', null, el('td', { text: b.model }));
      for (var k = 0; k < turns; k++) tr.append(el('td', { 'class': 'num', text: k < b.curve.length ? pct(b.curve[k]) : '—', title: (b.by_turn[k] || 0) + ' failure(s) first seen at turn ' + (k + 1) }));
      tr.append(el('td', { 'class': 'num', text: num(b.failed) + ' / ' + num(b.n) }), el('td', { 'class': 'num', text: num(b.unplaced) }));
      tb.append(tr);
    });
    $('fid-breaks').append(el('h3', { text: 'When does it break?' }),
      el('p', { 'class': 'note', text: 'Negative metrics: the share of conversations whose harmful behaviour had appeared by assistant turn k — the first turn the judge\u2019s cited evidence was found in. A failure whose evidence names no turn counts only in the last column.' }),
      el('table', { data: { testid: 'break-turns' } }, el('thead', null, head), tb));
    if (typeof Chart === 'undefined') return;
    var box = el('div', { 'class': 'chart-box' }), canvas = document.createElement('canvas');
    canvas.setAttribute('aria-label', 'Share of conversations failed by assistant turn');
    box.style.height = '240px';
    box.append(canvas);
    $('fid-breaks').append(box);
    var labels = [];
    for (var t = 1; t <= turns; t++) labels.push('turn ' + t);
    new Chart(canvas, { type: 'line', data: { labels: labels, datasets: breaks.map(function (b) {
      return { label: b.model, data: b.curve.map(function (x) { return x * 100; }), tension: 0, fill: false };
    }) }, options: { animation: false, responsive: true, maintainAspectRatio: false,
      scales: { y: { min: 0, max: 100, title: { display: true, text: 'failed by turn k (%)' } } } } });
  }

  // ---------- people vs simulated users ----------
  // results.json's human_comparison: on the base scenarios people played
  // (impactbench view's Play page) and the simulated users also did, each
  // side's pass rate and the difference with its interval; nothing is
  // recomputed here.
  function renderHuman() {
    var H = D.human || [];
    if (!H.length) {
      $('human-note').textContent = 'Nobody has played the user yet. On the Play page of impactbench view a person plays the user of a scenario against a target; once judged, aggregate compares their pass rates with the simulated users\u2019 here.';
      return;
    }
    $('human-note').textContent = 'Per base scenario people played that the simulated users also did: the pass rate of the human-played conversations against that of the simulated conversations of the same variants. ' +
      'Rates are means over those scenarios; the difference is people \u2212 simulated users in points, with a 95% interval from the sign-flip test over scenarios (with the binomial floor), which is wide with few scenarios. The same judges judged both, not told who played.';
    var tb = el('tbody');
    H.forEach(function (h) {
      h.rows.forEach(function (r) {
        tb.append(el('tr', { data: { model: h.model, track: r.track, metric: r.metric_id || '' } }, el('td', { text: h.model }),
          el('td', { text: r.metric_id ? metricLabel(r.metric_id) : r.track + ' metrics' }),
          el('td', { 'class': 'num', text: pct(r.simulated_pass_rate) }), el('td', { 'class': 'num', text: pct(r.human_pass_rate) }),
          el('td', { 'class': 'num', data: { testid: 'human-gap' }, title: methodName(r.test), text: pp(r.diff) + (isNum(r.ci_low) ? ' ' + ppIv(r.ci_low, r.ci_high) : ' (no interval: one scenario)') }),
          el('td', { 'class': 'num', text: num(r.n_scenarios) }), el('td', { 'class': 'num', text: num(r.n_simulated) + ' / ' + num(r.n_human) }),
          el('td', { 'class': 'num', text: isNum(r.p_value) ? fmtP(r.p_value) : '\u2014' }), el('td', null, warnMark(r.warning))));
      });
      if (h.warning) tb.append(el('tr', null, el('td', { text: h.model }), el('td', { colspan: '8', 'class': 'small', text: '\u26a0 ' + h.warning })));
    });
    $('human-table').append(el('table', { data: { testid: 'human-compare' } }, el('thead', null, el('tr', null, el('th', { text: 'Model' }),
      el('th', { text: 'Track / metric' }), el('th', { 'class': 'num', text: 'Simulated users' }), el('th', { 'class': 'num', text: 'People' }),
      el('th', { 'class': 'num', text: 'People \u2212 simulated (points) [95% CI]' }), el('th', { 'class': 'num', text: 'Scenarios' }),
      el('th', { 'class': 'num', text: 'Conversations (sim. / people)' }), el('th', { 'class': 'num', text: 'p' }), el('th', { text: '' }))), tb));
  }

  // ---------- where the variance comes from ----------
  // results.json's variance_components (varianceview.go): each component's
  // share of a verdict's variance, its variance and bootstrap interval in
  // the cell's title. Nothing is recomputed here.
  var VAR_PARTS = [['scenario', 'Base scenario'], ['variant', 'Demographic variant'], ['sample', 'Sample (target + simulated user)'], ['judge', 'Judge'], ['residual', 'Sample + judge (as recorded)']];
  function varCell(c, name) {
    if (!c) return el('td', { 'class': 'num muted', text: '—', title: name + ': not separable in this design' });
    var share = isNum(c.share) ? (c.share * 100).toFixed(0) + '%' : 'n/a';
    return el('td', { 'class': 'num', title: name + ': variance ' + c.v.toFixed(4) + (isNum(c.lo) ? ', 95% interval ' + c.lo.toFixed(4) + '–' + c.hi.toFixed(4) : '') },
      share, el('span', { 'class': 'ci', text: ' ' + c.v.toFixed(3) }));
  }
  function renderVariance() {
    var rows = D.variance.rows;
    if (!rows.length) {
      $('var-note').textContent = 'No variance_components in results.json (written before they were added: run aggregate again).';
      return;
    }
    $('var-note').textContent = 'The share of one verdict’s variance that each source contributes (the variance itself small beside it; interval in the tooltip: bootstrap over base scenarios, descriptive below about 30). ' +
      'A pass rate over G scenarios × V variants × K samples has variance scenario/G + variant/(G·V) + (sample + judge)/(G·V·K): a large scenario share means more scenarios, not more samples, narrow the interval. ' +
      'Judge: from re-judging the same transcripts (evaluate --repeats) or a panel’s disagreement; — where the design cannot separate a source.';
    var tb = el('tbody');
    rows.forEach(function (r) {
      var scope = r.scope === 'positive' ? 'Positive metrics' : r.scope === 'negative' ? 'Negative metrics' : metricLabel(r.scope);
      tb.append(el('tr', { data: { model: r.model, scope: r.scope } }, el('td', { text: r.model }), el('td', { text: scope }),
        el('td', { 'class': 'num', text: pct(r.rate) }), el('td', { 'class': 'num' }, String(r.scenarios), warnMark(r.warn)),
        VAR_PARTS.map(function (p) { return varCell(r[p[0]], p[1]); }),
        el('td', { 'class': 'small muted', text: r.judge_source ? r.judge_source + ' (' + r.rejudged + ' rows)' : '' })));
    });
    $('var').append(el('table', { data: { testid: 'variance' }, title: rows[0].method }, el('thead', null, el('tr', null,
      el('th', { text: 'Model' }), el('th', { text: 'Rate' }), el('th', { 'class': 'num', text: 'Pass rate' }), el('th', { 'class': 'num', text: 'Scenarios' }),
      VAR_PARTS.map(function (p) { return el('th', { 'class': 'num', text: p[1] }); }), el('th', { text: 'Judge from' }))), tb));
  }

  // ---------- judge calibration ----------
  // results.json's judge_calibration (every judge against the human
  // labels), the corrected rates and judge_consistency, as calibview.go
  // lays them out. Judge and model names are text.
  var ROLE_TITLE = { 'main': 'the verdict of scores.json (a panel\u2019s majority): its calibration corrects the pass rates',
    'panel member': 'one judge of the main panel', 'alternate': 'another judge\u2019s verdicts on the same conversations (evaluate --judge)' };
  function metricCell(id) { var x = metricById[id]; return el('td', { title: x ? metricLabel(id) + (x.m.type ? ' (' + x.m.type + ')' : '') : id, text: id }); }
  function dec2(x) { return isNum(x) ? x.toFixed(2) : 'n/a'; }
  // statCell: a weighted estimate shows its raw count beside it ("raw
  // 9/10"), so it can be checked by hand; an undefined one says why.
  function statCell(s) {
    if (!s || !isNum(s.est)) return el('td', { 'class': 'num muted', text: 'n/a' + (s && s.reason ? ' (' + s.reason + ')' : ''), title: 'not computable from these labels' + (s ? ' (n=' + s.n + ')' : '') });
    return el('td', { 'class': 'num', title: (s.weighted ? 'weighted to the study\u2019s verdicts; ' : '') + (s.method || '') }, dec2(s.est), ' ',
      el('span', { 'class': 'ci', text: '[' + dec2(s.lo) + ', ' + dec2(s.hi) + '] ' + (s.hits !== undefined && s.hits !== null ? 'raw ' + s.hits + '/' + s.n : 'n=' + s.n) }));
  }
  function labelSummary(l) {
    return num(l.n_rows) + ' labelled conversations (' + num(l.n_lines) + ' label lines, ' + l.n_labelers + ' labeler' + (l.n_labelers === 1 ? '' : 's') +
      ', ' + l.n_ties + ' tie' + (l.n_ties === 1 ? '' : 's') + ' between labelers left out, ' + l.n_unjudged + ' not judged yet' +
      (l.n_after_reveal ? ', ' + num(l.n_after_reveal) + ' given after the judges\u2019 verdict was shown left out' : '') + ').';
  }
  function testCell(t) {
    if (!t) return el('td', { 'class': 'muted', text: '—' });
    if (!isNum(t.p)) return el('td', { 'class': 'muted', text: '—', title: t.reason || '' });
    return el('td', { 'class': t.differs ? 'cal-warn' : '', title: t.method + '; Holm over the judge\u2019s metrics' },
      (t.differs ? 'differs: ' : '') + 'p ' + fmtP(t.p) + ' (Holm ' + fmtP(t.p_adj) + ')');
  }
  function fmtP(p) { return !isNum(p) ? 'n/a' : p < 0.001 ? '<0.001' : p3(p); }
  function calibrationTable(rows, model, testid) {
    var tb = el('tbody');
    rows.forEach(function (j) {
      tb.append(el('tr', { data: { judge: j.judge, metric: j.metric } },
        el('td', { text: j.judge }), el('td', { text: j.role, title: ROLE_TITLE[j.role] || '' }), j.metric === 'all metrics' ? el('td', { text: 'all metrics', title: 'the judge over every metric of the benchmark: what a thinly labelled metric is corrected with' }) : metricCell(j.metric),
        el('td', { 'class': 'num', text: num(j.n) }),
        statCell(j.se), statCell(j.sp), statCell(j.kappa),
        el('td', { 'class': 'num', text: isNum(j.agree) ? pct(j.agree) + ' (raw ' + j.n_agree + '/' + j.n + ')' : 'n/a', title: 'weighted share of rows where the judge and the humans agree' }),
        el('td', { 'class': 'num', text: j.h_pres + ' / ' + j.h_abs }),
        el('td', { 'class': 'num', text: j.j_pres + ' / ' + j.j_abs }),
        el('td', { text: j.informative === true ? 'yes' : j.informative === false ? 'no' : 'unknown', title: 'Youden\u2019s J = ' + (isNum(j.youden.est) ? dec2(j.youden.est) + ' [' + dec2(j.youden.lo) + ', ' + dec2(j.youden.hi) + ']' : 'n/a') }),
        el('td', { text: j.scope + (j.targets ? ' (' + j.targets + ')' : '') }), testCell(j.test)));
      // The warning gets a line of its own under its row, so the numbers
      // stay in narrow columns.
      if (j.warn) tb.append(el('tr', { 'class': 'sub' }, el('td', { colspan: '3' }), el('td', { 'class': 'cal-warn', colspan: '10', data: { testid: 'cal-warn' } }, '⚠ ' + j.warn)));
    });
    return el('table', { 'class': 'cal', data: { testid: testid, model: model } }, el('thead', null, el('tr', null,
      el('th', { text: 'Judge' }), el('th', { text: 'Role' }), el('th', { text: 'Metric' }), el('th', { 'class': 'num', text: 'n' }),
      el('th', { 'class': 'num', text: 'Sensitivity, weighted [95%] (raw)', title: 'share of the humans\u2019 "present" the judge calls present, weighted to the study\u2019s verdicts; raw: the unweighted count' }),
      el('th', { 'class': 'num', text: 'Specificity, weighted [95%] (raw)', title: 'share of the humans\u2019 "absent" the judge calls absent, weighted to the study\u2019s verdicts; raw: the unweighted count' }),
      el('th', { 'class': 'num', text: 'Cohen\u2019s κ, weighted [95%]' }), el('th', { 'class': 'num', text: 'Agreement, weighted (raw)' }),
      el('th', { 'class': 'num', text: 'Humans present / absent' }), el('th', { 'class': 'num', text: 'Judge present / absent' }),
      el('th', { text: 'Informative', title: 'the labels show sensitivity + specificity > 1 (Youden\u2019s J\u2019s one-sided 95% lower limit above 0)' }),
      el('th', { text: 'Labels of' }), el('th', { text: 'Error differs by target?' }))), tb);
  }
  function labelerTable(mc) {
    if (!mc.labelers.length) return el('p', { 'class': 'small muted', text: 'No conversation has labels from two or more people: labeler agreement not measured.' });
    return el('table', { 'class': 'cal', data: { testid: 'labelers' } }, el('thead', null, el('tr', null,
      el('th', { text: 'Metric' }), el('th', { 'class': 'num', text: 'Rows with several labelers' }), el('th', { 'class': 'num', text: 'Unanimous' }),
      el('th', { 'class': 'num', text: 'Krippendorff\u2019s α' }), el('th', { 'class': 'num', text: 'Labels' }))),
      el('tbody', null, mc.labelers.map(function (a) {
        return [el('tr', null, metricCell(a.metric), el('td', { 'class': 'num', text: num(a.rows) }),
          el('td', { 'class': 'num', text: num(a.unanimous) }), el('td', { 'class': 'num', text: num3(a.alpha) + (a.note ? ' \u24d8' : ''), title: a.note || null }), el('td', { 'class': 'num', text: num(a.values) })),
          a.note ? el('tr', null, el('td', { colspan: '5', 'class': 'small muted', data: { testid: 'alpha-note' }, text: '\u24d8 ' + a.note })) : null];
      })));
  }
  function correctedTable(mc) {
    if (!mc.corrected.length) return null;
    return el('table', { 'class': 'cal', data: { testid: 'corrected', model: mc.model } }, el('thead', null, el('tr', null,
      el('th', { text: 'Pass rate' }), el('th', { 'class': 'num', text: 'Observed' }), el('th', { 'class': 'num', text: 'Corrected for judge error [95%]' }),
      el('th', { text: 'Judge' }), el('th', { 'class': 'num', text: 'Se / Sp (weighted)' }), el('th', { 'class': 'num', text: 'Labelled rows' }), el('th', { text: 'Warning' }),
      el('th', { text: 'Calibration from', title: 'whose labels the sensitivity and specificity come from: all targets (pooled), this target, or all metrics (a thinly labelled metric)' }))),
      el('tbody', null, mc.corrected.map(function (c) {
        var v = c.corr, ok = isNum(v.rate);
        return el('tr', { data: { key: c.key } },
          c.track ? el('td', null, el('b', { text: c.key + ' metrics' })) : metricCell(c.key),
          el('td', { 'class': 'num', text: pct(c.obs) }),
          ok ? el('td', { 'class': 'num', title: v.method }, el('b', { text: pct(v.rate) }), ' ', el('span', { 'class': 'ci', text: ivText(v.lo, v.hi) }))
            : el('td', { 'class': 'num corr-warn', text: '⚠ not corrected' }),
          el('td', { text: v.judge }),
          el('td', { 'class': 'num', text: isNum(v.se) ? dec2(v.se) + ' / ' + dec2(v.sp) : '—' }),
          el('td', { 'class': 'num', text: num(v.n_labels) }),
          el('td', { 'class': v.warn ? 'cal-warn' : 'muted' }, v.warn ? '⚠ ' + v.warn : v.note ? 'ⓘ ' + v.note : '—'),
          el('td', { text: ok ? (v.level || '—') : '—' }));
      })));
  }
  function consistencyTable(rows) {
    return el('table', { 'class': 'cal', data: { testid: 'consistency' } }, el('thead', null, el('tr', null,
      el('th', { text: 'Model' }), el('th', { text: 'Judge' }), el('th', { text: 'Metric' }),
      el('th', { 'class': 'num', text: 'Flip rate [95%]', title: 'share of rows whose verdicts (scores.json and each repeat) are not unanimous; Wilson interval, rows as independent' }),
      el('th', { 'class': 'num', text: 'Flipped / rows' }), el('th', { 'class': 'num', text: 'Repeats' }))),
      el('tbody', null, rows.map(function (f) {
        return el('tr', null, el('td', { text: f.model }), el('td', { text: f.judge }), metricCell(f.metric),
          el('td', { 'class': 'num' }, pct(f.rate), ' ', el('span', { 'class': 'ci', text: ivText(f.lo, f.hi) })),
          el('td', { 'class': 'num', text: num(f.flipped) + ' / ' + num(f.rows) }), el('td', { 'class': 'num', text: String(f.repeats) }));
      })));
  }
  function renderCalibration() {
    var cal = D.calibration, box = $('cal');
    if (!cal.models.length && !cal.consistency.length) {
      $('cal-note').textContent = 'No judge calibration in results.json: label conversations (labels.jsonl, or impactbench view), then run impactbench calibrate to measure every judge against people and correct the pass rates for judge error. evaluate --repeats adds the judges\u2019 self-consistency here.';
      return;
    }
    $('cal-note').textContent = 'Every judge measured against the human labels (each conversation\u2019s verdict is its labelers\u2019 majority): sensitivity, specificity and Cohen\u2019s κ, each with a 95% interval, weighted to the study\u2019s verdicts so that a sample drawn evenly from each judge verdict does not bias them, with the raw counts beside them. ' +
      'A judge\u2019s error is a property of the judge on a metric, so the labels of every target are pooled (the same table under each model); a permutation test says whether the error differs by target, and where it does a model with labels enough of its own is corrected with its own. ' +
      'The main judge\u2019s calibration corrects the pass rates (Rogan–Gladen); a thinly labelled metric borrows the judge\u2019s calibration over all metrics, and an uninformative judge gets a warning, not a corrected number.';
    cal.models.forEach(function (mc) {
      box.append(el('h3', { text: mc.model }),
        el('p', { 'class': 'small muted', data: { testid: 'cal-labels' } }, 'This model: ' + labelSummary(mc.labels) +
          (mc.labels_all ? ' All targets: ' + labelSummary(mc.labels_all) : '') + ' A metric\u2019s own calibration needs ' + mc.min_per_class + ' labelled rows of each judge verdict (every target together, or all of them).'),
        calibrationTable(mc.judges, mc.model, 'calibration'));
      if (mc.own.length) box.append(el('h4', { text: 'The main judge on this model\u2019s labels alone (its error differs by target)' }), calibrationTable(mc.own, mc.model, 'calibration-own'));
      var ct = correctedTable(mc);
      if (ct) box.append(el('h4', { text: 'Pass rates corrected for judge error' }), ct);
      box.append(el('h4', { text: 'Agreement between labelers' }), labelerTable(mc));
    });
    if (cal.consistency.length) {
      $('consistency').append(el('h3', { text: 'Judge self-consistency (evaluate --repeats)' }),
        el('p', { 'class': 'small muted', text: 'Each stored transcript re-judged with different seeds; the main scores are unchanged. A high flip rate means a verdict depends on the draw.' }),
        consistencyTable(cal.consistency));
    }
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
          title: sig ? sig.a + ' vs ' + sig.b + ': ' + (sig.test ? 'difference over ' + sig.g + ' base scenarios ' + pp(sig.cdiff) + ' pt ' + ppIv(sig.lo, sig.hi)
            : 'diff ' + pct(sig.diff) + ', pairs=' + sig.n_pairs) + ', p=' + fmtP(sig.p) + ', adjusted p=' + fmtP(sig.p_adj) : '' }));
      } else if (r.flag === 'large') {
        flag.append(el('span', { 'class': 'flag-large', text: 'large (descriptive)' }));
      }
      tr.append(flag);
      tb.append(tr);
    });
    if (!shown) { box.append(el('p', { 'class': 'muted', text: 'No rows for this selection.' })); return; }
    box.append(el('table', { 'class': 'demo' }, el('thead', null, head), tb));
    box.append(gapTestsTable(dm.rows.filter(function (r) { return r.axis === axis.name && (!model || r.model === model) && (!flagged || r.flag); })));
  }
  function fmtP(p) { return p === null || p === undefined ? '—' : (p < 0.001 ? p.toExponential(1) : p3(p)); }

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
    var who = personOf(i);
    var meta = [IX.sid[si] + (who ? ' h' : ' s') + IX.n[i], demoText(si)];
    if (who) meta.push('played by ' + who + (isDraft(i) ? ' (draft: not finished)' : ''));
    else if (st && st !== 'completed') meta.push(st);
    var li = el('li', { 'class': i === selected ? 'sel' : '', data: { idx: String(i) } },
      el('button', { type: 'button', onclick: function () { select(i, true); } },
        el('div', { 'class': 'row1' }, el('span', { 'class': 'pill v' + v, text: VERDICT[v] }),
          el('b', { text: IX.targets[IX.t[i]] }), el('span', { 'class': 'muted', text: mi >= 0 ? D.metrics[mi].id : '' })),
        el('div', { 'class': 'goal', text: IX.sgoal[si] || IX.sid[si] }),
        el('div', { 'class': 'meta', text: meta.filter(Boolean).join(' · ') })));
    return li;
  }
  // personOf is who played the user of conversation i when a person did
  // (the viewer's Play page), else ''; isDraft: still being played.
  function personOf(i) { return (IX.p || {})[String(i)] || ''; }
  function isDraft(i) { return !!(IX.dr || {})[String(i)]; }
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
  // marked splits a message into text and <mark> pieces at the judges'
  // quoted spans ([start, end) in UTF-16 units, sorted, disjoint), all as
  // text nodes.
  function marked(text, spans) {
    if (!spans) return text;
    var out = [], at = 0;
    spans.forEach(function (sp) {
      var a = Math.max(at, Math.min(sp[0], text.length)), b = Math.min(sp[1], text.length);
      if (b <= a) return;
      if (a > at) out.push(text.slice(at, a));
      out.push(el('mark', { 'class': 'ev', text: text.slice(a, b), title: 'quoted by the judge as evidence' }));
      at = b;
    });
    if (at < text.length) out.push(text.slice(at));
    return out;
  }
  function evidenceList(ev) {
    return el('ul', { 'class': 'evidence' }, ev.map(function (q) {
      var found = q.message !== null && q.message !== undefined;
      return el('li', { 'class': found ? 'found' : 'missing' }, '\u201c' + q.quote + '\u201d',
        found ? null : el('span', { 'class': 'muted', text: ' — not in the assistant\'s messages' }));
    }));
  }
  function evidenceState(u) {
    return u === true ? 'unverified: quotes not found in the assistant\'s messages, even after asking again (verdict kept)' :
      u === false ? 'verified: quotes found in the transcript' : '';
  }
  function yesNo(b) { return b === true ? 'yes' : b === false ? 'no' : 'null'; }
  function drawDetail(box, i, strs, rec, sc) {
    var target = IX.targets[IX.t[i]], mi = IX.m[i], metric = mi >= 0 ? D.metrics[mi] : null, v = IX.v[i];
    var st = IX.statuses[IX.st[i]];
    box.append(el('div', { 'class': 'detail-head' },
      el('span', { 'class': 'pill v' + v, text: VERDICT[v] }),
      el('b', { text: target }),
      el('span', { text: IX.sid[IX.s[i]] + (personOf(i) ? ' · played by a person: ' + personOf(i) + (isDraft(i) ? ' (a draft: not finished, not judged)' : '') : ' · sample ' + IX.n[i]) }),
      el('span', { 'class': 'muted', text: 'status: ' + statusLabel(st) + (rec.sr ? ' (' + rec.sr + ')' : '') }),
      el('span', { 'class': 'cid', text: convId(i) })));
    var chat = el('div', { 'class': 'chat', data: { testid: 'transcript' } });
    if (!rec.tr.length) chat.append(el('p', { 'class': 'muted', text: 'Empty transcript.' }));
    var marks = {};
    (rec.hl || []).forEach(function (h) { (marks[h[0]] = marks[h[0]] || []).push([h[1], h[2]]); });
    var ut = rec.ut || [], nUser = 0, flags = turnFlags(rec, strs);
    if (ut.length) chat.append(thoughtsToggle(chat));
    for (var x = 0; x + 1 < rec.tr.length; x += 2) {
      var role = strs[rec.tr[x]], cls = role === 'user' ? 'user' : role === 'assistant' ? 'assistant' : 'other';
      var who = role === 'user' ? (personOf(i) ? 'Person · ' + personOf(i) : 'Simulated user') : role === 'assistant' ? 'Assistant · ' + target : role;
      var thought = role === 'user' && nUser < ut.length ? strs[ut[nUser]] : '';
      if (role === 'user') nUser++;
      var k = x / 2, text = strs[rec.tr[x + 1]], refused = role === 'assistant' && flags.refused[k];
      chat.append(el('div', { 'class': 'msg ' + cls }, el('div', { 'class': 'who' }, who, turnBadges(flags, k, role)),
        thought ? el('div', { 'class': 'thought', hidden: 'hidden', data: { testid: 'thought' } },
          el('span', { 'class': 'muted', text: 'Hidden reasoning (the assistant never saw this): ' }), thought) : null,
        el('div', { 'class': 'body' }, refused && !text.trim() ? el('span', { 'class': 'muted', text: REFUSED_EMPTY }) : marked(text, marks[k]))));
    }
    var side = el('div', { 'class': 'side' });
    // Judge
    var judge = el('div', { 'class': 'box' }, el('h4', { text: 'Judge verdict' }));
    if (!rec.sc) judge.append(el('p', { 'class': 'muted', text: 'Not scored yet.' }));
    else {
      var s = rec.sc;
      if (s.unverified === true) judge.append(el('p', null, el('span', { 'class': 'badge unv', text: 'unverified evidence', data: { testid: 'unverified-badge' } })));
      judge.append(dlRows([['Verdict', VERDICT_LONG[v]], ['Behaviour present', yesNo(s.present)],
        ['Metric type', metric ? metric.type : ''], ['Null reason', s.null_reason || ''], ['Judge', s.judge || ''],
        ['Evidence', evidenceState(s.unverified)],
        ['Landmarks followed (valid)', s.valid === undefined ? '' : yesNo(s.valid)]]));
      if (s.justification) judge.append(el('h4', { text: 'Justification' }), textBlock(s.justification));
      if (s.evidence && s.evidence.length) judge.append(el('h4', { text: 'Quoted as evidence' }), evidenceList(s.evidence));
      if (s.judges && s.judges.length) {
        judge.append(el('h4', { text: 'Per-judge verdicts (' + s.judges.length + ')' }));
        s.judges.forEach(function (j) {
          judge.append(el('div', { 'class': 'judge' }, el('div', null, el('b', { text: j.judge || 'judge' }),
            ' · present: ' + yesNo(j.present), j.null_reason ? ' · ' + j.null_reason : '',
            j.unverified === true ? ' · unverified evidence' : ''),
            j.justification ? textBlock(j.justification) : null,
            j.evidence && j.evidence.length ? evidenceList(j.evidence) : null));
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
    if (rec.val) runRows.push(['Simulated user valid', yesNo(rec.val.valid) + (rec.val.failed && rec.val.failed.length ? ' (' + rec.val.failed.join(', ') + ')' : '') +
      (rec.val.checks ? ' · checked: ' + rec.val.checks : '') + (rec.val.reason ? ' — ' + rec.val.reason : '') + (rec.val.error ? ' — audit failed: ' + rec.val.error : '')]);
    if (rec.fid) fidelityRows(rec.fid).forEach(function (r) { runRows.push(r); });
    if (rec.sc && rec.sc.bt) runRows.push(['Behaviour first seen', 'assistant turn ' + rec.sc.bt + ' (first turn the judge\u2019s evidence was found in)']);
    if (runRows.length) side.append(el('div', { 'class': 'box' }, el('h4', { text: 'Run' }), dlRows(runRows)));
    box.append(el('div', { 'class': 'detail-grid' }, chat, side));
  }

  // fidelityRows describes what the checks of the simulated user did: each
  // rejected reply (never sent) and each redone attempt.
  function fidelityRows(f) {
    var out = [];
    (f.reasks || []).forEach(function (q) {
      out.push(['Rejected reply', 'turn ' + q.turn + ', reply ' + q.attempt + (q.redo ? ' (attempt ' + (q.redo + 1) + ')' : '') + ': ' + q.check + ' — ' + q.detail]);
    });
    (f.redos || []).forEach(function (d) {
      out.push(['Redone', 'attempt ' + d.redo + ' replaced one that was ' + d.status + ' and invalid (' + (d.failed || []).join(', ') + ')' + (d.reason ? ' — ' + d.reason : '')]);
    });
    return out;
  }

  // turnFlags gathers what the row stores about single messages, by
  // transcript index: refused (the target's provider stopped the reply
  // for safety), truncated (made from a reply cut short) and repairs (what
  // it took to read a simulated user's message; fixed phrases).
  function turnFlags(rec, strs) {
    var f = { refused: {}, truncated: {}, repairs: {} };
    (rec.rf || []).forEach(function (k) { f.refused[k] = true; });
    (rec.tc || []).forEach(function (k) { f.truncated[k] = true; });
    (rec.rp || []).forEach(function (r) { (f.repairs[r[0]] = f.repairs[r[0]] || []).push(strs[r[1]]); });
    return f;
  }
  var REFUSED_EMPTY = '(no text: the provider returned none; the judge and the simulated user were shown a note saying it stopped this reply for safety)';
  // turnBadges are message k's marks, as text.
  function turnBadges(f, k, role) {
    var out = [];
    if (role === 'assistant' && f.refused[k]) out.push(' ', el('span', { 'class': 'badge refused', text: 'provider safety stop', data: { testid: 'refused-badge' },
      title: 'the target\u2019s provider stopped this reply for safety: it is the target\u2019s answer, judged and counted' }));
    if (f.truncated[k]) out.push(' ', el('span', { 'class': 'badge cut', text: 'cut short', data: { testid: 'truncated-badge' },
      title: 'made from a reply longer than the client keeps (256 KiB), cut short' }));
    if (role === 'user' && f.repairs[k]) out.push(' ', el('span', { 'class': 'badge repaired', text: 'repaired: ' + f.repairs[k].join('; '), data: { testid: 'repair-badge' },
      title: 'what it took to read the simulated user\u2019s message from its reply' }));
    return out;
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
  guard('leaderboard mode', renderLbMode);
  guard('leaderboard', renderLeaderboard);
  guard('heatmap', renderHeatmap);
  guard('demographics', function () { if (renderDemoControls()) renderDemo(); });
  guard('pairwise', renderPairwise);
  guard('reliability', renderReliability);
  guard('simulated users', renderFidelity);
  guard('people vs simulated users', renderHuman);
  guard('variance', renderVariance);
  guard('calibration', renderCalibration);
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
