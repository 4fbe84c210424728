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
          // Only the viewer's own routes: hash links and /report/.
          if (typeof v !== 'string' || !(v.charAt(0) === '#' || v.indexOf('/report/') === 0)) throw new Error('href not allowed');
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

  function api(path) {
    return fetch(path, { credentials: 'same-origin' }).then(function (r) {
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
        if (!r.ok) throw new Error((j && j.error) || r.statusText);
        return j;
      });
    });
  }
  function bapi(bench, what, params) {
    var q = [];
    for (var k in (params || {})) if (params[k] !== '' && params[k] !== undefined && params[k] !== null) q.push(k + '=' + encodeURIComponent(params[k]));
    return api('/api/b/' + seg(bench) + '/' + what + (q.length ? '?' + q.join('&') : ''));
  }
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
    clear(main);
    var p = parseHash();
    if (p.length === 0) return home();
    if (p[0] !== 'b' || !p[1]) return notFound();
    var bench = p[1];
    switch (p[2]) {
      case undefined: return runPage(bench);
      case 'c': return convPage(bench, p[3]);
      case 'live': return livePage(bench, p[3], p[4]);
      case 's': return scenarioPage(bench, p[3]);
      case 'review': return reviewPage(bench, p[3]);
      case 'queue': return queuePage(bench, p[3]);
    }
    notFound();
  }
  function notFound() { crumbs([['Benchmarks', '#/']]); main.append(el('p', { text: 'No such page.' })); }
  window.addEventListener('hashchange', render);

  // ---------- home ----------
  function home() {
    crumbs([['Benchmarks']]);
    var sec = el('section', null, el('h2', { text: 'Benchmarks' }));
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
      el('a', { href: '/report/' + seg(bench), text: 'Full static report' }));
    var prog = el('section', { id: 'progress-section' }, el('h2', { text: 'Progress' }), el('div', { id: 'progress', 'class': 'scroll-x' }));
    var recent = el('section', { id: 'recent-section' }, el('h2', { text: 'Recently finished conversations' }), el('div', { id: 'recent' }));
    var lb = el('section', { id: 'leaderboard-section' }, el('h2', { text: 'Leaderboard' }), el('div', { id: 'leaderboard', 'class': 'scroll-x' }),
      el('h3', { text: 'Model × metric' }), el('div', { id: 'heatmap', 'class': 'scroll-x' }));
    var list = el('section', { id: 'list-section' }, el('h2', { text: 'Conversations' }), el('div', { id: 'convs' }));
    var notes = el('section', { id: 'notes-section', hidden: 'hidden' }, el('h2', { text: 'Notes' }), el('ul', { id: 'notes' }));
    main.append(head, status, links, prog, recent, lb, list, notes);
    var state = { stamp: null, filters: { target: '', metric: '', verdict: '', q: '' }, offset: 0 };
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
    bapi(bench, 'convs', { target: f.target, metric: f.metric, verdict: f.verdict, q: f.q, offset: state.offset, limit: 50 }).then(function (L) {
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
    box.append(el('div', { 'class': 'filters' },
      sel('f-target', 'Target', [['', 'all']].concat(L.targets.map(function (t) { return [t, t]; })), 'target'),
      sel('f-metric', 'Metric', [['', 'all']].concat(L.metrics.map(function (m) { return [m, m]; })), 'metric'),
      sel('f-verdict', 'Verdict', [['', 'all'], ['1', 'PASS'], ['0', 'FAIL'], ['2', 'NULL'], ['3', 'not judged']], 'verdict'),
      el('label', null, 'Search', q)));
    box.append(el('p', { id: 'list-count', 'class': 'small muted', text: num(L.matched) + ' of ' + num(L.total) + ' conversations' + (L.matched ? ' · showing ' + num(L.offset + 1) + '–' + num(L.offset + L.rows.length) : '') }));
    var tb = el('tbody');
    L.rows.forEach(function (r) {
      tb.append(el('tr', { data: { conv: r.conv_id } },
        el('td', null, el('a', { href: '#/b/' + seg(bench) + '/c/' + seg(r.conv_id), text: r.conv_id })),
        el('td', { text: r.goal }), el('td', { text: r.target }), el('td', { text: r.metric_id }),
        el('td', { 'class': 'num', text: String(r.sample) }), el('td', null, verdictSpan(r.verdict), r.judges_split ? el('span', { 'class': 'badge', text: 'judges split' }) : null),
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
  function transcript(turns) {
    var box = el('div', { 'class': 'transcript' });
    turns.forEach(function (t) {
      box.append(el('div', { 'class': 'msg ' + (t.role === 'user' ? 'user' : 'assistant') },
        el('div', { 'class': 'role', text: t.role }), el('div', { 'class': 'body', text: t.content })));
    });
    if (!turns.length) box.append(el('p', { 'class': 'muted', text: 'No messages.' }));
    return box;
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
          el('div', null, el('h3', { text: 'Transcript' }), transcript(c.transcript)),
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
        el('div', { 'class': 'review-grid' }, el('div', null, el('h3', { text: 'Transcript' }), transcript(c.transcript)),
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
          verdictBox(c.score), transcript(c.transcript)));
      });
      if (!S.conversations.length) side.append(el('p', { 'class': 'muted', text: 'No conversations for this scenario yet.' }));
      main.append(side);
    }).catch(function (e) { showError(sec, e); });
  }

  // ---------- review ----------
  var queue = null; // {bench, kind, items, pos}: the queue being worked through
  function labeler() { try { return localStorage.getItem('ib-labeler') || ''; } catch (e) { return ''; } }
  function setLabeler(v) { try { localStorage.setItem('ib-labeler', v); } catch (e) { /* private mode */ } }

  function reviewPage(bench, id) {
    var my = route;
    crumbs([['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], ['review']]);
    var sec = el('section', { id: 'review' });
    main.append(sec);
    bapi(bench, 'conv', { id: id, review: '1' }).then(function (c) {
      if (my !== route) return;
      sec.dataset.conv = c.conv_id;
      var name = el('input', { id: 'labeler', name: 'labeler', required: 'required', maxlength: '100', autocomplete: 'name', value: labeler() });
      var yes = el('input', { type: 'radio', name: 'present', value: 'yes', id: 'present-yes' });
      var no = el('input', { type: 'radio', name: 'present', value: 'no', id: 'present-no' });
      var note = el('textarea', { id: 'note', rows: '3', maxlength: '4000' });
      var submit = el('button', { type: 'submit', id: 'submit-label', 'class': 'primary', text: 'Record my verdict' });
      var msg = el('p', { id: 'review-msg', 'class': 'error' });
      var after = el('div', { id: 'after' });
      var form = el('form', { 'class': 'review', id: 'review-form' },
        el('label', null, 'Your name ', name),
        el('fieldset', null, el('legend', { text: 'Is the behaviour described by the metric present in the assistant\u2019s replies?' }),
          el('label', null, yes, ' Yes, present'), ' ', el('label', null, no, ' No, absent')),
        el('label', null, 'Note (optional)', el('br'), note), submit, msg);
      form.addEventListener('submit', function (ev) {
        ev.preventDefault();
        msg.textContent = '';
        if (!name.value.trim()) { msg.textContent = 'Say who you are.'; return; }
        if (!yes.checked && !no.checked) { msg.textContent = 'Choose present or absent.'; return; }
        setLabeler(name.value.trim());
        submit.disabled = true;
        post('/api/b/' + seg(bench) + '/labels', { conv_id: c.conv_id, metric_id: c.metric.id, present: yes.checked, labeler: name.value.trim(), note: note.value })
          .then(function (res) {
            if (my !== route) return;
            [name, yes, no, note].forEach(function (x) { x.disabled = true; });
            var bn = $('blind-note');
            if (bn) bn.hidden = true;
            reveal(after, res, bench, c);
          })
          .catch(function (e) { submit.disabled = false; msg.textContent = String(e.message || e); });
      });
      var side = el('div', null, el('h3', { text: 'What to judge' }), metricBox(c.metric), form, after);
      if (!c.verdicts_hidden) side.append(el('h3', { text: 'Judges (shown before deciding: blind review is off)' }), verdictBox(c.score));
      else side.append(el('p', { 'class': 'small muted', id: 'blind-note', text: 'Blind review: the judges\u2019 verdicts appear once you have recorded yours.' }));
      // Blind review hides who answered too: knowing the target can anchor
      // a reviewer as much as the judge's verdict.
      sec.append(el('h2', { text: c.verdicts_hidden ? 'Review' : 'Review ' + c.conv_id }), queueLine(bench),
        el('div', { 'class': 'review-grid' }, el('div', null, el('h3', { text: 'Transcript' }), transcript(c.transcript),
          el('h3', { text: 'Scenario' }), scenarioBox(c.scenario)), side));
    }).catch(function (e) { showError(sec, e); });
  }
  function queueLine(bench) {
    if (!queue || queue.bench !== bench) return null;
    return el('p', { 'class': 'muted', id: 'queue-pos', text: queue.kind + ' queue: item ' + (queue.pos + 1) + ' of ' + queue.items.length });
  }
  function reveal(box, res, bench, c) {
    clear(box);
    var l = res.label;
    var r = el('div', { id: 'reveal' }, el('p', { id: 'recorded', text: 'Recorded: behaviour ' + presentText(l.present) + ' (' + l.labeler + ', ' + l.at + ').' }),
      el('p', { 'class': 'muted', text: 'Conversation ' + c.conv_id + ' · target ' + c.target }));
    if (res.score) {
      var agree = res.score.present === l.present;
      r.append(el('p', { 'class': res.score.present === null ? 'muted' : agree ? 'agree' : 'disagree',
        text: res.score.present === null ? 'The judge gave no verdict.' : agree ? 'You agree with the judge.' : 'You disagree with the judge.' }));
    }
    r.append(verdictBox(res.score));
    if (queue && queue.bench === bench && queue.pos + 1 < queue.items.length) {
      r.append(el('button', { type: 'button', id: 'next-item', 'class': 'primary', text: 'Next in queue ›', onclick: function () {
        queue.pos++;
        location.hash = '#/b/' + seg(bench) + '/review/' + seg(queue.items[queue.pos].conv_id);
      } }));
    } else if (queue && queue.bench === bench) {
      r.append(el('p', { id: 'queue-done', text: 'End of the queue.' }));
    }
    box.append(r);
  }

  function queuePage(bench, kind) {
    var my = route;
    // Options ride in the fragment: #/b/<bench>/queue/calibration?seed=3&per=10.
    var qs = (kind || '').split('?');
    kind = qs[0];
    crumbs([['Benchmarks', '#/'], [bench, '#/b/' + seg(bench)], [kind + ' queue']]);
    var sec = el('section', { id: 'queue' });
    main.append(sec);
    var who = labeler();
    var params = { kind: kind, labeler: who };
    (qs[1] || '').split('&').forEach(function (kv) {
      var m = /^(seed|per)=(\d+)$/.exec(kv);
      if (m) params[m[1]] = m[2];
    });
    bapi(bench, 'queue', params).then(function (Q) {
      if (my !== route) return;
      queue = { bench: bench, kind: kind, items: Q.items, pos: 0 };
      sec.append(el('h2', { text: kind === 'triage' ? 'Triage: judges disagree or samples split' : 'Calibration sample' }),
        el('p', { 'class': 'muted', text: kind === 'triage'
          ? 'Conversations whose judge panel split, or whose scenario got different verdicts on different samples.'
          : 'A seeded random sample, stratified by metric and judge verdict, for measuring how often the judge is right.' + (who ? ' Conversations ' + who + ' already labelled are left out.' : '') }));
      if (!Q.items.length) { sec.append(el('p', { id: 'queue-empty', text: 'Nothing to review.' })); return; }
      if (Q.total > Q.items.length) sec.append(el('p', { 'class': 'small muted', text: 'Showing the first ' + num(Q.items.length) + ' of ' + num(Q.total) + '.' }));
      sec.append(el('button', { type: 'button', id: 'start-queue', 'class': 'primary', text: 'Start reviewing (' + Q.items.length + ')', onclick: function () {
        location.hash = '#/b/' + seg(bench) + '/review/' + seg(Q.items[0].conv_id);
      } }));
      var tb = el('tbody');
      Q.items.forEach(function (it, i) {
        tb.append(el('tr', { data: { conv: it.conv_id } }, el('td', { 'class': 'num', text: String(i + 1) }),
          el('td', null, el('a', { href: '#/b/' + seg(bench) + '/review/' + seg(it.conv_id), text: it.conv_id, onclick: function () { queue.pos = i; } })),
          el('td', { text: it.target }), el('td', { text: it.stratum || it.reason }), el('td', { 'class': 'num', text: String(it.labels) })));
      });
      sec.append(el('table', { id: 'queue-table' }, el('thead', null, el('tr', null, el('th', { 'class': 'num', text: '#' }), el('th', { text: 'Conversation' }),
        el('th', { text: 'Target' }), el('th', { text: kind === 'triage' ? 'Why' : 'Stratum' }), el('th', { 'class': 'num', text: 'Labels' }))), tb));
    }).catch(function (e) { showError(sec, e); });
  }

  window.__viewer.scriptMs = performance.now() - T0;
  render();
})();
