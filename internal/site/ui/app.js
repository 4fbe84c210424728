// ImpactBench study site. Its data arrives as script files that store JSON
// values in window.IB_DATA (site/data/*.js); every string in them is
// untrusted (model names, metric texts, scenarios, transcripts, judges'
// words) and reaches the page only as text: Text nodes, textContent and
// element properties — never an HTML parser, never a URL, never code. The
// Content-Security-Policy (script-src 'self', no inline script) is the
// second line of defence. Keep it that way.
(function () {
  'use strict';
  var D = window.IB_DATA || {};
  var C = D.core;
  var has = function (o, k) { return o !== null && o !== undefined && Object.prototype.hasOwnProperty.call(o, k); };
  var $ = function (id) { return document.getElementById(id); };
  window.__siteTimings = [];

  // ---- DOM helpers --------------------------------------------------------
  // el builds an element; attribute values are set as properties or
  // attributes that cannot execute, handlers only as functions written here.
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!has(attrs, k)) continue;
        var v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k === 'title') e.title = v;
        else if (k === 'href') e.setAttribute('href', safeHref(v));
        else if (k.slice(0, 2) === 'on') {
          if (typeof v !== 'function') throw new Error('handler must be a function');
          e.addEventListener(k.slice(2), v);
        } else if (k === 'data') { for (var d in v) if (has(v, d)) e.dataset[d] = v[d]; }
        else if (/^(colspan|type|value|role|scope|aria-[a-z]+|tabindex|selected)$/.test(k)) e.setAttribute(k, v);
        else throw new Error('attribute not allowed: ' + k);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  // safeHref only allows the site's own routes.
  function safeHref(h) {
    if (typeof h !== 'string' || h.charAt(0) !== '#') throw new Error('links stay inside the site');
    return h;
  }
  // add appends children (nodes, text, arrays of them; null, undefined and
  // false are skipped) — use it, not append(), which writes null as "null".
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) { c.forEach(function (x) { add(parent, x); }); continue; }
      parent.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  // ---- numbers --------------------------------------------------------------
  function f3(x) { return x === null || x === undefined ? '—' : x.toFixed(3); }
  function ivText(c) { return '[' + f3(c.lo) + ', ' + f3(c.hi) + ']'; }
  function signed(x) { return (x > 0 ? '+' : x < 0 ? '−' : '±') + Math.abs(x).toFixed(3); }
  // lim is a difference's interval limit: one that is not 0 never prints
  // as 0, so an interval that excludes 0 visibly does (as Go's
  // artifacts.Limit: two significant digits).
  function lim(x) {
    var t = signed(x);
    if (x === 0 || Math.abs(x).toFixed(3).replace(/[0.]/g, '') !== '') return t;
    var d = 4;
    while (Math.abs(x).toFixed(d).replace(/[0.]/g, '') === '') d++;
    return (x > 0 ? '+' : '−') + Math.abs(x).toFixed(d + 1);
  }
  // pText never prints a p-value on the other side of 0.05 from its
  // value (0.049996 is "0.049996", not "0.050"), as artifacts.PValue.
  function pText(p) {
    if (p < 0.001) return '< 0.001';
    for (var d = 3; d <= 17; d++) { var t = p.toFixed(d); if ((Number(t) < 0.05) === (p < 0.05)) return t; }
    return String(p);
  }
  function num(n) { return (n || 0).toLocaleString('en-US'); }
  function cap(x) { return x.charAt(0).toUpperCase() + x.slice(1); }
  function ageName(a) { return a === 'child' ? 'Child/teen (6–17)' : a === 'adult' ? 'Adult (18+)' : a; }

  // ---- the study's indexes ---------------------------------------------------
  var nodeById = new Map();
  C.nodes.forEach(function (n, i) { nodeById.set(n.id, i); });
  var metricByKey = new Map();
  C.metrics.forEach(function (m, i) { metricByKey.set(m.key, i); });
  var modelById = new Map();
  C.models.forEach(function (m, i) { modelById.set(m.id, i); });
  var scaleById = new Map();
  C.scales.forEach(function (s) { scaleById.set(s.id, s); });
  // cell reads a cell array (site/internal cellData.MarshalJSON) with the
  // names of its node's grade scale.
  function cell(a, sc) {
    var band = function (i) { return i >= 0 ? sc.bands[i].name : ''; };
    return { m: a[0], s: a[1], lo: a[2], hi: a[3], n: a[4], mn: a[5], k: a[6], ke: a[7], thin: a[8] === 1,
      r: a[9] || undefined, rl: a[10], rh: a[11], t: a[12] ? a[12].split(',') : [],
      g: band(a[13]), gf: band(a[14]), gt: band(a[15]), w: a[16] >= 0 ? C.cell_warnings[a[16]] : '',
      pl: Array.isArray(a[17]) ? { s: a[17][0], lo: a[17][1], hi: a[17][2] } : null,
      cr: Array.isArray(a[18]) ? { s: a[18][0], lo: a[18][1], hi: a[18][2] } : null, crw: typeof a[18] === 'string' ? a[18] : '' };
  }
  function cells(byAge, sc) {
    var out = {};
    if (byAge) for (var a in byAge) if (has(byAge, a)) out[a] = byAge[a].map(function (x) { return cell(x, sc); });
    return out;
  }
  C.nodes.forEach(function (n) { if (n.cells) n.cells = cells(n.cells, scaleById.get(n.scale)); });
  var KIND = { overall: 'Overall', area: 'Area', subarea: 'Subarea', group: 'Group', label: 'Nutrition label', nutrition: 'Nutrition category', benchmark: 'Benchmark', metric: 'Metric' };

  // ---- loading data files -----------------------------------------------------
  var loading = new Map();
  function load(name) {
    if (has(D, name)) return Promise.resolve(D[name]);
    if (loading.has(name)) return loading.get(name);
    if (!has(C.files, name)) return Promise.reject(new Error('the site has no data file ' + name));
    var p = new Promise(function (resolve, reject) {
      var s = document.createElement('script');
      s.src = chunkURL(name);
      s.onload = function () {
        D = window.IB_DATA;
        if (!has(D, name)) { reject(new Error(name + ' did not load')); return; }
        if (name.indexOf('bench/') === 0) D[name].metrics.forEach(function (m) { m.cells = cells(m.cells, scaleById.get('step')); });
        resolve(D[name]);
      };
      s.onerror = function () { loading.delete(name); reject(new Error('could not load ' + chunkURL(name))); };
      document.head.appendChild(s);
    });
    loading.set(name, p);
    return p;
  }
  function chunkURL(name) { return 'site/data/' + name + '.js?v=' + C.files[name]; }
  function benchOf(mi) { return C.benches[C.metrics[mi].bench]; }
  function loadBench(slug) { return load('bench/' + slug); }
  function benchMetric(ch, key) {
    for (var i = 0; i < ch.metrics.length; i++) if (ch.metrics[i].key === key) return ch.metrics[i];
    return null;
  }
  // metricCells loads the cells of the metrics mis (by metric index).
  function metricCells(mis) {
    var slugs = [];
    mis.forEach(function (mi) { var s = benchOf(mi).slug; if (slugs.indexOf(s) < 0) slugs.push(s); });
    return Promise.all(slugs.map(loadBench)).then(function () {
      var out = new Map();
      mis.forEach(function (mi) {
        var bm = benchMetric(D['bench/' + benchOf(mi).slug], C.metrics[mi].key);
        out.set(mi, bm ? bm.cells || {} : {});
      });
      return out;
    });
  }

  // ---- routes ------------------------------------------------------------------
  // #/<page>/<arg…>?age=…&model=…&a=…&b=…&from=…
  var R = { page: 'board', args: [], q: {} };
  function parseRoute() {
    var h = location.hash.replace(/^#\/?/, '');
    var qi = h.indexOf('?');
    var path = qi < 0 ? h : h.slice(0, qi), query = qi < 0 ? '' : h.slice(qi + 1);
    var q = {};
    query.split('&').forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf('=');
      try { q[decodeURIComponent(i < 0 ? kv : kv.slice(0, i))] = decodeURIComponent(i < 0 ? '' : kv.slice(i + 1)); } catch (e) { /* a malformed escape is ignored */ }
    });
    var parts = path.split('/').filter(function (x) { return x !== ''; }).map(function (x) {
      try { return decodeURIComponent(x); } catch (e) { return x; }
    });
    return { page: parts.length ? parts[0] : 'board', args: parts.slice(1), q: q };
  }
  function link(page, args, q) {
    var m = {};
    // The age and model carry over; so does the path a metric was reached
    // by, within the metric and scenario pages.
    var carry = page === 'metric' || page === 'scenario' ? ['age', 'model', 'from'] : ['age', 'model'];
    carry.forEach(function (k) { if (has(R.q, k)) m[k] = R.q[k]; });
    for (var k in q) if (has(q, k)) { if (q[k] === null) delete m[k]; else m[k] = q[k]; }
    var qs = Object.keys(m).sort().map(function (k) { return encodeURIComponent(k) + '=' + encodeURIComponent(m[k]); }).join('&');
    var path = [page].concat(args || []).map(function (x) { return String(x).split('/').map(encodeURIComponent).join('/'); }).join('/');
    return '#/' + path + (qs ? '?' + qs : '');
  }
  function age() { var a = R.q.age; return C.ages.indexOf(a) >= 0 ? a : (C.ages.indexOf('adult') >= 0 ? 'adult' : C.ages[0]); }
  function defaultModel() {
    var o = C.nodes[nodeById.get('overall')];
    var cells = o && o.cells && o.cells[age()] || [];
    var best = null;
    cells.forEach(function (c) { if (c.r !== undefined && (best === null || c.r < best.r)) best = c; });
    return best ? best.m : 0;
  }
  function model() { var m = modelById.get(R.q.model); return m === undefined ? defaultModel() : m; }
  function modelName(i) { return C.models[i].name; }

  // ---- shared pieces ---------------------------------------------------------------
  function bar(lo, hi, s) {
    var b = el('span', { 'class': 'bar', title: '95 % interval ' + f3(lo) + ' to ' + f3(hi) + ' on a 0–1 scale' });
    var iv = el('span', { 'class': 'iv' }); iv.style.left = (lo * 100) + '%'; iv.style.width = Math.max(0.5, (hi - lo) * 100) + '%';
    var pt = el('span', { 'class': 'pt' }); pt.style.left = (s * 100) + '%';
    add(b, iv, pt);
    return b;
  }
  function scoreCell(c, extra) {
    return el('td', { 'class': 'score' }, el('b', { text: f3(c.s) }), ' ', el('span', { 'class': 'iv-text', text: ivText(c) }), extra, corrEl(c));
  }
  // corrEl is the score corrected for judge error (models with human
  // labels), or why it is missing.
  function corrEl(c) {
    if (c.cr) return el('span', { 'class': 'corr', title: 'corrected for the judge\'s errors (sensitivity and specificity measured against people\'s labels); the wider interval counts the calibration\'s uncertainty' }, el('br'), 'judge-corrected ' + f3(c.cr.s) + ' ' + ivText(c.cr));
    if (c.crw) return el('span', { 'class': 'corr muted small', title: c.crw }, el('br'), 'not corrected for judge error');
    return null;
  }
  // placeCell is an area's score as impactbench-web's area card computes
  // it: every placement of a metric in the area's subareas counts.
  function placeCell(c) {
    if (!c || !c.pl) return el('td', { 'class': 'muted', text: '—' });
    return el('td', { 'class': 'score place', title: 'the area card\'s score: each metric counted once per subarea it is listed under, as impactbench-web averages an area (and grades it)' }, el('b', { text: f3(c.pl.s) }), ' ', el('span', { 'class': 'iv-text', text: ivText(c.pl) }));
  }
  function gradeEl(c, scaleID) {
    var sc = scaleById.get(scaleID);
    if (c.g) return el('span', { 'class': 'grade', data: { grade: c.g }, title: 'the whole 95 % interval ' + ivText(c) + ' lies in this ' + sc.title + "'s band" }, c.g + ' ', el('span', { 'class': 'iv-text', text: ivText(c) }));
    return el('span', { 'class': 'withheld', data: { grade: '' }, title: 'the 95 % interval ' + ivText(c) + ' spans ' + c.gf + ' to ' + c.gt + ': the data cannot say which ' + sc.title + ' it deserves' },
      'withheld', el('span', { 'class': 'span-text', text: ' (' + c.gf + ' … ' + c.gt + ')' }));
  }
  function thinEl(c) {
    if (!c.thin && !c.w) return null;
    return el('span', { 'class': c.thin ? 'thin-mark' : 'warn-mark', text: c.thin ? ' thin' : ' ⚠', title: c.w || 'rests on few base scenarios' });
  }
  function nText(c) { return num(c.n) + (c.k !== c.ke ? ' (' + c.k + ' of ' + c.ke + ' metrics)' : ' (' + c.k + ' metric' + (c.k === 1 ? '' : 's') + ')'); }
  function rankText(c) {
    if (c.r === undefined) return 'not ranked';
    return c.rl === c.rh ? String(c.r) : c.r + ' (' + c.rl + '–' + c.rh + ')';
  }
  function ties(c) { return c.t.join(c.t.every(function (x) { return x.length === 1; }) ? '' : ','); }

  // board is a node's leaderboard at one age.
  function board(node, cells, scaleID, opts) {
    opts = opts || {};
    var ranked = cells.filter(function (c) { return c.r !== undefined; }).sort(function (a, b) { return a.r - b.r || b.s - a.s; });
    var rest = cells.filter(function (c) { return c.r === undefined; }).sort(function (a, b) { return b.s - a.s; });
    var hasTies = node.kind !== 'metric', area = node.kind === 'area';
    var head = el('tr', null, el('th', { text: 'Rank', title: 'rank by score (equal scores share a rank); in brackets the 95 % rank interval, from the same Holm-adjusted paired tests as the tie groups' }),
      hasTies ? el('th', { text: 'Tie group', title: 'models sharing a letter are not shown to differ: their paired difference is not significant after Holm over every pair at this level' }) : null,
      el('th', { text: 'Model' }), el('th', { text: 'Provider' }),
      el('th', { 'class': 'num', text: 'Score [95 % interval]', title: area ? 'each metric once, as impactbench-web\'s leaderboard averages an area' : null }), el('th', { text: '' }),
      area ? el('th', { 'class': 'num', text: 'Area card [95 %]', title: 'every placement of a metric counted, as impactbench-web\'s area card and grade word average an area' }) : null,
      el('th', { text: cap(scaleById.get(scaleID).title) + (area ? ' (area card)' : '') }), el('th', { 'class': 'num', text: 'Base scenarios' }));
    var body = el('tbody');
    ranked.concat(rest).forEach(function (c) {
      var m = C.models[c.m];
      var tiedNames = cells.filter(function (o) { return o !== c && o.t.some(function (l) { return c.t.indexOf(l) >= 0; }); }).map(function (o) { return modelName(o.m); }).join(', ');
      add(body, el('tr', { data: { model: m.id }, 'class': c.m === opts.selected ? 'sel' : null },
        el('td', { 'class': 'rank', text: rankText(c) }),
        hasTies ? el('td', { 'class': 'ties', text: ties(c), title: tiedNames ? 'tied with ' + tiedNames : 'tied with no other model' }) : null,
        el('td', { 'class': 'model' }, el('a', { href: opts.modelLink ? opts.modelLink(m) : link(R.page, R.args, { model: m.id }), text: m.name })),
        el('td', { 'class': 'muted', text: m.provider }),
        scoreCell(c), el('td', null, bar(c.lo, c.hi, c.s)),
        area ? placeCell(c) : null,
        el('td', null, gradeEl(c.pl ? Object.assign({}, c, { lo: c.pl.lo, hi: c.pl.hi }) : c, scaleID)),
        el('td', { 'class': 'num' }, nText(c), thinEl(c))));
    });
    if (!ranked.length && !rest.length) add(body, el('tr', null, el('td', { colspan: area ? '9' : '8', 'class': 'muted', text: 'No model has scores here at this age.' })));
    return el('table', { 'class': 'board', data: { node: node.id } }, el('thead', null, head), body);
  }
  function cellsAt(node) { return node.cells && node.cells[age()] || []; }
  function cellOf(cells, mi) { for (var i = 0; i < cells.length; i++) if (cells[i].m === mi) return cells[i]; return null; }

  function ageToggle() {
    return el('span', { 'class': 'toggle' }, C.ages.map(function (a) {
      return el('a', { href: link(R.page, R.args, { age: a }), 'class': a === age() ? 'on' : null, data: { age: a }, text: ageName(a) });
    }));
  }
  function modelPicker(key, current, filter) {
    var s = el('select', { 'aria-label': 'model', data: { pick: key } });
    C.models.forEach(function (m, i) {
      if (filter && !filter(m)) return;
      var o = el('option', { value: m.id, text: m.name });
      if (i === current) o.selected = true;
      add(s, o);
    });
    s.addEventListener('change', function () { var q = {}; q[key] = s.value; location.hash = link(R.page, R.args, q); });
    return s;
  }
  function controls(parts) { var c = $('controls'); clear(c); add(c, parts); }

  function crumbs(ni) {
    var chain = [];
    for (var i = ni; i >= 0; i = C.nodes[i].parent) chain.unshift(i);
    return el('nav', { 'class': 'crumbs' }, chain.map(function (i, k) {
      var n = C.nodes[i];
      return [k ? ' › ' : '', k === chain.length - 1 ? el('span', { text: n.name }) : el('a', { href: link('node', [n.id]), text: n.name })];
    }));
  }
  function section(title) {
    var s = el('section', null, el('h2', { text: title }));
    for (var i = 1; i < arguments.length; i++) add(s, arguments[i]);
    return s;
  }
  function p(cls) { var e = el('p', { 'class': cls }); for (var i = 1; i < arguments.length; i++) add(e, arguments[i]); return e; }

  // ---- pages ------------------------------------------------------------------------
  function pageBoard(main) {
    controls([ageToggle()]);
    var ni = nodeById.get('overall');
    if (ni === undefined) { add(main, p('muted', 'The study has no taxonomy scores.')); return; }
    var n = C.nodes[ni];
    var cells = cellsAt(n);
    add(main, el('h1', { text: 'Leaderboard — ' + ageName(age()) }),
      p('lead', 'Overall score: the mean of ' + num(n.metrics.length) + ' metrics\' pass rates, with its 95 % interval, the 95 % interval of each model\'s rank, and tie groups. Models sharing a tie-group letter are not shown to differ (Holm over every pair); a single rank number is not supported where its interval spans several places.'),
      p('muted small judge-error', 'Judge error: ' + C.judge_error + '.'),
      board(n, cells, n.scale, { modelLink: function (m) { return link('node', ['overall'], { model: m.id }); } }),
      methodsBlock());
  }
  function methodsBlock() {
    var m = C.methods;
    return el('details', { 'class': 'methods' }, el('summary', { text: 'How these numbers are made' }),
      el('dl', null, [['Score', m.score], ['Interval', m.interval], ['Paired differences', m.pairs], ['Rank intervals', m.ranks], ['Area card', m.by_placement], ['Thin', m.thin]].map(function (r) {
        return [el('dt', { text: r[0] }), el('dd', { text: r[1] })];
      })));
  }

  function pageNode(main) {
    var id = R.args.join('/');
    if (id.indexOf('metric/') === 0 && metricByKey.has(id.slice(7))) { location.replace(link('metric', [id.slice(7)])); return null; }
    var ni = nodeById.get(id);
    if (ni === undefined) return notFound(main, 'No level ' + id + ' in this study.');
    var n = C.nodes[ni];
    var mi = model();
    controls([ageToggle(), ' ', modelPicker('model', mi)]);
    add(main, crumbs(ni), el('h1', null, el('span', { 'class': 'kind', text: KIND[n.kind] + ' ' }), n.name),
      p('lead', 'The mean of ' + num(n.metrics.length) + ' metric' + (n.metrics.length === 1 ? '' : 's') + '\' pass rates. ' + (n.ranked === 'all' ? 'Every model is ranked here.' : 'Models with the full surface are ranked here.')),
      section('Leaderboard — ' + ageName(age()), board(n, cellsAt(n), n.scale, { selected: mi })));
    var kids = n.kids || [];
    var title = 'Inside — ' + modelName(mi) + ', ' + ageName(age());
    if (kids.length) {
      add(main, section(title, childTable(kids.map(function (k) {
        var kn = C.nodes[k];
        return { name: kn.name, href: link('node', [kn.id]), cell: cellOf(cellsAt(kn), mi), scale: kn.scale, kind: kn.kind, n: kn.metrics.length };
      }), 'child')));
      return null;
    }
    var box = el('div', null, p('muted', 'Loading metrics…'));
    add(main, section(title, box));
    return metricCells(n.metrics).then(function (cells) {
      clear(box);
      add(box, childTable(n.metrics.map(function (k) {
        var m = C.metrics[k];
        return { name: m.name, href: link('metric', [m.key], { from: n.id }), cell: cellOf(cells.get(k)[age()] || [], mi), scale: 'step', kind: 'metric', type: m.type };
      }), 'metric'));
    });
  }
  function childTable(rows, kind) {
    var body = el('tbody');
    rows.forEach(function (r) {
      var c = r.cell;
      add(body, el('tr', { data: { kind: kind } },
        el('td', null, el('a', { href: r.href, text: r.name }), r.type ? el('span', { 'class': 'type ' + r.type, text: r.type === 'positive' ? ' promote' : ' avoid', title: r.type === 'positive' ? 'a behaviour to promote: pass = present' : 'a behaviour to avoid: pass = absent' }) : null),
        c ? scoreCell(c, c.pl ? el('span', { 'class': 'place muted small', title: 'the area card\'s score: every placement of a metric counted, as impactbench-web averages and grades an area' }, el('br'), 'area card ' + f3(c.pl.s) + ' ' + ivText(c.pl)) : null) : el('td', { 'class': 'muted', text: 'no score' }),
        el('td', null, c ? bar(c.lo, c.hi, c.s) : null),
        el('td', null, c ? gradeEl(c.pl ? Object.assign({}, c, { lo: c.pl.lo, hi: c.pl.hi }) : c, r.scale) : null),
        el('td', { 'class': 'num' }, c ? [nText(c), thinEl(c)] : null)));
    });
    return el('table', { 'class': 'kids' }, el('thead', null, el('tr', null, el('th', { text: 'Name' }), el('th', { 'class': 'num', text: 'Score [95 % interval]' }), el('th'), el('th', { text: 'Grade' }), el('th', { 'class': 'num', text: 'Base scenarios' }))), body);
  }

  function pageMetric(main) {
    var key = R.args.join('/');
    var k = metricByKey.get(key);
    if (k === undefined) return notFound(main, 'No metric ' + key + ' in this study.');
    var m = C.metrics[k], n = { id: 'metric/' + key, kind: 'metric' }, bench = benchOf(k);
    var mi = model();
    controls([ageToggle(), ' ', modelPicker('model', mi)]);
    var from = nodeById.get(R.q.from);
    add(main, from !== undefined ? crumbs(from) : null, el('h1', null, el('span', { 'class': 'kind', text: 'Metric ' }), m.name),
      p('lead', el('span', { 'class': 'type ' + m.type, text: m.type === 'positive' ? 'A behaviour to promote (pass = present)' : 'A behaviour to avoid (pass = absent)' }), ' · ',
        bench.node >= 0 ? el('a', { href: link('node', [C.nodes[bench.node].id]), text: bench.name }) : bench.name, ' · ', el('code', { text: m.key })));
    var box = el('div', null, p('muted', 'Loading…'));
    add(main, box);
    return loadBench(bench.slug).then(function (ch) {
      clear(box);
      var bm = benchMetric(ch, key);
      if (!bm) { add(box, p('err', 'This metric is missing from its benchmark\'s data file.')); return; }
      add(box, el('dl', { 'class': 'about' },
        bm.def ? [el('dt', { text: 'Definition' }), el('dd', { 'class': 'text', text: bm.def })] : null,
        bm.why ? [el('dt', { text: 'Why this matters' }), el('dd', { 'class': 'text', text: bm.why })] : null,
        bm.by ? [el('dt', { text: 'Part of' }), el('dd', { text: bm.by })] : null,
        m.in.length ? [el('dt', { text: 'Placed in' }), el('dd', null, m.in.map(function (i, j) { return [j ? ', ' : '', el('a', { href: link('node', [C.nodes[i].id]), text: C.nodes[i].name })]; }))] : null));
      add(box, section('Every model — ' + ageName(age()), board(n, bm.cells && bm.cells[age()] || [], 'step', { selected: mi }),
        p('muted small', 'A single metric rests on its few base scenarios: its interval is wide and its step label is withheld whenever the interval spans more than one step. study.json keeps no paired differences per metric.')));
      var rows = bm.rows.filter(function (r) { return r.age === age(); });
      var body = el('tbody');
      rows.forEach(function (r) {
        var v = r.v.charAt(mi);
        add(body, el('tr', { data: { scenario: r.id } },
          el('td', null, el('a', { href: link('scenario', [key, r.id]), text: r.title })),
          el('td', null, verdictPill(v)),
          el('td', { 'class': 'chips' }, C.models.map(function (mm, i) {
            var x = r.v.charAt(i);
            return x === '-' ? null : el('span', { 'class': 'chip ' + (x === 'P' ? 'pass' : 'fail'), text: x, title: mm.name + ': ' + (x === 'P' ? 'pass' : 'fail') });
          }))));
      });
      if (!rows.length) add(body, el('tr', null, el('td', { colspan: '3', 'class': 'muted', text: 'No scenarios at this age.' })));
      add(box, section('Scenarios — ' + ageName(age()), el('table', { 'class': 'scen' },
        el('thead', null, el('tr', null, el('th', { text: 'Scenario' }), el('th', { text: modelName(mi) }), el('th', { text: 'Every model' }))), body)));
    });
  }
  function verdictPill(v) {
    if (v === 'P') return el('span', { 'class': 'pill pass', text: 'Pass' });
    if (v === 'F') return el('span', { 'class': 'pill fail', text: 'Fail' });
    return el('span', { 'class': 'pill none', text: 'no verdict' });
  }

  function pageScenario(main) {
    var key = R.args[0], sid = R.args.slice(1).join('/');
    var k = metricByKey.get(key);
    if (k === undefined) return notFound(main, 'No metric ' + key + ' in this study.');
    var m = C.metrics[k], bench = benchOf(k);
    var mi = model();
    controls([modelPicker('model', mi)]);
    var from = nodeById.get(R.q.from);
    add(main, from !== undefined ? crumbs(from) : null);
    var box = el('div', null, p('muted', 'Loading…'));
    add(main, box);
    return loadBench(bench.slug).then(function (ch) {
      var bm = benchMetric(ch, key);
      var row = null;
      (bm ? bm.rows : []).forEach(function (r) { if (r.id === sid) row = r; });
      clear(box);
      if (!row) { add(box, p('err', 'No scenario ' + sid + ' of this metric.')); return null; }
      add(box, el('p', { 'class': 'crumbs' }, el('a', { href: link('metric', [key], { age: row.age }), text: m.name }), ' › ', el('code', { text: row.id })),
        el('h1', { text: row.title }),
        p('lead', ageName(row.age), ' · ', el('span', { 'class': 'type ' + m.type, text: m.type === 'positive' ? 'behaviour to promote' : 'behaviour to avoid' })),
        el('div', { 'class': 'switch' }, C.models.map(function (mm, i) {
          var x = row.v.charAt(i);
          return el('a', { href: link('scenario', [key, row.id], { model: mm.id }), 'class': 'sw' + (i === mi ? ' on' : '') + (x === 'P' ? ' pass' : x === 'F' ? ' fail' : ''), data: { model: mm.id }, text: mm.name + (x === 'P' ? ' ✓' : x === 'F' ? ' ✗' : ' –') });
        })));
      var detail = el('div', { 'class': 'conv' }, p('muted', 'Loading the conversation…'));
      add(box, detail);
      if (row.v.charAt(mi) === '-') { clear(detail); add(detail, p('muted', modelName(mi) + ' has no judged conversation of this scenario.')); return null; }
      var name = 'tr/' + bench.slug + '/' + C.models[mi].id;
      if (!has(C.files, name)) { clear(detail); add(detail, p('muted', 'The transcripts of ' + modelName(mi) + ' on this benchmark are not published.')); return null; }
      return load(name).then(function (tr) {
        clear(detail);
        var rec = has(tr.rows, row.id) ? tr.rows[row.id] : null;
        if (!rec) { add(detail, p('muted', 'This conversation was not published (it is missing from the run).')); return; }
        conversation(detail, rec, m);
      });
    });
  }
  function conversation(box, rec, m) {
    add(box, el('div', { 'class': 'verdict' },
      el('span', { 'class': 'pill ' + (rec.passed ? 'pass' : 'fail'), text: rec.passed ? 'Pass' : 'Fail' }),
      el('span', { text: ' behaviour ' + (rec.present ? 'present' : 'absent') + (rec.sample ? ' · sample ' + rec.sample : '') })),
      el('h3', { text: "Judge's justification" }), el('p', { 'class': 'text just', text: rec.just || '(none)' }));
    if (rec.ev.length) {
      add(box, el('h3', { text: 'Quoted evidence' }), el('ul', { 'class': 'evidence' }, rec.ev.map(function (q) {
        var found = q.msg !== null && q.msg !== undefined;
        return el('li', { 'class': found ? 'found' : 'missing' }, '“' + q.q + '”',
          el('span', { 'class': 'muted small', text: found ? ' — marked in message ' + (q.msg + 1) : ' — not found in the assistant\'s words' }));
      })));
    }
    var marks = {};
    rec.hl.forEach(function (h) { (marks[h[0]] = marks[h[0]] || []).push([h[1], h[2]]); });
    add(box, el('h3', { text: 'Transcript' }), el('ol', { 'class': 'transcript' }, rec.t.map(function (t, i) {
      return el('li', { 'class': 'turn ' + (t[0] === 'assistant' ? 'ai' : t[0] === 'user' ? 'user' : 'other') },
        el('div', { 'class': 'role', text: t[0] }), el('div', { 'class': 'body text' }, marked(t[1], has(marks, i) ? marks[i] : null)));
    })));
    var sc = rec.sc || {};
    add(box, el('details', { 'class': 'scenario' }, el('summary', { text: 'The scenario' }), el('dl', null,
      [['Persona', sc.persona], ['User persona', sc.user_persona], ['User goal', sc.goal], ['Hidden goal of the simulated user', sc.latent]].map(function (r) {
        return r[1] ? [el('dt', { text: r[0] }), el('dd', { 'class': 'text', text: r[1] })] : null;
      }),
      sc.landmarks ? [el('dt', { text: 'Landmarks' }), el('dd', null, el('ol', null, sc.landmarks.map(function (l) { return el('li', { text: 'turn ' + l[0] + ': ' + l[1] }); })))] : null,
      sc.demographic ? [el('dt', { text: 'Demographic' }), el('dd', { text: sc.demographic.map(function (d) { return d[0] + ': ' + d[1]; }).join(' · ') })] : null)));
  }
  // marked splits a message into text and <mark> pieces at the judges'
  // quoted spans ([start, end) in UTF-16 units, sorted, disjoint), all text.
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

  function pageNutrition(main) {
    var li = nodeById.get('label');
    if (li === undefined) { controls([]); add(main, el('h1', { text: 'Nutrition label' }), p('muted', 'The study has no nutrition label (benchmarks/nutrition-label.json).')); return; }
    var label = C.nodes[li];
    var mi = model();
    controls([ageToggle(), ' ', modelPicker('model', mi)]);
    add(main, el('h1', { text: 'Nutrition label — ' + modelName(mi) }),
      p('lead', 'Each category is the mean of its metrics\' pass rates with a 95 % interval; the label\'s overall score is the mean of the categories. A letter grade is shown only where the whole interval lies inside one grade.'));
    var cards = el('div', { 'class': 'cards' });
    C.ages.forEach(function (a) { add(cards, labelCard(label, mi, a)); });
    add(main, cards, section('Label leaderboard — ' + ageName(age()), board(label, cellsAt(label), 'letter', { selected: mi, modelLink: function (m) { return link('nutrition', [], { model: m.id }); } })));
  }
  function labelCard(label, mi, a) {
    var overall = cellOf(label.cells && label.cells[a] || [], mi);
    var card = el('div', { 'class': 'card', data: { age: a } }, el('h2', { text: ageName(a) }));
    if (!overall) { add(card, p('muted', 'No label scores at this age.')); return card; }
    add(card, el('div', { 'class': 'overall' }, el('span', { 'class': 'big' }, gradeEl(overall, 'letter')),
      el('div', null, el('b', { text: f3(overall.s) }), ' ', el('span', { 'class': 'iv-text', text: ivText(overall) }), ' · rank ', rankText(overall), thinEl(overall)), bar(overall.lo, overall.hi, overall.s)));
    var groups = [['Avoids', []], ['Promotes', []], ['Other', []]];
    (label.kids || []).forEach(function (k) {
      var n = C.nodes[k];
      var g = n.name.indexOf('Avoids') === 0 ? 0 : n.name.indexOf('Promotes') === 0 ? 1 : 2;
      groups[g][1].push(k);
    });
    groups.forEach(function (g) {
      if (!g[1].length) return;
      var body = el('tbody');
      g[1].forEach(function (k) {
        var n = C.nodes[k], c = cellOf(n.cells && n.cells[a] || [], mi);
        add(body, el('tr', { data: { category: n.id } },
          el('td', null, el('a', { href: link('node', [n.id], { age: a }), text: n.name })),
          c ? el('td', null, gradeEl(c, 'letter')) : el('td', { 'class': 'muted', text: '—' }),
          c ? scoreCell(c, el('span', { 'class': 'sub' }, nText(c).replace(' (', ' base scenarios ('), thinEl(c))) : el('td'),
          el('td', null, c ? bar(c.lo, c.hi, c.s) : null)));
      });
      add(card, el('h3', { text: g[0] === 'Other' ? 'Other categories' : g[0] + ' …' }), el('table', { 'class': 'cats' }, body));
    });
    return card;
  }

  function pageCompare(main) {
    var a = modelById.get(R.q.a), b = modelById.get(R.q.b);
    if (a === undefined) a = defaultModel();
    if (b === undefined || b === a) b = a === 0 ? Math.min(1, C.models.length - 1) : 0;
    controls([ageToggle(), ' A: ', modelPicker('a', a), ' B: ', modelPicker('b', b)]);
    add(main, el('h1', { text: modelName(a) + ' vs ' + modelName(b) }),
      p('lead', 'Paired differences A − B at every level (over the metrics and base scenarios both models have; the scenario\'s difficulty cancels), with 95 % intervals and p-values. The reading says a model is higher only when the difference is significant after Holm\'s adjustment over every pair of models at that level and age (p adj. < 0.05), as the tie groups do; an interval that excludes 0 with an adjusted p at or above 0.05 is a lead, not a finding. study.json keeps no paired differences per metric (three base scenarios each): a level\'s metrics unfold into both models\' scores with their intervals and verdicts, unpaired.'));
    if (a === b) { add(main, p('muted', 'Pick two different models.')); return null; }
    var lo = Math.min(a, b), hi = Math.max(a, b), flip = a > b;
    var name = 'pairs/' + C.models[lo].id + '/' + C.models[hi].id;
    if (!has(C.files, name)) { add(main, p('muted', 'study.json compares these two models nowhere: a model is compared only where both are ranked (taxonomy levels: the full surface; the nutrition label: every model).')); return null; }
    var box = el('div', null, p('muted', 'Loading…'));
    add(main, box);
    return load(name).then(function (ch) {
      clear(box);
      var rows = ch.rows.filter(function (r) { return r.age === age(); });
      var body = el('tbody');
      rows.forEach(function (r) {
        var n = C.nodes[r.node];
        var d = flip ? -r.d : r.d, l = flip ? -r.hi : r.lo, h = flip ? -r.lo : r.hi;
        var ca = cellOf(cellsAt(n), a), cb = cellOf(cellsAt(n), b);
        var reading = r.sig !== 1 ? 'not shown different' : d > 0 ? modelName(a) + ' higher' : modelName(b) + ' higher';
        var leaf = n.kind === 'group' || n.kind === 'nutrition' || n.kind === 'benchmark' || (n.kind === 'subarea' && !(n.kids || []).length);
        var tr = el('tr', { data: { node: n.id }, 'class': 'depth' + depth(r.node) });
        add(body, tr);
        add(tr, el('td', null, el('span', { 'class': 'kind', text: KIND[n.kind] + ' ' }), el('a', { href: link('node', [n.id]), text: n.name }),
            leaf ? el('button', { type: 'button', 'class': 'expand', text: 'metrics ▸', title: 'each metric\'s scores for both models', onclick: function (ev) { expandMetrics(ev.currentTarget, tr, n, a, b); } }) : null),
          el('td', { 'class': 'num', text: ca ? f3(ca.s) : '—' }), el('td', { 'class': 'num', text: cb ? f3(cb.s) : '—' }),
          el('td', { 'class': 'num diff' }, el('b', { text: signed(d) }), ' ', el('span', { 'class': 'iv-text', text: '[' + lim(l) + ', ' + lim(h) + ']' })),
          el('td', null, diffBar(l, h, d)),
          el('td', { 'class': 'reading ' + (r.sig === 1 ? 'sig' : 'muted'), text: reading }),
          el('td', { 'class': 'num p', text: pText(r.p) }), el('td', { 'class': 'num padj', text: pText(r.pa) }),
          el('td', { 'class': 'num', text: num(r.n) + ' (' + r.k + ')' }));
      });
      if (!rows.length) add(body, el('tr', null, el('td', { colspan: '9', 'class': 'muted', text: 'No paired differences at this age.' })));
      add(box, el('table', { 'class': 'pairs' }, el('thead', null, el('tr', null, el('th', { text: 'Level' }), el('th', { 'class': 'num', text: 'A' }), el('th', { 'class': 'num', text: 'B' }),
        el('th', { 'class': 'num', text: 'A − B [95 % interval]' }), el('th'), el('th', { text: 'Reading' }), el('th', { 'class': 'num', text: 'p', title: 'this comparison alone: below 0.05 exactly when its 95 % interval excludes 0' }),
        el('th', { 'class': 'num', text: 'p adj.', title: 'Holm over every pair of models at this level and age' }), el('th', { 'class': 'num', text: 'Shared base scenarios (metrics)' }))), body));
    });
  }
  // expandMetrics lists a level's metrics under its row: both models'
  // scores with their intervals and their verdicts on each scenario at
  // this age. study.json has no paired difference per metric (a metric
  // rests on three base scenarios); the rows say so instead of inventing one.
  function expandMetrics(btn, tr, n, a, b) {
    btn.disabled = true;
    metricCells(n.metrics).then(function (cells) {
      var after = tr;
      n.metrics.forEach(function (k) {
        var m = C.metrics[k], cs = cells.get(k)[age()] || [];
        var ca = cellOf(cs, a), cb = cellOf(cs, b);
        var bm = benchMetric(D['bench/' + benchOf(k).slug], m.key);
        var va = '', vb = '';
        (bm ? bm.rows : []).forEach(function (r) { if (r.age === age()) { va += r.v.charAt(a); vb += r.v.charAt(b); } });
        var row = el('tr', { 'class': 'metric-row depth' + (depth(nodeById.get(n.id)) + 1), data: { metric: m.key } },
          el('td', null, el('span', { 'class': 'kind', text: 'Metric ' }), el('a', { href: link('metric', [m.key], { from: n.id }), text: m.name })),
          el('td', { 'class': 'num', text: ca ? f3(ca.s) : '—' }), el('td', { 'class': 'num', text: cb ? f3(cb.s) : '—' }),
          el('td', { 'class': 'num muted small', text: 'A ' + (ca ? ivText(ca) : '—') + ' · B ' + (cb ? ivText(cb) : '—') }),
          el('td', { 'class': 'chips' }, verdictChips(va), ' ', verdictChips(vb)),
          el('td', { 'class': 'muted small', text: 'not paired: ' + (ca ? ca.n : 0) + ' base scenarios' }), el('td'), el('td'));
        after.after(row);
        after = row;
      });
      btn.remove();
    }, function (e) { btn.textContent = 'could not load: ' + e.message; });
  }
  function verdictChips(v) {
    return el('span', { 'class': 'vset' }, v.split('').map(function (x) {
      return x === '-' ? el('span', { 'class': 'chip none', text: '–' }) : el('span', { 'class': 'chip ' + (x === 'P' ? 'pass' : 'fail'), text: x });
    }));
  }
  function depth(ni) { var d = 0; for (var i = C.nodes[ni].parent; i >= 0; i = C.nodes[i].parent) d++; return d; }
  function diffBar(l, h, d) {
    // −0.5 … +0.5 around a centre line.
    var clamp = function (x) { return Math.max(-0.5, Math.min(0.5, x)); };
    var b = el('span', { 'class': 'bar diffbar', title: 'A − B from ' + signed(l) + ' to ' + signed(h) + ' (scale −0.5 … +0.5)' });
    var iv = el('span', { 'class': 'iv' }); iv.style.left = ((clamp(l) + 0.5) * 100) + '%'; iv.style.width = Math.max(0.5, (clamp(h) - clamp(l)) * 100) + '%';
    var pt = el('span', { 'class': 'pt' }); pt.style.left = ((clamp(d) + 0.5) * 100) + '%';
    add(b, el('span', { 'class': 'zero' }), iv, pt);
    return b;
  }

  function pageThin(main) {
    controls([]);
    var th = C.thin;
    add(main, el('h1', { text: 'What is thin, and what calibration corrected' }),
      p('lead', 'Rule: ' + th.rule + '. A thin cell\'s interval is honest but wide; its grade is withheld whenever the interval spans more than one grade.'));
    var lv = el('tbody');
    C.levels.forEach(function (r) {
      add(lv, el('tr', { data: { kind: r.kind } }, el('td', { text: KIND[r.kind] }), el('td', { 'class': 'num', text: num(r.cells) }), el('td', { 'class': 'num', text: num(r.thin) }),
        el('td', { 'class': 'num', text: '±' + r.hw.toFixed(3) + ' (' + r.hw_min.toFixed(3) + '–' + r.hw_max.toFixed(3) + ')' }),
        el('td', { 'class': 'num', text: num(r.n) + ' (' + num(r.n_min) + '–' + num(r.n_max) + ')' }),
        el('td', { 'class': 'num', text: num(r.graded) }), el('td', { 'class': 'num', text: num(r.partial) })));
    });
    add(main, section('Every level (ranked models\' cells)', el('table', { 'class': 'levels' }, el('thead', null, el('tr', null, el('th', { text: 'Level' }), el('th', { 'class': 'num', text: 'Cells' }),
      el('th', { 'class': 'num', text: 'Thin' }), el('th', { 'class': 'num', text: 'Half-width: median (range)' }), el('th', { 'class': 'num', text: 'Base scenarios: median (range)' }),
      el('th', { 'class': 'num', text: 'Grade shown' }), el('th', { 'class': 'num', text: 'Missing metrics' }))), lv),
      p('muted', 'Per metric: ' + num(th.metric_thin) + ' of ' + num(th.metric_cells) + ' cells are thin, and ' + num(th.metric_narrow) + ' have a 95 % interval narrower than ±' + th.narrow + '.')));
    var list = el('tbody'), unrankedPartial = new Set();
    C.nodes.forEach(function (n) {
      if (!n.cells) return;
      C.ages.forEach(function (a) {
        var cs = (n.cells[a] || []).filter(function (c) {
          if (!c.thin && c.k < c.ke && c.r === undefined) { unrankedPartial.add(c.m); return false; }
          return c.thin || c.k < c.ke;
        });
        if (!cs.length) return;
        // Models resting on the same counts share a line.
        var groups = new Map();
        cs.forEach(function (c) {
          var sig = num(c.n) + ' base scenarios, fewest ' + c.mn + ' per metric' + (c.k < c.ke ? ', ' + c.k + ' of ' + c.ke + ' metrics' : '');
          if (!groups.has(sig)) groups.set(sig, { models: [], w: c.w });
          groups.get(sig).models.push(modelName(c.m));
        });
        var lines = [];
        groups.forEach(function (g, sig) { lines.push(el('li', null, el('span', { text: g.models.join(', ') + ': ' + sig }), g.w ? el('span', { 'class': 'muted small', text: ' — ' + g.w }) : null)); });
        add(list, el('tr', { data: { node: n.id, age: a } },
          el('td', null, el('span', { 'class': 'kind', text: KIND[n.kind] + ' ' }), el('a', { href: link('node', [n.id], { age: a }), text: n.name })),
          el('td', { text: ageName(a) }),
          el('td', null, el('ul', { 'class': 'plain' }, lines))));
      });
    });
    add(main, section('Thin or incomplete cells above the metric level', list.firstChild ? el('table', { 'class': 'thinlist' },
      el('thead', null, el('tr', null, el('th', { text: 'Level' }), el('th', { text: 'Age' }), el('th', { text: 'Models: what the cell rests on' }))), list) : p('muted', 'None: every cell above the metric level rests on enough base scenarios.'),
      unrankedPartial.size ? p('muted small', 'Not listed: ' + Array.from(unrankedPartial).map(modelName).join(', ') + ' — models not ranked at those levels (e.g. label-only models, which have only the nutrition label\'s metrics) — whose cells there average the metrics they have.') : null));
    var cal = el('div', null);
    add(main, section('What judge calibration corrected', cal));
    if (!C.calib) { add(cal, p('muted', 'No benchmark\'s results.json has judge calibration: no conversations were labelled by people (labels.jsonl, then impactbench calibrate). Every score on this site is the judges\' verdicts, uncorrected, and its interval leaves judge error out.')); return null; }
    add(cal, p('muted', 'Loading…'));
    return load('calib').then(function (ch) { clear(cal); calibTables(cal, ch); });
  }
  function calibTables(box, ch) {
    add(box, p('lead', 'From each benchmark\'s results.json: pass rates corrected for the judge\'s errors (Rogan–Gladen, with the judge\'s sensitivity and specificity measured against people\'s labels). The study\'s scores show the judge\'s verdicts and, for these models, the judge-corrected score with its wider interval beside them. ' + C.judge_error + '.'));
    ch.models.forEach(function (cm) {
      var bench = null;
      C.benches.forEach(function (b) { if (b.slug === cm.bench) bench = b; });
      var body = el('tbody');
      if (cm.corrected) add(body, corrRow('Benchmark score', cm.score, cm.corrected, true));
      cm.rates.forEach(function (r) {
        var name = r.track ? (r.key === 'positive' ? 'Behaviours to promote' : 'Behaviours to avoid') : r.metric >= 0 ? C.metrics[r.metric].name : r.key;
        add(body, corrRow(name, r.obs, r.corr, r.track));
      });
      var jb = el('tbody');
      cm.judges.forEach(function (j) {
        add(jb, el('tr', null, el('td', { text: j.judge }), el('td', { 'class': 'muted', text: j.role }), el('td', { text: j.metric }), el('td', { 'class': 'num', text: num(j.n) }),
          el('td', { 'class': 'num', text: statText(j.se) }), el('td', { 'class': 'num', text: statText(j.sp) }), el('td', { 'class': 'num', text: statText(j.kappa) }),
          el('td', { 'class': 'muted small', text: j.warn || '' })));
      });
      add(box, el('div', { 'class': 'calib', data: { bench: cm.bench, model: C.models[cm.model].id } },
        el('h3', { text: (bench ? bench.name : cm.bench) + ' — ' + modelName(cm.model) }),
        p('muted small', num(cm.labels.n_rows) + ' labelled conversations by ' + num(cm.labels.n_labelers) + ' labeller(s)'),
        el('table', { 'class': 'corr' }, el('thead', null, el('tr', null, el('th', { text: 'Rate' }), el('th', { 'class': 'num', text: 'Judge' }), el('th', { 'class': 'num', text: 'Corrected [95 %]' }), el('th', { text: 'Judge used, Se / Sp, labels' }), el('th', { text: 'Note' }))), body),
        cm.judges.length ? el('details', null, el('summary', { text: 'Each judge against the people' }), el('table', { 'class': 'judges' },
          el('thead', null, el('tr', null, el('th', { text: 'Judge' }), el('th', { text: 'Role' }), el('th', { text: 'Metric' }), el('th', { 'class': 'num', text: 'n' }),
            el('th', { 'class': 'num', text: 'Sensitivity' }), el('th', { 'class': 'num', text: 'Specificity' }), el('th', { 'class': 'num', text: 'κ' }), el('th', { text: 'Note' }))), jb)) : null));
    });
  }
  function corrRow(name, obs, c, strong) {
    var v = c.rate === null || c.rate === undefined ? 'not corrected' : f3(c.rate) + ' [' + f3(c.lo) + ', ' + f3(c.hi) + ']';
    return el('tr', { 'class': strong ? 'track' : null }, el('td', { text: name }), el('td', { 'class': 'num', text: f3(obs) }), el('td', { 'class': 'num', text: v }),
      el('td', { 'class': 'muted small', text: (c.judge || '') + (c.se !== undefined ? ' · Se ' + f3(c.se) + ' / Sp ' + f3(c.sp) : '') + (c.n_labels ? ' · ' + c.n_labels + ' labels' : '') }),
      el('td', { 'class': 'muted small', text: c.warn || '' }));
  }
  function statText(s) { return s.est === null || s.est === undefined ? '—' : f3(s.est) + (s.lo !== null && s.lo !== undefined ? ' [' + f3(s.lo) + ', ' + f3(s.hi) + ']' : ''); }

  function notFound(main, msg) { controls([]); add(main, el('h1', { text: 'Not found' }), p('err', msg), p(null, el('a', { href: '#/', text: 'Back to the leaderboard' }))); return null; }

  // ---- rendering -----------------------------------------------------------------------
  var PAGES = { board: pageBoard, node: pageNode, metric: pageMetric, scenario: pageScenario, nutrition: pageNutrition, compare: pageCompare, thin: pageThin };
  var gen = 0;
  function render() {
    var my = ++gen;
    R = parseRoute();
    var page = has(PAGES, R.page) ? R.page : null;
    var main = $('main');
    clear(main);
    document.querySelectorAll('#nav a').forEach(function (a) { a.className = a.dataset.page === (page === 'metric' || page === 'scenario' ? 'node' : page) ? 'on' : ''; });
    var t0 = performance.now();
    var done = function (err) {
      if (my !== gen) return;
      if (err) add(main, el('p', { 'class': 'err', text: 'Could not show this page: ' + err.message }));
      var rendered = performance.now();
      requestAnimationFrame(function () {
        setTimeout(function () {
          if (my !== gen) return;
          window.__siteTimings.push({ route: location.hash || '#/', page: page || 'none', start: t0, rendered: rendered, painted: performance.now() });
          window.__siteReady = location.hash || '#/';
        }, 0);
      });
    };
    var res;
    try {
      res = page ? PAGES[page](main) : notFound(main, 'No page ' + R.page + '.');
    } catch (e) { done(e); return; }
    if (res && typeof res.then === 'function') res.then(function () { done(); }, done); else done();
  }
  if (!C) {
    $('main').textContent = 'The study data (site/data/core.js) did not load.';
    return;
  }
  window.addEventListener('hashchange', render);
  render();
})();
