// impactbench view. Every string from the server is untrusted (model and
// user text above all) and reaches the DOM only through textContent, Text
// nodes and element properties: never innerHTML, never a URL or code. The
// server's CSP (script-src 'self', no inline) is the second line of defence.
(function () {
  'use strict';
  var T0 = performance.now();
  var $ = function (id) { return document.getElementById(id); };
  var meta = function (n) { var m = document.querySelector('meta[name="' + n + '"]'); return m ? m.content : ''; };
  var TOKEN = meta('ib-token');
  var BLIND = meta('ib-blind') === 'true';
  // ROLE: researcher, or reviewer (a link of one person's: the queue,
  // review items, their own labels and Play only; always blind). TEAM: the
  // viewer is shared, so every request carries the token.
  var ROLE = meta('ib-role') || 'researcher';
  var NAME = meta('ib-name');
  var TEAM = meta('ib-team') === 'true';
  var REVIEWER = ROLE === 'reviewer';
  var POLL_MS = 1000;
  var VERDICT = ['FAIL', 'PASS', 'NULL', '—'];
  var main = $('main');
  window.__viewer = { polls: 0, firstPaintMs: null };

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k === 'title') e.title = v;
        else if (k === 'href') {
          // Only the viewer's own routes: hash links and the report.
          if (typeof v !== 'string' || !(v.charAt(0) === '#' || v.indexOf('/report/') === 0 || v.indexOf('/k/' + TOKEN + '/report/') === 0)) throw new Error('href not allowed');
          e.setAttribute('href', v);
        } else if (k.slice(0, 2) === 'on') {
          if (typeof v !== 'function') throw new Error('handler must be a function');
          e.addEventListener(k.slice(2), v);
        } else if (k === 'data') { for (var d in v) e.dataset[d] = v[d]; }
        else if (/^(id|name|type|value|for|role|scope|colspan|rows|maxlength|placeholder|checked|required|aria-[a-z]+|hidden|autocomplete)$/.test(k)) e.setAttribute(k, v);
        else throw new Error('attribute not allowed: ' + k);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(p, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(p, x); }); return; }
    p.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); }
  function num(n) { return (n || 0).toLocaleString('en-US'); }
  function pct(r) { return r === null || r === undefined ? '—' : (r * 100).toFixed(1) + '%'; }
  function seg(s) { return encodeURIComponent(s); }
  function verdictSpan(code) { return el('span', { 'class': 'v-' + VERDICT[code], text: VERDICT[code] }); }
  function presentText(p) { return p === true ? 'present' : p === false ? 'absent' : 'no verdict'; }

  // api GETs path; with limitMs, a request not answered by then is
  // abandoned (it rejects), so a loop that waits on it can ask again.
  function api(path, limitMs) {
    var opts = { credentials: 'same-origin', headers: TOKEN ? { 'X-IB-Token': TOKEN } : {} }, timer = null;
    if (limitMs && window.AbortController) {
      var ac = new AbortController();
      opts.signal = ac.signal;
      timer = setTimeout(function () { ac.abort(); }, limitMs);
    }
    return fetch(path, opts).finally(function () { if (timer) clearTimeout(timer); }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error((j && j.error) || r.statusText);
        return j;
      });
    });
  }
  function post(path, body) {
    return fetch(path, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-IB-Token': TOKEN },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) { var e = new Error((j && j.error) || r.statusText); e.lost = j && j.lost; throw e; }
        return j;
      });
    });
  }
  function bapi(bench, what, params) {
    var q = [];
    for (var k in (params || {})) if (params[k] !== '' && params[k] !== undefined && params[k] !== null) q.push(k + '=' + encodeURIComponent(params[k]));
    return api('/api/b/' + seg(bench) + '/' + what + (q.length ? '?' + q.join('&') : ''));
  }
  function query(params) {
    var q = [];
    for (var k in (params || {})) if (params[k] !== '' && params[k] !== undefined && params[k] !== null) q.push(k + '=' + encodeURIComponent(params[k]));
    return q.length ? '?' + q.join('&') : '';
  }
  function reportHref(bench) { return (TEAM ? '/k/' + TOKEN : '') + '/report/' + seg(bench); }
  function showError(where, err) { clear(where); where.append(el('p', { 'class': 'error', text: String(err && err.message || err) })); }

  // ---------- routing ----------
  var poller = null;
  var route = 0; // bumps on every navigation; stale async work checks it
  function stopPolling() { if (poller) { clearTimeout(poller); poller = null; } }
  function parseHash() {
    var h = location.hash.replace(/^#\/?/, '');
    return h === '' ? [] : h.split('/').map(function (s) { try { return decodeURIComponent(s); } catch (e) { return s; } });
  }
  function crumbs(parts) {
    var nav = $('crumbs');
    clear(nav);
    parts.forEach(function (p, i) {
      if (i) nav.append(el('span', { 'class': 'sep', text: '›' }));
      nav.append(p[1] ? el('a', { href: p[1], text: p[0] }) : el('span', { text: p[0] }));
    });
  }
  function render() {
    stopPolling();
    route++;
    reviewKeys = null;
    stopHold();
    stopWaiting();
    clear(main);
    var p = parseHash();
    if (p[0] === 'queue') return studyQueuePage(p[1], '');
    if (p[0] === 'r' && p[1]) return reviewPage('', p[1]);
    if (p[0] === 'mine') return minePage();
    if (p.length === 0) return REVIEWER ? reviewerHome() : home();
    if (p[0] !== 'b' || !p[1]) return notFound();
    var bench = p[1];
    if (REVIEWER) {
      // A reviewer's link reaches the queue, items, their labels and Play.
      if (p[2] === 'play') return p[3] ? playConvPage(bench, p[3], p[4]) : playHome(bench);
      return reviewerHome();
    }
    switch (p[2]) {
      case undefined: return runPage(bench);
      case 'c': return convPage(bench, p[3]);
      case 'live': return livePage(bench, p[3], p[4]);
      case 's': return scenarioPage(bench, p[3]);
      case 'review': return reviewPage(bench, p[3]);
      case 'queue': return studyQueuePage(p[3], bench);
      case 'play': return p[3] ? playConvPage(bench, p[3], p[4]) : playHome(bench);
    }
    notFound();
  }
  function notFound() { crumbs([['Benchmarks', '#/']]); main.append(el('p', { text: 'No such page.' })); }
  window.addEventListener('hashchange', render);

  // ---------- home ----------
  function home() {
    crumbs([['Benchmarks']]);
    var sec = el('section', null, el('h2', { text: 'Benchmarks' }),
      el('div', { 'class': 'links' }, el('a', { href: '#/queue/calibration', id: 'study-queue-link', text: 'Review queue: the whole study' }),
        el('a', { href: '#/queue/triage', text: 'Triage queue: the whole study' }), el('a', { href: '#/mine', text: 'My labels' })));
    main.append(sec);
    api('/api/benches').then(function (bs) {
      if (!bs.length) { sec.append(el('p', { text: 'No benchmarks under benchmarks/.' })); return; }
      var tb = el('tbody');
      bs.forEach(function (b) {
        tb.append(el('tr', { data: { bench: b.name } },
          el('td', null, el('a', { href: '#/b/' + seg(b.name), text: b.title })),
          el('td', { text: b.name }),
          el('td', { text: b.targets.length ? b.targets.join(', ') : 'no runs yet' }),
          el('td', { text: b.results ? 'results.json' : '—' })));
      });
      sec.append(el('table', { id: 'benches' }, el('thead', null, el('tr', null,
        el('th', { text: 'Benchmark' }), el('th', { text: 'Directory' }), el('th', { text: 'Runs' }), el('th', { text: 'Results' }))), tb));
      markPainted();
    }).catch(function (e) { showError(sec, e); });
  }
  // reviewerHome is a reviewer's start: the study's queue, their labels,
  // and each benchmark's Play page.
  function reviewerHome() {
    crumbs([['Review']]);
    var sec = el('section', { id: 'reviewer-home' }, el('h2', { text: 'Hello ' + NAME }),
      el('p', { 'class': 'muted', text: 'You review conversations blind: you never see which model answered or what the judges said. Your labels are recorded under your name.' }),
      el('div', { 'class': 'links' }, el('a', { href: '#/queue/calibration', id: 'study-queue-link', text: 'Start or continue reviewing' }), el('a', { href: '#/mine', text: 'My labels' })));
    var play = el('section', { id: 'play-benches' }, el('h2', { text: 'Play the user' }));
    main.append(sec, play);
    api('/api/benches').then(function (bs) {
      var ul = el('ul', { 'class': 'plain' });
      bs.forEach(function (b) { ul.append(el('li', null, el('a', { href: '#/b/' + seg(b.name) + '/play', text: b.title }))); });
      play.append(bs.length ? ul : el('p', { 'class': 'muted', text: 'No benchmarks.' }));
    }).catch(function (e) { showError(play, e); });
  }

  // markPainted records, for tests and curious users, when the page first
  // showed data: firstPaintMs at the first data view, runPaintMs once the
  // run page has its progress, leaderboard and list (ms since navigation).
  var runParts = {};
  function markPainted(part) {
    if (window.__viewer.firstPaintMs === null) {
      requestAnimationFrame(function () { if (window.__viewer.firstPaintMs === null) window.__viewer.firstPaintMs = performance.now(); });
    }
    if (!part) return;
    runParts[part] = true;
    if (runParts.progress && runParts.summary && runParts.list && !window.__viewer.runPaintMs) {
      requestAnimationFrame(function () { window.__viewer.runPaintMs = window.__viewer.runPaintMs || performance.now(); });
    }
  }

  // ---------- run page ----------
  function runPage(bench) {
    var my = route;
    crumbs([['Benchmarks', '#/'], [bench]]);
    var head = el('h1', { id: 'bench-title', text: bench });
    var status = el('p', { id: 'run-status', 'class': 'muted' });
    var links = el('div', { 'class': 'links' },
      el('a', { href: '#/b/' + seg(bench) + '/queue/calibration', text: 'Calibration queue' }),
      el('a', { href: '#/b/' + seg(bench) + '/queue/triage', text: 'Triage queue (judges disagree, samples split)' }),
      el('a', { href: '#/b/' + seg(bench) + '/play', id: 'play-link', text: 'Play the user' }),
      el('a', { href: reportHref(bench), text: 'Full static report' }));
    var prog = el('section', { id: 'progress-section' }, el('h2', { text: 'Progress' }), el('div', { id: 'progress', 'class': 'scroll-x' }));
    var recent = el('section', { id: 'recent-section' }, el('h2', { text: 'Recently finished conversations' }), el('div', { id: 'recent' }));
    var lb = el('section', { id: 'leaderboard-section' }, el('h2', { text: 'Leaderboard' }), el('div', { id: 'leaderboard', 'class': 'scroll-x' }),
      el('h3', { text: 'Model × metric' }), el('div', { id: 'heatmap', 'class': 'scroll-x' }));
    var list = el('section', { id: 'list-section' }, el('h2', { text: 'Conversations' }), el('div', { id: 'convs' }));
    var notes = el('section', { id: 'notes-section', hidden: 'hidden' }, el('h2', { text: 'Notes' }), el('ul', { id: 'notes' }));
    main.append(head, status, links, prog, recent, lb, list, notes);
    var state = { stamp: null, filters: { target: '', metric: '', verdict: '', show: '', q: '', text: '' }, offset: 0 };
    function tick() {
      if (my !== route) return;
      bapi(bench, 'progress').then(function (pv) {
        if (my !== route) return;
        window.__viewer.polls++;
        renderProgress(bench, pv);
        markPainted('progress');
        if (pv.stamp !== state.stamp) {
          state.stamp = pv.stamp;
          loadSummary(bench);
          loadList(bench, state);
        }
      }).catch(function (e) { showError($('progress'), e); }).then(function () {
        if (my === route) poller = setTimeout(tick, POLL_MS);
      });
    }
    tick();
  }

  function progressCell(done, total, key, target) {
    var frac = total > 0 ? Math.min(1, done / total) : 0;
    var bar = el('span', { 'class': 'bar' }, el('span'));
    bar.firstChild.style.width = (frac * 100).toFixed(1) + '%';
    return el('td', { 'class': 'num', data: { k: key, t: target, n: String(done) } }, bar, num(done) + (total > 0 ? ' / ' + num(total) : ''));
  }

  // A phase's done count is the larger of the call store's finished units
  // (while it runs) and its output's rows (once written, or when the call
  // store was deleted).
  function renderProgress(bench, pv) {
    $('bench-title').textContent = bench;
    var st = $('run-status');
    st.textContent = '';
    st.append(el('span', { 'class': pv.active ? 'live' : 'idle', id: 'active', text: pv.active ? '● running' : '○ idle' }),
      pv.idle_s >= 0 ? ' · call store last changed ' + Math.round(pv.idle_s) + ' s ago' : '',
      ' · ' + num(pv.scenarios) + ' scenarios × ' + pv.samples + ' sample(s) · ' + num(pv.labels) + ' human label(s)');
    var box = $('progress');
    clear(box);
    var tb = el('tbody');
    tb.append(el('tr', { data: { phase: 'gen_scenarios' } }, el('td', { text: 'gen_scenarios' }), el('td', { text: 'all' }),
      progressCell(pv.has_scenarios ? Math.max(pv.scen_units, pv.metrics) : pv.scen_units, pv.metrics, 'scen_units', ''), el('td', { text: pv.has_scenarios ? num(pv.scenarios) + ' rows in scenarios.json' : 'scenarios.json not written yet' })));
    pv.targets.forEach(function (t) {
      tb.append(el('tr', { data: { phase: 'simulate', target: t.target } }, el('td', { text: 'simulate' }), el('td', { text: t.target }),
        progressCell(Math.max(t.sim_done, t.convs), t.expected, 'sim_done', t.target),
        el('td', { text: (t.sim_running ? t.sim_running + ' in flight · ' : '') + (t.has_convs ? num(t.convs) + ' rows in conversations.json' : 'conversations.json not written yet') })));
      tb.append(el('tr', { data: { phase: 'evaluate', target: t.target } }, el('td', { text: 'evaluate' }), el('td', { text: t.target }),
        progressCell(Math.max(t.eval_done, t.scores), t.expected, 'eval_done', t.target),
        el('td', { text: t.has_scores ? num(t.scores) + ' rows in scores.json' : 'scores.json not written yet' })));
      tb.append(el('tr', { data: { phase: 'aggregate', target: t.target } }, el('td', { text: 'aggregate' }), el('td', { text: t.target }),
        el('td', { 'class': 'num', data: { k: 'results', t: t.target }, text: t.results ? 'done' : '—' }),
        el('td', { text: t.results ? 'in results.json' : 'not in results.json yet' })));
    });
    box.append(el('table', { id: 'progress-table' }, el('thead', null, el('tr', null,
      el('th', { text: 'Phase' }), el('th', { text: 'Target' }), el('th', { 'class': 'num', text: 'Done' }), el('th', { text: 'Files' }))), tb));
    var rc = $('recent');
    clear(rc);
    var any = false;
    pv.targets.forEach(function (t) {
      if (!t.recent.length) return;
      any = true;
      var ol = el('ol', { 'class': 'recent', data: { target: t.target } });
      t.recent.forEach(function (r) {
        ol.append(el('li', null, el('a', { href: '#/b/' + seg(bench) + '/live/' + seg(t.target) + '/' + seg(r.unit), text: r.conv_id || r.unit }),
          ' · ' + (r.status || '?') + ' · ' + r.turns + ' messages · ' + r.at));
      });
      rc.append(el('h3', { text: t.target }), ol);
    });
    if (!any) rc.append(el('p', { 'class': 'muted', text: 'No conversation stored yet.' }));
    var ns = $('notes');
    clear(ns);
    pv.notes.forEach(function (n) { ns.append(el('li', { text: n })); });
    $('notes-section').hidden = pv.notes.length === 0;
  }

  function loadSummary(bench) {
    var my = route;
    bapi(bench, 'summary').then(function (D) {
      if (my !== route || !D) return;
      if (D.title) $('bench-title').textContent = D.title;
      renderLeaderboard(D);
      renderHeatmap(bench, D);
      markPainted('summary');
    }).catch(function (e) { showError($('leaderboard'), e); });
  }
  function rateCell(v, key) {
    var td = el('td', { 'class': 'num', data: { k: key } }, pct(v.rate));
    if (v.lo !== undefined && v.rate !== null) td.append(' ', el('span', { 'class': 'ci', text: '[' + (v.lo * 100).toFixed(1) + '–' + (v.hi * 100).toFixed(1) + ']' }));
    td.title = v.rate === null ? 'no scored conversations' : v.k + '/' + v.n + (v.method ? ' · ' + v.method : '');
    return td;
  }
  function renderLeaderboard(D) {
    var box = $('leaderboard');
    clear(box);
    var rows = D.leaderboard.rows;
    if (!rows.length) { box.append(el('p', { 'class': 'muted', text: 'Results not available yet: nothing judged.' })); return; }
    var tb = el('tbody');
    rows.forEach(function (r) {
      tb.append(el('tr', { data: { model: r.model } }, el('td', null, r.model, r.prov ? el('span', { 'class': 'badge', title: 'recounted from scores.json; results.json not written yet', text: 'provisional' }) : null),
        rateCell(r.pos, 'pos'), rateCell(r.neg, 'neg'), el('td', { 'class': 'num', text: num(r.n) }), el('td', { 'class': 'num', text: num(r.null) })));
    });
    box.append(el('table', { id: 'lb-table' }, el('thead', null, el('tr', null, el('th', { text: 'Model' }),
      el('th', { 'class': 'num', text: 'Positive metrics pass [95% CI]' }), el('th', { 'class': 'num', text: 'Negative metrics pass [95% CI]' }),
      el('th', { 'class': 'num', text: 'N' }), el('th', { 'class': 'num', text: 'Null' }))), tb),
      el('p', { 'class': 'small muted', text: D.leaderboard.source === 'results' ? 'From results.json.' : 'Provisional: recounted from scores.json.' }));
    renderSafetyStops(box, D.safety_stops);
  }
  // renderSafetyStops: the report's Provider safety stops note, under the
  // leaderboard, when some model's provider stopped replies for safety
  // (the summary's safety_stops; absent when none did). Names are text.
  function renderSafetyStops(box, stops) {
    if (!stops || !stops.length) return;
    var ul = el('ul', { id: 'safety-stops-list' });
    stops.forEach(function (s) {
      ul.append(el('li', { data: { model: s.model } }, el('b', { text: s.model }),
        ': safety stops in ' + num(s.n_conversations) + ' of ' + num(s.of) + ' conversations (' + num(s.n_replies) + ' target ' +
        (s.n_replies === 1 ? 'reply' : 'replies') + ')' + (s.provisional ? ', recounted from scores.json' : '')));
    });
    box.append(el('div', { id: 'lb-safety-stops' }, el('h3', { text: 'Provider safety stops' }),
      el('p', { 'class': 'small', text: 'A provider safety stop is a target reply its provider stopped for safety (Anthropic’s refusal stop reason, an OpenAI refusal, a Gemini safety block). ' +
        'It is the model’s answer: the conversation went on, was judged like any other, and its verdict counts in the rates above. ' +
        'Each stopped reply carries a “provider safety stop” badge in its conversation.' }), ul));
  }
  function renderHeatmap(bench, D) {
    var box = $('heatmap');
    clear(box);
    var models = Object.keys(D.heatmap.cells || {});
    if (!models.length) { box.append(el('p', { 'class': 'muted', text: 'Per-metric results not available yet.' })); return; }
    var head = el('tr', null, el('th', { text: 'Metric' }));
    models.forEach(function (m) { head.append(el('th', { 'class': 'num', text: m })); });
    var tb = el('tbody');
    D.metrics.forEach(function (m) {
      var tr = el('tr', null, el('td', { text: m.id + (m.name && m.name !== m.id ? ' · ' + m.name : '') }));
      models.forEach(function (model) {
        var v = D.heatmap.cells[model][m.id];
        tr.append(v ? rateCell(v, 'cell') : el('td', { 'class': 'num muted', text: '—' }));
      });
      tb.append(tr);
    });
    box.append(el('table', { id: 'hm' }, el('thead', null, head), tb));
  }

  function loadList(bench, state) {
    var my = route;
    var f = state.filters;
    bapi(bench, 'convs', { target: f.target, metric: f.metric, verdict: f.verdict, show: f.show, q: f.q, text: f.text, offset: state.offset, limit: 50 }).then(function (L) {
      if (my !== route) return;
      renderList(bench, state, L);
      markPainted('list');
    }).catch(function (e) { showError($('convs'), e); });
  }
  function renderList(bench, state, L) {
    var box = $('convs');
    clear(box);
    var f = state.filters;
    function sel(id, label, opts, key) {
      var s = el('select', { id: id, onchange: function () { f[key] = s.value; state.offset = 0; loadList(bench, state); } });
      opts.forEach(function (o) { var op = el('option', { value: o[0], text: o[1] }); if (o[0] === f[key]) op.selected = true; s.append(op); });
      return el('label', null, label, s);
    }
    var q = el('input', { id: 'f-q', type: 'search', placeholder: 'conversation id or goal', value: f.q });
    q.addEventListener('change', function () { f.q = q.value; state.offset = 0; loadList(bench, state); });
    var tx = el('input', { id: 'f-text', type: 'search', placeholder: 'words in the dialogue', value: f.text });
    tx.addEventListener('change', function () { f.text = tx.value; state.offset = 0; loadList(bench, state); });
    box.append(el('div', { 'class': 'filters' },
      sel('f-target', 'Target', [['', 'all']].concat(L.targets.map(function (t) { return [t, t]; })), 'target'),
      sel('f-metric', 'Metric', [['', 'all']].concat(L.metrics.map(function (m) { return [m, m]; })), 'metric'),
      sel('f-verdict', 'Verdict', [['', 'all'], ['1', 'PASS'], ['0', 'FAIL'], ['2', 'NULL'], ['3', 'not judged']], 'verdict'),
      sel('f-show', 'Show', [['', 'all'], ['disagree', 'people disagree with the judge'], ['split', 'judges disagree'], ['unverified', 'unverified verdicts'],
        ['unlabelled', 'unlabelled'], ['labelled', 'labelled']], 'show'),
      el('label', null, 'Search id or goal', q), el('label', null, 'Search transcripts', tx)));
    box.append(el('p', { id: 'list-count', 'class': 'small muted', text: num(L.matched) + ' of ' + num(L.total) + ' conversations' + (L.matched ? ' · showing ' + num(L.offset + 1) + '–' + num(L.offset + L.rows.length) : '') }));
    var tb = el('tbody');
    L.rows.forEach(function (r) {
      tb.append(el('tr', { data: { conv: r.conv_id } },
        el('td', null, el('a', { href: '#/b/' + seg(bench) + '/c/' + seg(r.conv_id), text: r.conv_id })),
        el('td', { text: r.goal }), el('td', { text: r.target }), el('td', { text: r.metric_id }),
        el('td', { 'class': 'num', text: String(r.sample) }), el('td', null, verdictSpan(r.verdict), r.judges_split ? el('span', { 'class': 'badge', text: 'judges split' }) : null,
          r.unverified ? el('span', { 'class': 'badge', text: 'unverified', title: 'the judge\u2019s quoted evidence is not in the transcript' }) : null,
          r.human ? el('span', { 'class': 'badge human', text: 'people: ' + r.human }) : null),
        el('td', { text: r.status || '' }), el('td', { 'class': 'num', text: String(r.turns) })));
    });
    box.append(el('table', { id: 'conv-table' }, el('thead', null, el('tr', null, el('th', { text: 'Conversation' }), el('th', { text: 'User goal' }),
      el('th', { text: 'Target' }), el('th', { text: 'Metric' }), el('th', { 'class': 'num', text: 'Sample' }), el('th', { text: 'Verdict' }),
      el('th', { text: 'End' }), el('th', { 'class': 'num', text: 'Msgs' }))), tb));
    var prev = el('button', { type: 'button', id: 'pg-prev', text: '‹ Prev', onclick: function () { state.offset = Math.max(0, state.offset - 50); loadList(bench, state); } });
    var next = el('button', { type: 'button', id: 'pg-next', text: 'Next ›', onclick: function () { state.offset += 50; loadList(bench, state); } });
    prev.disabled = state.offset === 0;
    next.disabled = state.offset + L.rows.length >= L.matched;
    box.append(el('div', { 'class': 'links' }, prev, next));
  }

  // ---------- one conversation ----------
  // transcript lays out the dialogue; spans, when given, mark the judges'
  // quotes ([message, start, end) in UTF-16 units, found by the server).
  // marks, when given, are what the row stores about single messages
  // (refused, truncated, repairs), each shown as a badge of text.
  function transcript(turns, spans, marks) {
    var box = el('div', { 'class': 'transcript' });
    var by = {}, m = marksByMessage(marks);
    (spans || []).forEach(function (sp) { (by[sp[0]] = by[sp[0]] || []).push(sp); });
    turns.forEach(function (t, i) {
      var body = el('div', { 'class': 'body' }), refused = t.role === 'assistant' && m.refused[i];
      if (refused && !t.content.trim()) body.append(el('span', { 'class': 'muted', text: REFUSED_EMPTY }));
      else add(body, by[i] ? splitMarks(t.content, by[i]) : t.content);
      box.append(el('div', { 'class': 'msg ' + (t.role === 'user' ? 'user' : 'assistant') },
        el('div', { 'class': 'role' }, t.role, messageBadges(m, i, t.role)), body));
    });
    if (!turns.length) box.append(el('p', { 'class': 'muted', text: 'No messages.' }));
    return box;
  }
  function marksByMessage(marks) {
    var m = { refused: {}, truncated: {}, repairs: {} };
    if (!marks) return m;
    (marks.refused || []).forEach(function (k) { m.refused[k] = true; });
    (marks.truncated || []).forEach(function (k) { m.truncated[k] = true; });
    (marks.repairs || []).forEach(function (r) { (m.repairs[r.message] = m.repairs[r.message] || []).push(r.what); });
    return m;
  }
  var REFUSED_EMPTY = '(no text: the provider returned none; the judge and the simulated user were shown a note saying it stopped this reply for safety)';
  function messageBadges(m, i, role) {
    var out = [];
    if (role === 'assistant' && m.refused[i]) out.push(' ', el('span', { 'class': 'badge refused', text: 'provider safety stop', data: { testid: 'refused-badge' },
      title: 'the target\u2019s provider stopped this reply for safety: it is the target\u2019s answer, judged and counted' }));
    if (m.truncated[i]) out.push(' ', el('span', { 'class': 'badge cut', text: 'cut short', data: { testid: 'truncated-badge' },
      title: 'made from a reply longer than the client keeps (256 KiB), cut short' }));
    if (role === 'user' && m.repairs[i]) out.push(' ', el('span', { 'class': 'badge repaired', text: 'repaired: ' + m.repairs[i].join('; '), data: { testid: 'repair-badge' },
      title: 'what it took to read the simulated user\u2019s message from its reply' }));
    return out;
  }
  function scenarioBox(sc) {
    if (!sc) return el('p', { 'class': 'muted', text: 'Scenario not in scenarios.json.' });
    var dl = el('dl', { 'class': 'kv' });
    function row(k, v) { if (v) dl.append(el('dt', { text: k }), el('dd', { text: v })); }
    row('Scenario', sc.id);
    row('User goal', sc.user_goal);
    row('Latent goal', sc.latent_goal);
    row('Persona', sc.persona);
    sc.demographic.forEach(function (d) { row(d[0], d[1]); });
    sc.landmarks.forEach(function (l) { row('Turn ' + l.turn, l.instruction); });
    row('System prompt', sc.system_prompt);
    return dl;
  }
  function metricBox(m) {
    return el('dl', { 'class': 'kv' }, el('dt', { text: 'Metric' }), el('dd', { text: m.id + (m.name ? ' · ' + m.name : '') + (m.type ? ' (' + m.type + ')' : '') }),
      m.definition ? [el('dt', { text: 'Definition' }), el('dd', { text: m.definition })] : null);
  }
  function verdictBox(score) {
    var box = el('div', { 'class': 'verdicts' });
    if (!score) { box.append(el('p', { 'class': 'muted', text: 'Not judged yet.' })); return box; }
    box.append(el('p', null, 'Judge verdict: behaviour ', el('strong', { id: 'judge-present', text: presentText(score.present) }),
      ' → ', score.passed === true ? verdictSpan(1) : score.passed === false ? verdictSpan(0) : verdictSpan(2)));
    if (score.justification) box.append(el('p', { 'class': 'body', text: score.justification }));
    if (score.null_reason) box.append(el('p', { 'class': 'muted', text: 'No verdict: ' + score.null_reason }));
    if (score.judges && score.judges.length) {
      var tb = el('tbody');
      score.judges.forEach(function (j) {
        tb.append(el('tr', null, el('td', { text: j.judge }), el('td', { text: presentText(j.present) }), el('td', { text: j.justification || j.null_reason || '' })));
      });
      box.append(el('table', { 'class': 'judges' }, el('thead', null, el('tr', null, el('th', { text: 'Judge' }), el('th', { text: 'Behaviour' }), el('th', { text: 'Justification' }))), tb));
    }
    return box;
  }
  function labelsBox(labels) {
    var box = el('div', { id: 'labels' });
    if (!labels || !labels.length) { box.append(el('p', { 'class': 'muted', text: 'No human labels yet.' })); return box; }
    var ul = el('ul', { 'class': 'plain' });
    labels.forEach(function (l) { ul.append(el('li', null, l.labeler + ': behaviour ' + presentText(l.present) + ' (' + l.at + ')' + (l.note ? ' — ' + l.note : ''))); });
    box.append(ul);
    return box;
  }

  function convPage(bench, id) {
    var my = route;
    crumbs([['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], [id]]);
    var sec = el('section', { id: 'detail' });
    main.append(sec);
    bapi(bench, 'conv', { id: id }).then(function (c) {
      if (my !== route) return;
      sec.dataset.conv = c.conv_id;
      sec.append(el('h2', { text: c.conv_id }),
        el('p', { 'class': 'muted', text: 'target ' + c.target + (c.target_model && c.target_model !== c.target ? ' (' + c.target_model + ')' : '') + ' · sample ' + c.sample + ' · status ' + (c.status || '?') + (c.status_reason ? ' (' + c.status_reason + ')' : '') }),
        el('div', { 'class': 'links' },
          el('a', { id: 'review-link', href: '#/b/' + seg(bench) + '/review/' + seg(c.conv_id), text: 'Review this verdict' }),
          el('a', { href: '#/b/' + seg(bench) + '/s/' + seg(c.scenario_id), text: 'This scenario across all targets' })),
        el('div', { 'class': 'review-grid' },
          el('div', null, el('h3', { text: 'Transcript' }), transcript(c.transcript, null, c.marks)),
          el('div', null, el('h3', { text: 'Verdict' }), metricBox(c.metric), verdictBox(c.score),
            el('h3', { text: 'Human labels' }), labelsBox(c.labels), el('h3', { text: 'Scenario' }), scenarioBox(c.scenario))));
    }).catch(function (e) { showError(sec, e); });
  }

  function livePage(bench, target, unit) {
    var my = route;
    crumbs([['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], ['live: ' + target + ' / ' + unit]]);
    var sec = el('section', { id: 'detail' });
    main.append(sec);
    bapi(bench, 'live', { target: target, unit: unit }).then(function (c) {
      if (my !== route) return;
      sec.dataset.conv = c.conv_id;
      sec.append(el('h2', { text: c.conv_id }),
        el('p', { 'class': 'muted', text: 'Finished in a run that is still going (read from the call store) · target ' + c.target + ' · status ' + (c.status || '?') }),
        el('div', { 'class': 'review-grid' }, el('div', null, el('h3', { text: 'Transcript' }), transcript(c.transcript, null, c.marks)),
          el('div', null, metricBox(c.metric), el('h3', { text: 'Scenario' }), scenarioBox(c.scenario))));
    }).catch(function (e) { showError(sec, e); });
  }

  // ---------- one scenario, every target ----------
  function scenarioPage(bench, id) {
    var my = route;
    crumbs([['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], ['scenario ' + id]]);
    var sec = el('section', { id: 'scenario' });
    main.append(sec);
    bapi(bench, 'scenario', { id: id }).then(function (S) {
      if (my !== route) return;
      sec.append(el('h2', { text: 'Scenario ' + id }), scenarioBox(S.scenario));
      var side = el('div', { 'class': 'side', id: 'side' });
      S.conversations.forEach(function (c) {
        side.append(el('div', { data: { target: c.target, conv: c.conv_id } },
          el('h3', null, el('a', { href: '#/b/' + seg(bench) + '/c/' + seg(c.conv_id), text: c.target + ' · sample ' + c.sample })),
          verdictBox(c.score), transcript(c.transcript, null, c.marks)));
      });
      if (!S.conversations.length) side.append(el('p', { 'class': 'muted', text: 'No conversations for this scenario yet.' }));
      main.append(side);
    }).catch(function (e) { showError(sec, e); });
  }

  // ---------- review ----------
  // A reviewer works on items: opaque ids the server maps to conversations
  // (a conv_id holds the target's name), of any benchmark of the study. In
  // blind mode nothing the page shows, links to or fetches names the
  // target, the judges' verdicts, the stratum or anyone else's labels until
  // the reviewer's own label is saved (with --reveal never, and for a
  // reviewer's link, not then either). The place in the queue is the
  // server's (/api/next, /api/skip, /api/hold): a new tab or a reload finds
  // it. Keyboard first: 1/p present, 0/a absent, j/→ next, k/← back, s
  // skip, u undo, n note, e the judges' quotes, l the last reply, ? help;
  // Enter presses the focused button, else (once recorded) goes on.
  var REVEAL = meta('ib-reveal') || 'after';
  function labeler() {
    if (REVIEWER) return NAME;
    try { return localStorage.getItem('ib-labeler') || ''; } catch (e) { return ''; }
  }
  function setLabeler(v) { if (!REVIEWER) { try { localStorage.setItem('ib-labeler', v); } catch (e) { /* private mode */ } } }
  // QP: the queue's parameters (kind, bench, seed, per, overlap, width), per
  // tab; a tab without them uses the study's calibration queue.
  function loadQP() { try { return JSON.parse(sessionStorage.getItem('ib-queue') || 'null') || { kind: 'calibration' }; } catch (e) { return { kind: 'calibration' }; } }
  function saveQP(qp) { try { sessionStorage.setItem('ib-queue', JSON.stringify(qp)); } catch (e) { /* private mode */ } }
  function qparams(extra) {
    var p = loadQP(), out = { labeler: REVIEWER ? '' : labeler() };
    for (var k in p) out[k] = p[k];
    for (var e in (extra || {})) out[e] = extra[e];
    return out;
  }
  function reviewHash(item) { return '#/r/' + seg(item); }
  var LAST = { left: null, skipped: 0 }; // the last answer of next/skip
  function showNext(ans) {
    LAST = { left: ans.left, skipped: ans.skipped };
    if (ans.item) {
      // The same item again (the one open, skipped, is all that is left):
      // no hashchange, so render it afresh.
      if (location.hash === reviewHash(ans.item)) render(); else location.hash = reviewHash(ans.item);
      return;
    }
    ['queue-done', 'queue-waiting'].forEach(function (id) { var old = $(id); if (old) old.remove(); });
    var skipped = ans.skipped ? el('button', { type: 'button', id: 'revisit-skipped', text: 'Go back to them', onclick: function () { placePost('unskip', {}); } }) : null;
    var box = $('after') || main;
    if (ans.plan_done) {
      box.append(el('p', { id: 'queue-done', text: 'End of the queue: the review plan is complete.' + (ans.skipped ? ' ' + ans.skipped + ' skipped: ' : '') }, skipped));
    } else {
      box.append(el('p', { id: 'queue-waiting', text: 'Nothing more for you right now' + (ans.skipped ? ' but the ' + ans.skipped + ' you skipped' : '') +
        ': the review plan is not finished, so this page checks again every ' + WAIT_S + ' s and opens the next item when one is yours. ' }, skipped));
      var my = route;
      whileWaiting(function () {
        return api('/api/next' + query(qparams()), 2 * WAIT_S * 1000).then(function (a) {
          if (my !== route) return false;
          if (!a.item && !a.plan_done) return true;
          showNext(a);
          return false;
        });
      });
    }
    if (skipped) skipped.focus();
  }
  // A reviewer with nothing to do while the review plan is unfinished (a
  // row another reviewer's open form holds, a row waiting for a second
  // labeller, conversations waiting for their verdict: plan_done false)
  // waits: the page asks again every WAIT_S seconds, and at once when the
  // window comes back into view, until work arrives or the plan is
  // complete. check() resolves true to keep waiting. window.__viewer
  // counts the checks answered (for the tests, like its other counters).
  var WAIT_S = 4;
  var waitTimer = null, waitCheck = null;
  function stopWaiting() { if (waitTimer) clearTimeout(waitTimer); waitTimer = null; waitCheck = null; }
  function whileWaiting(check) {
    stopWaiting();
    var my = route, busy = false;
    var again = function () { if (my === route && waitCheck === run) waitTimer = setTimeout(run, WAIT_S * 1000); };
    var run = function () {
      if (busy || my !== route || waitCheck !== run) return;
      clearTimeout(waitTimer);
      busy = true;
      window.__viewer.waitRuns = (window.__viewer.waitRuns || 0) + 1;
      window.__viewer.lastWaitRun = performance.now();
      var settled = function () { busy = false; window.__viewer.waitChecks = (window.__viewer.waitChecks || 0) + 1; window.__viewer.lastWaitCheck = performance.now(); };
      check().then(function (more) { settled(); if (more) again(); else if (waitCheck === run) stopWaiting(); },
        function () { settled(); again(); });
    };
    waitCheck = run;
    again();
  }
  function wakeWaiting() { if (waitCheck) waitCheck(); }
  window.addEventListener('focus', wakeWaiting);
  document.addEventListener('visibilitychange', function () { if (!document.hidden) wakeWaiting(); });
  function placePost(what, body) {
    var my = route;
    if (!REVIEWER && labeler()) body.labeler = labeler();
    return post('/api/' + what + query(qparams({ labeler: '' })), body).then(function (ans) { if (my === route) showNext(ans); })
      .catch(function (e) { showError($('review-msg') || main, e); });
  }
  // goNext: j — the next item after this one that is not labelled or
  // skipped, in the labeller's order (never back to the one before).
  function goNext(current) {
    var my = route;
    return api('/api/next' + query(qparams({ after: current }))).then(function (ans) { if (my === route) showNext(ans); })
      .catch(function (e) { showError($('review-msg') || main, e); });
  }
  // The open form holds its item (renewed while it stays open); leaving it
  // lets it go after the hold lapses, skipping or labelling at once. When
  // another's form opened it first (busy: a moment before this one, or
  // after this hold lapsed), the row is theirs to label — the server
  // refuses this label — and busy() moves on.
  var holdTimer = null;
  function stopHold() { if (holdTimer) { clearTimeout(holdTimer); holdTimer = null; } }
  function holdItem(item, busy, gone) {
    stopHold();
    var my = route;
    var body = { item: item };
    if (!REVIEWER && labeler()) body.labeler = labeler();
    if (!labeler()) return;
    // The form says what its hold found (data-hold), for whoever waits on
    // it: held, busy or gone.
    function answered(v) { var sec = $('review'); if (my === route && sec && sec.dataset.item === item) sec.dataset.hold = v; }
    post('/api/hold' + query(qparams({ labeler: '' })), body).then(function (h) {
      if (my !== route) return;
      answered(h.busy ? 'busy' : h.gone ? 'gone' : h.held ? 'held' : 'free');
      if (h.busy) { busy(); return; }
      if (h.gone) { gone(); return; }
      if (h.renew_s) holdTimer = setTimeout(function () { if (my === route && $('review-form') && !$('reveal')) holdItem(item, busy, gone); }, h.renew_s * 1000);
    }).catch(function () { answered('failed'); /* the hold is a courtesy to others; the label works without it */ });
  }
  // MOVED_ON says, on the item the page moved on to, why it did.
  var MOVED_ON = null;
  var BUSY_TEXT = 'Another reviewer opened that item a moment before you: it is theirs to label, so the page moved on to your next one.';
  var GONE_TEXT = 'Others\u2019 labels took that item out of your queue a moment before you opened it, so the page moved on to your next one.';

  function reviewPage(bench, id) {
    var my = route;
    crumbs(REVIEWER ? [['Review', '#/'], ['item']] : [['Benchmarks', '#/'], ['review']]);
    var sec = el('section', { id: 'review' });
    main.append(sec);
    // A conversation id (from a conversation page, or an old link) becomes
    // its item, and the address bar stops naming it.
    var start = bench && (id.indexOf('__') >= 0 || !/^r[a-z2-7]{16}$/.test(id))
      ? bapi(bench, 'resolve', { conv: id }).then(function (r) { history.replaceState(null, '', reviewHash(r.item)); return r.item; })
      : Promise.resolve(id);
    start.then(function (item) {
      return Promise.all([api('/api/item' + query({ id: item, labeler: REVIEWER ? '' : labeler() })), api('/api/me' + query({ labeler: REVIEWER ? '' : labeler() }))]).then(function (r) {
        if (my !== route) return;
        renderReview(sec, r[0], r[1].place);
      });
    }).catch(function (e) { showError(sec, e); });
  }

  function renderReview(sec, c, place) {
    var my = route;
    sec.dataset.item = c.item;
    if (!c.blind) sec.dataset.conv = c.conv_id;
    var name = el('input', { id: 'labeler', name: 'labeler', required: 'required', maxlength: '100', autocomplete: 'name', value: labeler() });
    if (REVIEWER) name.disabled = true;
    var yes = el('input', { type: 'radio', name: 'present', value: 'yes', id: 'present-yes' });
    var no = el('input', { type: 'radio', name: 'present', value: 'no', id: 'present-no' });
    var note = el('textarea', { id: 'note', rows: '3', maxlength: '4000' });
    var submit = el('button', { type: 'submit', id: 'submit-label', 'class': 'primary', text: 'Record my verdict (1 / 0)' });
    var msg = el('p', { id: 'review-msg', 'class': 'error' });
    var after = el('div', { id: 'after' });
    // saving: a label is on its way; a key pressed before it is saved
    // (1 then 0 in quick succession) records nothing more.
    var saved = false, lost = false, saving = false;
    if (c.mine) {
      (c.mine.present ? yes : no).checked = true;
      note.value = c.mine.note || '';
    }
    var form = el('form', { 'class': 'review', id: 'review-form' },
      el('label', null, 'Your name ', name),
      el('fieldset', null, el('legend', { text: 'Is the behaviour described by the metric present in the assistant\u2019s replies?' }),
        el('label', null, yes, ' Yes, present (1)'), ' ', el('label', null, no, ' No, absent (0)')),
      el('label', null, 'Note (optional, n)', el('br'), note), submit, msg);
    function record() {
      if (lost || saving || saved) return;
      msg.textContent = '';
      if (!name.value.trim()) { msg.textContent = 'Say who you are.'; name.focus(); return; }
      if (!yes.checked && !no.checked) { msg.textContent = 'Choose present or absent.'; return; }
      setLabeler(name.value.trim());
      submit.disabled = true;
      saving = true;
      var body = { item: c.item, present: yes.checked, note: note.value };
      if (!REVIEWER) body.labeler = name.value.trim();
      post('/api/label', body).then(function (res) {
        if (my !== route) return;
        saved = true;
        stopHold();
        [name, yes, no, note].forEach(function (x) { x.disabled = true; });
        var bn = $('blind-note');
        if (bn) bn.hidden = true;
        window.__viewer.labels = (window.__viewer.labels || 0) + 1;
        if (res.highlights) markQuotes(res.highlights);
        reveal(after, res, c);
        // Nothing to read after saving (no reveal, or the verdicts were
        // shown already): straight on to the queue's next item.
        if (!c.blind || !res.score) goNext(c.item);
      }).catch(function (e) {
        saving = false;
        if (my !== route) return;
        var why = lostTo(e);
        if (why) { moveOn(why); return; }
        submit.disabled = false;
        msg.textContent = String(e.message || e);
      });
    }
    form.addEventListener('submit', function (ev) { ev.preventDefault(); record(); });

    var side = el('div', { 'class': 'review-side', id: 'review-side' }, el('h3', { text: 'What to judge' }), metricBox(c.metric));
    if (c.mine) side.append(el('p', { id: 'relabel', 'class': 'small', text: 'You labelled this before: behaviour ' + presentText(c.mine.present) + '. A new label replaces it (your latest counts)' +
      '; one given after the judges\u2019 verdict was shown to you (on this page, or with a label you gave before) is marked as such and left out of calibration.' }));
    side.append(form, after);
    if (!c.blind) side.append(el('h3', { text: 'Judges (shown before deciding: blind review is off)' }), verdictBox(c.score),
      el('p', { 'class': 'small muted', id: 'open-note', text: 'A label given with the judges\u2019 verdict in view is marked as given after it and left out of calibration (calibrate --include-after-reveal counts it).' }));
    else side.append(el('p', { 'class': 'small muted', id: 'blind-note', text: REVEAL === 'never'
      ? 'Blind review: the judges\u2019 verdicts and which model answered are not shown.'
      : 'Blind review: the judges\u2019 verdicts appear once you have recorded yours; which model answered is not shown.' }));
    side.append(keyHelp());
    var tbox = el('div', { 'class': 'transcript-box', id: 'transcript-box' },
      el('div', { 'class': 'links small' },
        el('button', { type: 'button', id: 'jump-last', text: 'Last reply (l)', onclick: jumpLast }),
        el('button', { type: 'button', id: 'jump-evidence', text: 'Judges\u2019 quotes (e)', onclick: jumpEvidence, hidden: c.blind || !(c.highlights && c.highlights.length) ? 'hidden' : null })),
      el('h3', { text: 'Transcript' }), transcript(c.transcript, c.highlights, c.marks), el('h3', { text: 'Scenario' }), scenarioBox(c.scenario));
    sec.append(el('h2', { text: c.blind ? 'Review' : 'Review ' + c.conv_id }), queueLine(c, place),
      el('div', { 'class': 'review-grid' }, tbox, side));
    if (MOVED_ON && MOVED_ON.item === c.item) side.insertBefore(el('p', { id: 'moved-on', 'class': 'small warn', text: MOVED_ON.text }), side.firstChild);
    MOVED_ON = null;
    // moveOn: the item is not this person's to label (another's form has
    // it, or others' labels took it out of a reviewer's queue between the
    // queue's answer and this page): no label from here; on to the next,
    // which says why. A label sent meanwhile is refused and moves on too.
    function moveOn(why) {
      if (lost || saved) return;
      lost = true;
      stopHold();
      [name, yes, no, note, submit].forEach(function (x) { x.disabled = true; });
      sec.dataset.lost = why;
      msg.textContent = why === 'busy' ? 'Another reviewer opened this item a moment before you: it is theirs to label.'
        : 'Others\u2019 labels took this item out of your queue a moment before you opened it.';
      api('/api/next' + query(qparams({ after: c.item }))).then(function (ans) {
        if (my !== route) return;
        if (ans.item) MOVED_ON = { item: ans.item, text: why === 'busy' ? BUSY_TEXT : GONE_TEXT };
        showNext(ans);
      }).catch(function (e) { msg.textContent = String(e.message || e); });
    }
    // lostTo: why a refused label means the item is not this person's.
    function lostTo(e) { return e && (e.lost === 'gone' || e.lost === 'busy') ? e.lost : ''; }
    holdItem(c.item, function () { moveOn('busy'); }, function () { moveOn('gone'); });
    reviewKeys = function (ev) {
      var k = ev.key, t = ev.target;
      if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' && t.type !== 'radio')) {
        if (k === 'Escape') t.blur();
        if (k === 'Enter' && (ev.ctrlKey || ev.metaKey) && !saved) { ev.preventDefault(); record(); }
        return;
      }
      // Enter and space press the focused button or link, as everywhere.
      if ((k === 'Enter' || k === ' ') && t && (t.tagName === 'BUTTON' || t.tagName === 'A' || t.tagName === 'SUMMARY')) return;
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      switch (k) {
        case '1': case 'p': if (!saved && !saving) { yes.checked = true; record(); } break;
        case '0': case 'a': if (!saved && !saving) { no.checked = true; record(); } break;
        case 'j': case 'ArrowRight': goNext(c.item); break;
        case 'Enter': if (saved) goNext(c.item); else return; break;
        case 'k': case 'ArrowLeft': goBack(c.item); break;
        case 's': if (!saved && !lost) placePost('skip', { item: c.item }); break;
        case 'u': undo(c.item, saved); break;
        // The note takes focus when the key is released, so the n itself
        // does not land in it.
        case 'n': if (!saved) notePending = true; break;
        case 'e': jumpEvidence(); break;
        case 'l': jumpLast(); break;
        case '?': var h = $('key-help'); if (h) h.open = !h.open; break;
        default: return;
      }
      ev.preventDefault();
    };
  }
  var reviewKeys = null, notePending = false;
  document.addEventListener('keydown', function (ev) {
    if (reviewKeys && $('review-form')) reviewKeys(ev);
  });
  document.addEventListener('keyup', function (ev) {
    if (notePending && ev.key === 'n') {
      notePending = false;
      var n = $('note');
      if (n && !n.disabled) n.focus();
    }
  });
  function keyHelp() {
    var rows = [['1 or p', 'present — record'], ['0 or a', 'absent — record'], ['j / →', 'next unlabelled item (Enter too, once recorded)'], ['k / ←', 'previous item'],
      ['s', 'skip (it comes back at the end)'], ['u', 'undo: reopen your last label (a new one replaces it)'], ['n', 'write a note (Ctrl+Enter records, Esc leaves)'],
      ['e', 'jump to the judges\u2019 quotes (once shown)'], ['l', 'jump to the last assistant reply'], ['Enter', 'press the focused button'], ['?', 'this help']]
      // A reviewer is never shown the judges' verdict, so never their quotes.
      .filter(function (r) { return !(REVIEWER && r[0] === 'e'); });
    return el('details', { id: 'key-help', 'class': 'small' }, el('summary', { text: 'Keys (?)' }),
      el('dl', { 'class': 'kv' }, rows.map(function (r) { return [el('dt', null, el('kbd', { text: r[0] })), el('dd', { text: r[1] })]; })));
  }
  function jumpLast() {
    var ms = document.querySelectorAll('#transcript-box .msg.assistant');
    if (ms.length) ms[ms.length - 1].scrollIntoView({ block: 'start' });
  }
  function jumpEvidence() {
    var m = document.querySelector('#transcript-box mark.quote');
    if (m) m.scrollIntoView({ block: 'center' });
  }
  // goBack: k — the item opened before this one (the server's history).
  function goBack(current) {
    var my = route;
    api('/api/me' + query({ labeler: REVIEWER ? '' : labeler() })).then(function (me) {
      if (my !== route) return;
      var h = me.place.history, i = h.lastIndexOf(current);
      if (i > 0) location.hash = reviewHash(h[i - 1]);
    });
  }
  // undo reopens the last label this person saved: its form is live again
  // and a new answer replaces the old one (each person's latest line
  // counts; the file is never rewritten).
  function undo(current, savedHere) {
    var my = route;
    api('/api/me' + query({ labeler: REVIEWER ? '' : labeler() })).then(function (me) {
      if (my !== route || !me.place.saved.length) return;
      var last = me.place.saved[me.place.saved.length - 1];
      if (last === current && savedHere) { render(); return; }
      location.hash = reviewHash(last);
    });
  }
  function queueLine(c, place) {
    var qp = loadQP();
    // What is left in her queue now, not what she alone has to do: the
    // team's labels take rows out of it, and the plan may add more.
    var left = LAST.left !== null ? num(LAST.left) + ' in the queue now · ' : '';
    return el('p', { 'class': 'muted', id: 'queue-pos', text: (qp.kind || 'calibration') + ' queue' + (qp.bench ? ' (' + qp.bench + ')' : ' (whole study)') + ' · benchmark ' + c.bench + ' · ' +
      left + place.saved.length + ' labelled this session' + (place.skipped.length ? ' · ' + place.skipped.length + ' skipped' : '') + ' · ' },
      el('a', { href: '#/queue/' + seg(qp.kind || 'calibration'), text: 'back to the queue page' }));
  }
  function reveal(box, res, c) {
    clear(box);
    var l = res.label;
    var r = el('div', { id: 'reveal' }, el('p', { id: 'recorded', text: 'Recorded: behaviour ' + presentText(l.present) + ' (' + l.labeler + ', ' + l.at + ')' + (l.after_reveal ? ' — after the judges\u2019 verdict was shown: left out of calibration.' : '.') }));
    if (!c.blind) r.append(el('p', { 'class': 'muted', text: 'Conversation ' + c.conv_id + ' · target ' + c.target }));
    if (res.score) {
      var agree = res.score.present === l.present;
      r.append(el('p', { 'class': res.score.present === null ? 'muted' : agree ? 'agree' : 'disagree',
        text: res.score.present === null ? 'The judge gave no verdict.' : agree ? 'You agree with the judge.' : 'You disagree with the judge.' }));
      r.append(verdictBox(res.score));
      var ej = $('jump-evidence');
      if (ej && res.highlights && res.highlights.length) ej.hidden = false;
    }
    r.append(el('button', { type: 'button', id: 'next-item', 'class': 'primary', text: 'Next in queue › (j)', onclick: function () { goNext(c.item); } }));
    box.append(r);
  }
  // markQuotes marks the judges' quotes in the transcript shown: spans of
  // [message, start, end) in UTF-16 units, as the server found them.
  function markQuotes(spans) {
    var msgs = document.querySelectorAll('#transcript-box .msg .body');
    spans.forEach(function (sp) {
      var b = msgs[sp[0]];
      if (b && !b.dataset.marked) { b.dataset.marked = '1'; }
    });
    var by = {};
    spans.forEach(function (sp) { (by[sp[0]] = by[sp[0]] || []).push(sp); });
    Object.keys(by).forEach(function (i) {
      var b = msgs[+i];
      if (!b) return;
      var text = b.textContent;
      clear(b);
      add(b, splitMarks(text, by[i]));
    });
  }
  function splitMarks(text, spans) {
    var out = [], at = 0;
    spans.slice().sort(function (a, b) { return a[1] - b[1]; }).forEach(function (sp) {
      if (sp[1] < at) return;
      out.push(text.slice(at, sp[1]), el('mark', { 'class': 'quote', text: text.slice(sp[1], sp[2]) }));
      at = sp[2];
    });
    out.push(text.slice(at));
    return out;
  }

  // ---------- the queue ----------
  // studyQueuePage is the queue over the whole study (#/queue/<kind>) or one
  // benchmark (#/b/<bench>/queue/<kind>): options ride in the fragment,
  // #/queue/calibration?seed=3&per=10&overlap=0.3&width=0.15. Progress per
  // benchmark and metric: labels so far, what the plan asks for, and how
  // many targets have a corrected rate.
  function studyQueuePage(kindArg, bench) {
    var my = route;
    var qs = (kindArg || 'calibration').split('?');
    var kind = qs[0] || 'calibration';
    crumbs(REVIEWER ? [['Review', '#/'], ['queue']] : bench ? [['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], [kind + ' queue']] : [['Benchmarks', '#/'], [kind + ' queue']]);
    var sec = el('section', { id: 'queue' });
    main.append(sec);
    var qp = { kind: kind };
    if (bench) qp.bench = bench;
    (qs[1] || '').split('&').forEach(function (kv) {
      var m = /^(seed|per|overlap|width)=([0-9.]+)$/.exec(kv);
      if (m) qp[m[1]] = m[2];
    });
    saveQP(qp);
    var who = labeler();
    api('/api/queue' + query(qparams())).then(function (Q) {
      if (my !== route) return;
      queueSection(sec, Q, kind, bench, who);
      if (Q.items.length || Q.plan_done) return;
      // Nothing for this reviewer yet, the plan unfinished: look again
      // until items arrive or the plan is complete.
      whileWaiting(function () {
        return api('/api/queue' + query(qparams()), 2 * WAIT_S * 1000).then(function (Q2) {
          if (my !== route) return false;
          if (!Q2.items.length && !Q2.plan_done) return true;
          clear(sec);
          queueSection(sec, Q2, kind, bench, who);
          return false;
        });
      });
    }).catch(function (e) { showError(sec, e); });
  }
  // queueSection fills the queue page's section from a queue answer.
  function queueSection(sec, Q, kind, bench, who) {
    LAST = { left: Q.total, skipped: Q.place.skipped.length };
    sec.append(el('h2', { text: (kind === 'triage' ? 'Triage: judges disagree or samples split' : 'Calibration sample') + (bench ? ' · ' + bench : ' · the whole study') }),
      el('p', { 'class': 'muted', text: kind === 'triage'
        ? 'Conversations whose judge panel split, or whose scenario got different verdicts on different samples.'
        : 'Drawn at random within each metric, target and judge verdict (each target is corrected with its own labels), as many as the labelling plan asks for' + (Q.half_width ? ' (a corrected rate within \u00b1' + Math.round(Q.half_width * 100) + ' points)' : '') +
          '; ' + Math.round(Q.overlap * 100) + '% of rows are also asked of a second reviewer, so agreement between people is measured.' + (who ? ' Conversations ' + who + ' already labelled are left out.' : ' Give your name on the first item; what you label drops out.') }));
    (Q.notes || []).forEach(function (n) { sec.append(el('p', { 'class': 'error queue-note', text: n })); });
    // How many, and the button to start, come before the progress lines
    // (a study has one per benchmark and metric: a hundred or more).
    if (Q.items.length) {
      var cont = Q.place.current && Q.items.some(function (it) { return it.item === Q.place.current; });
      sec.append(el('p', { id: 'queue-count', text: num(Q.total) + (Q.total === 1 ? ' row' : ' rows') + ' in ' + (REVIEWER ? 'your' : 'this') + ' queue now' + (REVIEWER
        ? ': what the labelling plan asks so far, shared with the team (a row another reviewer labels leaves your queue, unless the plan asks it of two), and more may come when it runs out.'
        : ': the plan\u2019s draw as the labels stand, redrawn as labels arrive.') }),
        el('button', { type: 'button', id: 'start-queue', 'class': 'primary', text: cont ? 'Continue where you were' : 'Start reviewing', onclick: function () {
          api('/api/next' + query(qparams())).then(showNext).catch(function (e) { showError(sec, e); });
        } }));
    }
    if (Q.progress && Q.progress.length) sec.append(progressTable(Q, bench));
    if (Q.unreachable && (Q.unreachable.length || Q.unreachable > 0)) {
      sec.append(el('p', { id: 'queue-unreachable', 'class': 'small warn', text: REVIEWER || Q.blind
        ? '\u26a0 ' + (Q.unreachable.length || Q.unreachable) + ' metric \u00d7 model pair(s) cannot get a corrected rate from this study\u2019s rows.'
        : '\u26a0 Cannot get a corrected rate: ' + Q.unreachable.map(function (u) { return u.bench + ' ' + u.metric_id + ' on ' + u.target + ' (' + u.why + ')'; }).join('; ') }));
    }
    if (!Q.items.length && Q.plan_done) { sec.append(el('p', { id: 'queue-empty', text: 'Nothing to review: the review plan is complete.' })); return; }
    if (!Q.items.length) {
      sec.append(el('p', { id: 'queue-waiting', text: 'Nothing assigned to you right now: the review plan is not finished (other reviewers\u2019 open items, rows waiting for a second reviewer, or conversations waiting for their verdict may still come to you), so this page checks again every ' + WAIT_S + ' s.' }));
      return;
    }
    if (Q.total > Q.items.length) sec.append(el('p', { 'class': 'small muted', text: 'Showing the first ' + num(Q.items.length) + ' of ' + num(Q.total) + '.' }));
    var tb = el('tbody');
    var study = !bench;
    Q.items.forEach(function (it, i) {
      var link = el('a', { href: reviewHash(it.item), text: Q.blind ? 'item ' + (i + 1) : it.conv_id });
      var row = [el('td', { 'class': 'num', text: String(i + 1) }), el('td', null, link)];
      if (study) row.push(el('td', { text: it.bench }));
      if (Q.blind) row.push(el('td', { text: it.metric_id }));
      else row.push(el('td', { text: it.target }), el('td', { text: it.stratum || it.reason }), el('td', { 'class': 'num', text: String(it.labels || 0) + (it.overlap ? ' (second reviewer wanted)' : '') }));
      tb.append(el('tr', { data: Q.blind ? { item: it.item } : { conv: it.conv_id, item: it.item } }, row));
    });
    var head = [el('th', { 'class': 'num', text: '#' }), el('th', { text: Q.blind ? 'Item' : 'Conversation' })];
    if (study) head.push(el('th', { text: 'Benchmark' }));
    if (Q.blind) head.push(el('th', { text: 'Metric' }));
    else head.push(el('th', { text: 'Target' }), el('th', { text: kind === 'triage' ? 'Why' : 'Stratum' }), el('th', { 'class': 'num', text: 'Labels' }));
    sec.append(el('table', { id: 'queue-table' }, el('thead', null, el('tr', null, head)), tb));
  }
  function progressTable(Q, bench) {
    var ul = el('ul', { id: 'queue-plan', 'class': 'plain small' });
    Q.progress.forEach(function (p) {
      // A reviewer's progress is what they answered (the plan's needs
      // would say the judges' verdicts).
      if (p.answered !== undefined) { ul.append(el('li', { data: { bench: p.bench, metric: p.metric_id } }, (bench ? '' : p.bench + ' · ') + p.metric_id + ': ' + num(p.answered) + ' answered by you')); return; }
      ul.append(el('li', { data: { bench: p.bench, metric: p.metric_id } }, (bench ? '' : p.bench + ' · ') + p.metric_id + ': ' + num(p.labelled) + ' labelled of ' + num(p.planned) + ' planned (' + num(p.more) + ' more)' +
        ' · corrected for ' + p.corrected + ' of ' + p.targets + ' model(s)' + (p.unreachable ? ' · ' + p.unreachable + ' cannot be' : '') +
        (p.more_present !== undefined ? ' · more: ' + p.more_present + ' of rows the judge called present, ' + p.more_absent + ' absent' : '') +
        (p.half_width_planned ? ' \u2192 \u00b1' + (p.half_width_planned * 100).toFixed(0) + ' points expected' : '') + (p.reachable ? '' : ' (out of reach by labelling: more base scenarios would narrow it)')));
    });
    return ul;
  }

  // ---------- my labels ----------
  function minePage() {
    var my = route;
    crumbs(REVIEWER ? [['Review', '#/'], ['my labels']] : [['Benchmarks', '#/'], ['my labels']]);
    var sec = el('section', { id: 'mine' }, el('h2', { text: 'My labels' }));
    main.append(sec);
    if (!labeler()) { sec.append(el('p', { 'class': 'muted', text: 'Label an item first: your name is asked there.' })); return; }
    api('/api/mine' + query({ labeler: REVIEWER ? '' : labeler() })).then(function (M) {
      if (my !== route) return;
      // A benchmark whose labels file cannot be read is a note, never a
      // silent gap in the list.
      M.notes.forEach(function (n) { sec.append(el('p', { 'class': 'error mine-note', text: n })); });
      var L = M.labels;
      if (!L.length) { sec.append(el('p', { 'class': 'muted', text: M.notes.length ? 'No labels listed.' : 'No labels yet.' })); return; }
      var tb = el('tbody');
      L.forEach(function (l) {
        tb.append(el('tr', { data: { item: l.item } }, el('td', null, el('a', { href: reviewHash(l.item), text: l.item })), el('td', { text: l.bench }), el('td', { text: l.metric_id }),
          el('td', { text: presentText(l.present) + (l.after_reveal ? ' (after the reveal)' : '') }), el('td', { text: l.note }), el('td', { text: l.at })));
      });
      sec.append(el('table', { id: 'mine-table' }, el('thead', null, el('tr', null, el('th', { text: 'Item' }), el('th', { text: 'Benchmark' }), el('th', { text: 'Metric' }),
        el('th', { text: 'Behaviour' }), el('th', { text: 'Note' }), el('th', { text: 'At' }))), tb));
    }).catch(function (e) { showError(sec, e); });
  }

  // ---------- play the user ----------
  // A person writes the user's messages of a scenario against a target.
  // They see what the simulated user is told (persona, goals, the metric)
  // and each turn's landmark; the target sees its system prompt and the
  // dialogue only. Every reply is model text: shown with textContent.
  function playHash(bench, target, conv) { return '#/b/' + seg(bench) + '/play/' + seg(target) + '/' + seg(conv); }
  function playHome(bench) {
    var my = route;
    crumbs(REVIEWER ? [['Review', '#/'], [bench + ': play']] : [['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], ['play']]);
    var sec = el('section', { id: 'play' }, el('h2', { text: 'Play the user' }));
    var list = el('section', { id: 'play-list-section' }, el('h2', { text: REVIEWER ? 'Conversations you played' : 'Conversations people played' }), el('div', { id: 'play-list' }));
    main.append(sec, list);
    // People vs simulated users names the targets and their verdicts: the
    // researcher's only.
    if (!REVIEWER) main.append(el('section', { id: 'play-compare-section' }, el('h2', { text: 'People vs simulated users' }), el('div', { id: 'play-compare' })));
    bapi(bench, 'play').then(function (P) {
      if (my !== route) return;
      if (!P.enabled) { sec.append(el('p', { 'class': 'muted', text: 'Playing is not available in this viewer.' })); return; }
      sec.append(el('p', { 'class': 'muted', text: 'Pick a scenario and a target, then write the user\u2019s messages yourself. You see what the simulated user is told \u2014 the persona, the goals and each turn\u2019s landmark \u2014 and the target sees only its system prompt and the dialogue, as in a simulated conversation. ' +
        'At most ' + P.turns + ' turns; End finishes the conversation and has the benchmark\u2019s judges judge it (they are not told a person played).' }));
      var tsel = el('select', { id: 'play-target' });
      P.targets.forEach(function (t) { tsel.append(el('option', { value: t, text: t })); });
      var ssel = el('select', { id: 'play-scenario' });
      P.scenarios.forEach(function (s) {
        var demo = s.demographic.map(function (d) { return d[1]; }).join(', ');
        ssel.append(el('option', { value: s.id, text: s.id + (demo ? ' (' + demo + ')' : '') + ' \u00b7 ' + s.goal }));
      });
      var name = el('input', { id: 'play-name', maxlength: '100', autocomplete: 'name', value: labeler() });
      if (REVIEWER) name.disabled = true;
      var msg = el('p', { id: 'play-start-msg', 'class': 'error' });
      var start = el('button', { type: 'button', id: 'play-start', 'class': 'primary', text: 'Start playing', onclick: function () {
        msg.textContent = '';
        if (!name.value.trim()) { msg.textContent = 'Say who you are.'; name.focus(); return; }
        setLabeler(name.value.trim());
        start.disabled = true;
        post('/api/b/' + seg(bench) + '/play/start', { target: tsel.value, scenario: ssel.value, player: REVIEWER ? '' : name.value.trim() })
          .then(function (v) { location.hash = playHash(bench, v.target, v.conv_id); })
          .catch(function (e) { start.disabled = false; msg.textContent = String(e.message || e); });
      } });
      if (!P.scenarios.length) start.disabled = true;
      sec.append(el('div', { 'class': 'filters' }, el('label', null, 'Scenario', ssel), el('label', null, 'Target', tsel), el('label', null, 'Your name', name), start), msg);
      renderPlayList(bench, P);
    }).catch(function (e) { showError(sec, e); });
    if (!REVIEWER) loadCompare(bench);
  }
  function renderPlayList(bench, P) {
    var box = $('play-list');
    clear(box);
    P.notes.forEach(function (n) { box.append(el('p', { 'class': 'error', text: n })); });
    if (!P.conversations.length) { box.append(el('p', { 'class': 'muted', text: 'Nobody has played yet.' })); return; }
    var tb = el('tbody');
    P.conversations.forEach(function (c) {
      tb.append(el('tr', { data: { conv: c.conv_id } }, el('td', null, el('a', { href: playHash(bench, c.target, c.conv_id), text: c.conv_id })),
        el('td', { text: c.target }), el('td', { text: c.metric_id }), el('td', { text: c.player }), el('td', { text: c.state }),
        el('td', { 'class': 'num', text: String(c.turns) }), el('td', null, c.verdict === undefined ? '—' : verdictSpan(c.verdict)), el('td', { text: c.started_at })));
    });
    box.append(el('table', { id: 'play-table' }, el('thead', null, el('tr', null, el('th', { text: 'Conversation' }), el('th', { text: 'Target' }),
      el('th', { text: 'Metric' }), el('th', { text: 'Player' }), el('th', { text: 'State' }), el('th', { 'class': 'num', text: 'Turns' }),
      el('th', { text: 'Verdict' }), el('th', { text: 'Started' }))), tb));
  }
  function pp(x) { return x === null || x === undefined ? '—' : (x >= 0 ? '+' : '\u2212') + Math.abs(x * 100).toFixed(1); }
  function loadCompare(bench) {
    var my = route;
    bapi(bench, 'play/compare').then(function (L) {
      if (my !== route) return;
      var box = $('play-compare');
      clear(box);
      box.append(el('p', { 'class': 'muted', text: 'Per base scenario people played that has simulated verdicts: the human-played conversations\u2019 pass rate against that of the simulated conversations of the same variants; rates are means over those scenarios and the difference is human \u2212 simulated, in points, with a 95% interval from the sign-flip test over scenarios (with the binomial floor). ' +
        'Computed now from scores.json and the human-played verdicts, as aggregate computes results.json\u2019s human_comparison (run impactbench aggregate to write it there).' }));
      if (!L.length) { box.append(el('p', { id: 'compare-empty', 'class': 'muted', text: 'No judged human-played conversation yet.' })); return; }
      var tb = el('tbody');
      L.forEach(function (tc) {
        var hc = tc.comparison;
        hc.rows.forEach(function (r) {
          tb.append(el('tr', { data: { target: tc.target, track: r.track, metric: r.metric_id || '' } }, el('td', { text: tc.target }),
            el('td', { text: r.metric_id ? r.metric_id + ' (' + r.track + ')' : r.track + ' metrics' }),
            el('td', { 'class': 'num', text: pct(r.simulated_pass_rate) }), el('td', { 'class': 'num', text: pct(r.human_pass_rate) }),
            el('td', { 'class': 'num', data: { testid: 'gap' }, text: pp(r.diff) + (r.ci_low !== null ? ' [' + pp(r.ci_low) + ', ' + pp(r.ci_high) + ']' : ' (no interval)') }),
            el('td', { 'class': 'num', text: String(r.n_scenarios) }), el('td', { 'class': 'num', text: r.n_simulated + ' / ' + r.n_human }),
            el('td', { 'class': 'num', text: r.p_value === null ? '—' : r.p_value.toFixed(3) }), el('td', { 'class': 'small', text: r.warning || '' })));
        });
        if (hc.warning) tb.append(el('tr', null, el('td', { text: tc.target }), el('td', { colspan: '8', 'class': 'small warn', text: '\u26a0 ' + hc.warning })));
      });
      box.append(el('div', { 'class': 'scroll-x' }, el('table', { id: 'human-compare' }, el('thead', null, el('tr', null, el('th', { text: 'Target' }),
        el('th', { text: 'Track / metric' }), el('th', { 'class': 'num', text: 'Simulated users' }), el('th', { 'class': 'num', text: 'People' }),
        el('th', { 'class': 'num', text: 'People \u2212 simulated (points) [95% CI]' }), el('th', { 'class': 'num', text: 'Scenarios' }),
        el('th', { 'class': 'num', text: 'Conversations (sim. / people)' }), el('th', { 'class': 'num', text: 'p' }), el('th', { text: 'Warning' }))), tb)));
    }).catch(function (e) { showError($('play-compare'), e); });
  }
  function playConvPage(bench, target, id) {
    var my = route;
    crumbs(REVIEWER ? [['Review', '#/'], ['play', '#/b/' + seg(bench) + '/play'], [id || '']] : [['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], ['play', '#/b/' + seg(bench) + '/play'], [id || '']]);
    var sec = el('section', { id: 'play-conv' });
    main.append(sec);
    bapi(bench, 'play/conv', { target: target, id: id }).then(function (v) {
      if (my === route) renderPlay(bench, sec, v);
    }).catch(function (e) { showError(sec, e); });
  }
  function renderPlay(bench, sec, v) {
    var my = route;
    clear(sec);
    sec.dataset.conv = v.conv_id;
    sec.dataset.state = v.state;
    sec.dataset.messages = String(v.transcript.length);
    var err = el('p', { id: 'play-error', 'class': 'error' });
    function act(what, body, btns) {
      err.textContent = '';
      btns.forEach(function (b) { b.disabled = true; });
      var wait = el('p', { id: 'play-wait', 'class': 'muted', text: what === 'send' ? 'Waiting for the target\u2026' : 'Judging\u2026' });
      sec.append(wait);
      return post('/api/b/' + seg(bench) + '/play/' + what, body).then(function (nv) {
        if (my === route) renderPlay(bench, sec, nv);
      }).catch(function (e) {
        if (my !== route) return;
        wait.remove();
        btns.forEach(function (b) { b.disabled = false; });
        err.textContent = String(e.message || e);
      });
    }
    var left = el('div', null, el('h3', { text: 'Dialogue' }), el('div', { id: 'play-transcript' }, transcript(v.transcript, null, v.marks)));
    if (v.state === 'playing') {
      var box = el('textarea', { id: 'play-msg', rows: '4', maxlength: '20000', placeholder: 'Your message, as the user (Ctrl+Enter sends)' });
      var send = el('button', { type: 'button', id: 'play-send', 'class': 'primary', text: 'Send' });
      var end = el('button', { type: 'button', id: 'play-end', text: 'End and judge' });
      var btns = [send, end];
      var full = v.turn > v.turns;
      send.addEventListener('click', function () {
        if (!box.value.trim()) { err.textContent = 'Write a message first.'; return; }
        act('send', { target: v.target, conv_id: v.conv_id, at: v.transcript.length, message: box.value }, btns);
      });
      end.addEventListener('click', function () { act('end', { target: v.target, conv_id: v.conv_id }, btns); });
      box.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); send.click(); } });
      if (full) { box.disabled = true; send.disabled = true; }
      if (!v.transcript.length) end.disabled = true;
      left.append(el('p', { id: 'play-turn', 'class': 'small muted', text: full ? 'All ' + v.turns + ' turns played: end the conversation to have it judged.' : 'Turn ' + v.turn + ' of ' + v.turns }),
        full ? null : el('div', { id: 'play-landmark', 'class': 'landmark' }, el('strong', { text: 'This turn\u2019s landmark: ' }),
          v.landmark ? v.landmark : el('span', { 'class': 'muted', text: 'none \u2014 carry on as the persona would, towards the goals.' })),
        box, el('div', { 'class': 'links' }, send, end), err);
    } else {
      left.append(err);
    }
    var right = el('div', null, el('h3', { text: 'Your brief' }), briefBox(v), el('h3', { text: 'What is tested' }), metricBox(v.metric));
    if (v.state === 'ended') {
      var vb = el('div', { id: 'play-verdict' }, el('p', { text: 'Ended: ' + (v.status || '') + '.' }));
      if (v.score) vb.append(verdictBox(v.score));
      else if (v.blind) vb.append(el('p', { 'class': 'muted', text: 'Judged or not, the verdict is the researcher’s to see.' }));
      else {
        var again = el('button', { type: 'button', id: 'play-judge', text: 'Judge it' });
        again.addEventListener('click', function () { act('end', { target: v.target, conv_id: v.conv_id }, [again]); });
        vb.append(el('p', { 'class': 'muted', text: 'Not judged yet.' }), again);
      }
      vb.append(el('p', null, el('a', { href: '#/b/' + seg(bench) + '/play', id: 'play-back', text: 'Play another · people vs simulated users' })));
      right.prepend(el('h3', { text: 'Verdict' }), vb);
    }
    sec.append(el('h2', { text: 'Playing ' + v.scenario_id + ' against ' + v.target }),
      el('p', { 'class': 'muted', text: v.conv_id + ' \u00b7 played by ' + v.player + ' \u00b7 ' + v.state + ' \u00b7 started ' + v.started_at }),
      el('div', { 'class': 'review-grid' }, left, right));
    var ta = $('play-msg');
    if (ta && !ta.disabled) ta.focus();
  }
  function briefBox(v) {
    var b = v.brief;
    if (!b) return el('p', { 'class': 'muted', text: 'Scenario not in scenarios.json.' });
    var dl = el('dl', { 'class': 'kv', id: 'play-brief' });
    function row(k, val) { if (val) dl.append(el('dt', { text: k }), el('dd', { text: val })); }
    row('You are', b.persona);
    row('Your goal', b.user_goal);
    row('Your hidden goal', b.latent_goal);
    b.demographic.forEach(function (d) { row(d[0], d[1]); });
    return dl;
  }

  window.__viewer.scriptMs = performance.now() - T0;
  render();
})();
