// Tabula's console: polls the heat report and draws it (the load view), and reads a table's
// entities a page at a time (the data view). Everything shown from the
// server goes through textContent or setAttribute, never through markup, so keys cannot
// become HTML.
'use strict';

(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const POLL_MS = 2000;
  const MIN_RANGE = 4; // narrowest range drawn, in units of a 1000-wide bar (as the SVG file)
  const MAX_EVENTS = 50;

  // URLs are built from the origin and path, never the page URL itself, which may carry
  // credentials (http://user:key@host/…) that fetch refuses.
  function api(path, params) {
    const u = new URL('../api/' + path, location.origin + location.pathname);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    return u.toString();
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  function titled(node, text) {
    const t = svg('title');
    t.textContent = text;
    node.append(t);
    return node;
  }

  const nf = new Intl.NumberFormat('en-US');
  const int = (n) => nf.format(n);
  const rate = (v) => nf.format(Math.round(v * 10) / 10) + '/s';
  // count says how many of a thing: "1 range partition", "2 range partitions".
  const count = (n, one, many) => int(n) + ' ' + (n === 1 ? one : (many || one + 's'));
  function bytes(b) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i === 0 ? b : b.toFixed(1)) + ' ' + units[i];
  }
  // Keys are shown quoted, as JSON strings: blanks, quotes and control characters show.
  const quote = (k) => JSON.stringify(k);
  const low = (r) => (r.low === '' ? '(start)' : quote(r.low));
  const high = (r) => (r.high === '' ? '(end)' : quote(r.high));

  // heatColor mirrors partition.HeatColor, for the legend's swatches.
  function heatColor(ratio) {
    if (!(ratio > 0)) return '#e8eef2';
    const stops = [[0, 0xc8, 0xe6, 0xc9], [0.5, 0xfd, 0xd8, 0x35], [1, 0xe5, 0x39, 0x35]];
    ratio = Math.min(ratio, 1);
    for (let i = 1; i < stops.length; i++) {
      const a = stops[i - 1], b = stops[i];
      if (ratio <= b[0]) {
        const f = (ratio - a[0]) / (b[0] - a[0]);
        const mix = (j) => Math.round(a[j] + (b[j] - a[j]) * f);
        return 'rgb(' + mix(1) + ',' + mix(2) + ',' + mix(3) + ')';
      }
    }
    return '#e53935';
  }

  const $ = (id) => document.getElementById(id);
  let previous = null; // the last report's range lows, by table
  const events = [];

  function setStatus(text, bad) {
    const s = $('status');
    s.textContent = text;
    s.classList.toggle('error', !!bad);
  }

  function summary(rep) {
    const dl = $('summary');
    const item = (label, value, id, alert) => {
      const dd = el('dd', { id: id }, value);
      if (alert) dd.className = 'alert';
      return el('div', {}, el('dt', {}, label), dd);
    };
    dl.replaceChildren(
      item('limits', rep.mode, 'mode'),
      item('per PartitionKey', rate(rep.partitionRate), 'partition-rate'),
      item('per account', rate(rep.accountRate), 'account-rate'),
      item('tables', int(rep.tables.length), 'table-count'),
      item('entities', int(rep.entities), 'entities'),
      item('stored', bytes(rep.bytes), 'bytes'),
      item('offered now', rate(rep.rate), 'rate'),
      item('throttled, PartitionKey limits', int(rep.throttledPartition), 'throttled-partition', rep.throttledPartition > 0),
      item('throttled, account limit', int(rep.throttledAccount), 'throttled-account', rep.throttledAccount > 0),
    );
  }

  // bars draws a series (or two, stacked) as an SVG bar chart scaled to its peak.
  function bars(series, stacked, cls, label) {
    const n = series.length;
    let peak = 0;
    for (let i = 0; i < n; i++) peak = Math.max(peak, series[i] + (stacked ? stacked[i] : 0));
    const s = svg('svg', { viewBox: '0 0 ' + n + ' 100', preserveAspectRatio: 'none', 'data-peak': peak });
    for (let i = 0; i < n; i++) {
      const a = series[i], b = stacked ? stacked[i] : 0;
      if (a + b === 0) continue;
      const ha = 100 * a / peak, hb = 100 * b / peak;
      const g = titled(svg('g'), label(i, a, b));
      g.append(svg('rect', { x: i + 0.1, y: 100 - ha, width: 0.8, height: ha, class: 'bar ' + cls }));
      if (b > 0) g.append(svg('rect', { x: i + 0.1, y: 100 - ha - hb, width: 0.8, height: hb, class: 'bar account' }));
      s.append(g);
    }
    return s;
  }

  function ago(rep, i, n) {
    const secs = (n - 1 - i) * rep.historyIntervalSeconds;
    return secs === 0 ? 'now' : secs + ' s ago';
  }

  function accountChart(rep) {
    const p = rep.throttledPartitionHistory, a = rep.throttledAccountHistory;
    $('interval').textContent = rep.historyIntervalSeconds;
    $('span').textContent = Math.round(p.length * rep.historyIntervalSeconds / 60);
    const chart = bars(p, a, 'partition', (i, x, y) => ago(rep, i, p.length) + ': ' + int(x) + ' by PartitionKey limits, ' + int(y) + ' by the account limit');
    const box = $('account-throttling');
    box.replaceChildren(chart);
    const total = p.concat(a).reduce((s, v) => s + v, 0);
    box.setAttribute('data-total', total);
  }

  // rangeWidths shares a 1000-wide bar among ranges by entities, as partition.WriteSVG does.
  function rangeWidths(ranges) {
    const total = ranges.reduce((s, r) => s + Math.max(r.entities, 0), 0);
    const free = Math.max(1000 - ranges.length * MIN_RANGE, 0);
    return ranges.map((r) => MIN_RANGE + free * (total > 0 ? Math.max(r.entities, 0) / total : 1 / ranges.length));
  }

  function rangeTitle(r) {
    return '[' + low(r) + ', ' + high(r) + '): ' + int(r.entities) + ' entities, ' + bytes(r.bytes) + ', ' +
      rate(r.rate) + ', ' + int(r.throttled) + ' throttled, ' + r.splits + ' splits' + (r.offline ? ', offline' : '');
  }

  function tags(r) {
    const td = el('td', { class: 'state' });
    if (r.hot) td.append(el('span', { class: 'tag hot' }, 'hot'), ' ');
    if (r.throttled > 0) td.append(el('span', { class: 'tag throttled' }, 'throttled'), ' ');
    if (r.offline) td.append(el('span', { class: 'tag offline' }, 'offline'));
    return td;
  }

  function tableCard(rep, t, fresh) {
    const card = el('section', { class: 'card table', 'data-table': t.name });
    card.append(el('div', { class: 'table-head' },
      el('h2', {}, 'table ', t.name),
      el('p', { class: 'note' }, count(t.ranges.length, 'range partition') + ' · ' + count(t.entities, 'entity', 'entities') + ' · ' +
        bytes(t.bytes) + ' · ' + rate(t.rate) + ' · ' + int(t.throttled) + ' throttled · ' + count(t.splits, 'split') + ' · ' + count(t.merges, 'merge'))));

    const heat = svg('svg', { viewBox: '0 0 1000 100', preserveAspectRatio: 'none', class: 'heatbar' });
    const widths = rangeWidths(t.ranges);
    let x = 0;
    t.ranges.forEach((r, i) => {
      let cls = 'range';
      if (r.hot) cls += ' hot';
      if (r.throttled > 0) cls += ' throttled';
      if (r.offline) cls += ' offline';
      if (fresh.has(r.low)) cls += ' fresh';
      const rect = svg('rect', { x: x, y: 0, width: widths[i], height: 100, fill: r.color, class: cls });
      rect.setAttribute('data-low', r.low);
      rect.setAttribute('data-high', r.high);
      const g = titled(svg('g'), rangeTitle(r));
      g.append(rect);
      heat.append(g);
      x += widths[i];
    });
    card.append(el('div', { class: 'heat' }, heat), el('div', { class: 'bounds' }, el('span', {}, 'first PartitionKey'), el('span', {}, 'last')));

    const rows = el('tbody');
    t.ranges.forEach((r, i) => {
      const sw = el('span', { class: 'swatch' });
      sw.style.background = r.color;
      const spark = el('span', { class: 'spark' }, bars(r.throttledHistory, null, '', (j, n) => ago(rep, j, r.throttledHistory.length) + ': ' + int(n) + ' throttled'));
      rows.append(el('tr', { class: r.hot ? 'range-row hot' : 'range-row' },
        el('td', {}, i), el('td', { class: 'key' }, low(r)), el('td', { class: 'key' }, high(r)),
        el('td', {}, int(r.entities)), el('td', {}, bytes(r.bytes)), el('td', {}, sw, ' ', rate(r.rate)),
        el('td', {}, int(r.offered)), el('td', {}, int(r.throttled)), el('td', {}, spark), el('td', {}, r.splits), tags(r)));
    });
    card.append(el('table', { class: 'grid ranges' },
      el('thead', {}, el('tr', {}, el('th', {}, '#'), el('th', { class: 'key' }, 'low (incl.)'), el('th', { class: 'key' }, 'high (excl.)'),
        el('th', {}, 'entities'), el('th', {}, 'bytes'), el('th', {}, 'entities/s'), el('th', {}, 'offered'), el('th', {}, 'throttled'),
        el('th', {}, 'throttled, last ' + Math.round(r0len(t) * rep.historyIntervalSeconds / 60) + ' min'), el('th', {}, 'splits'), el('th', {}, ''))),
      rows));

    card.append(el('h3', {}, 'Hottest PartitionKeys'));
    if (t.hotKeys.length === 0) {
      card.append(el('p', { class: 'note empty' }, rep.mode === 'off' ? 'Not tracked with limits off.' : 'None at half their limit or throttled.'));
    } else {
      const kb = el('tbody');
      for (const k of t.hotKeys) {
        kb.append(el('tr', { class: k.hot ? 'hot-key hot' : 'hot-key' }, el('td', { class: 'key' }, quote(k.partitionKey)),
          el('td', {}, rate(k.rate)), el('td', {}, int(k.offered)), el('td', {}, int(k.throttled))));
      }
      card.append(el('table', { class: 'grid hot-keys' },
        el('thead', {}, el('tr', {}, el('th', { class: 'key' }, 'PartitionKey'), el('th', {}, 'entities/s'), el('th', {}, 'offered'), el('th', {}, 'throttled'))), kb));
    }
    return card;
  }

  function r0len(t) { return t.ranges.length ? t.ranges[0].throttledHistory.length : 0; }

  // track compares the range boundaries with the last report's and logs splits and merges.
  function track(rep) {
    const now = new Map();
    const fresh = new Map();
    const stamp = new Date(rep.at).toISOString().slice(11, 19);
    for (const t of rep.tables) {
      const lows = new Set(t.ranges.map((r) => r.low));
      now.set(t.name, lows);
      const f = new Set();
      const before = previous && previous.get(t.name);
      if (before) {
        for (const l of lows) if (!before.has(l)) { f.add(l); events.unshift(stamp + '  ' + t.name + ': split at ' + quote(l)); }
        for (const l of before) if (!lows.has(l)) events.unshift(stamp + '  ' + t.name + ': merged away the boundary at ' + quote(l));
      }
      fresh.set(t.name, f);
    }
    events.splice(MAX_EVENTS);
    previous = now;
    const log = $('event-log');
    if (events.length === 0) log.replaceChildren(el('li', { class: 'empty' }, 'none yet'));
    else log.replaceChildren(...events.map((e) => el('li', {}, e)));
    return fresh;
  }

  // busiestFirst orders tables by the load they take (entities/s, then throttling, then
  // size), so that the one that matters is on top; ties by name, so the order holds still.
  function busiestFirst(tables) {
    return [...tables].sort((a, b) => (b.rate - a.rate) || (b.throttled - a.throttled) || (b.entities - a.entities) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  function render(rep) {
    summary(rep);
    accountChart(rep);
    const fresh = track(rep);
    const tables = busiestFirst(rep.tables);
    $('tables').replaceChildren(...tables.map((t) => tableCard(rep, t, fresh.get(t.name) || new Set())));
    $('table-names').replaceChildren(...tables.map((t) => el('option', { value: t.name })));
    const tbl = $('explain-table');
    if (tbl.value === '' && tables.length > 0) tbl.value = tables[0].name;
    const dt = $('data-table');
    if (dt.value === '' && tables.length > 0) dt.value = tables[0].name;
    showFirstRows();
  }

  // showFirstRows runs the data view's query once, as soon as the view is open and a table
  // is known, so that it opens on rows rather than on an empty page.
  function showFirstRows() {
    if (data.ran || $('data-view').hidden || $('data-table').value === '') return;
    runData(null);
  }

  async function poll() {
    try {
      // The header keeps these polls out of the server's request log (see RequestLog).
      const res = await fetch(api('report'), { cache: 'no-store', credentials: 'same-origin', headers: { 'X-Tabula-Console-Poll': '1' } });
      if (!res.ok) throw new Error('the report answered HTTP ' + res.status);
      const rep = await res.json();
      render(rep);
      document.body.setAttribute('data-updated', rep.at);
      setStatus('live · report at ' + new Date(rep.at).toISOString().slice(11, 19) + ' UTC · every ' + POLL_MS / 1000 + ' s', false);
    } catch (e) {
      setStatus('not updating: ' + e.message, true);
    }
    setTimeout(poll, POLL_MS);
  }

  // explainView draws an api/explain answer; ids are prefixed so that two views can show one.
  function explainView(body, prefix) {
    const dd = (id, v, cls) => el('dd', cls ? { id: prefix + id, class: cls } : { id: prefix + id }, v);
    const ratio = body.returned > 0 ? body.ratio.toFixed(1) + ' examined per returned' : (body.scanned > 0 ? 'none returned' : '—');
    const dl = el('dl', {},
      el('div', {}, el('dt', {}, 'Tabula runs it as'), dd('plan-kind', body.plan, 'plan ' + body.plan)),
      el('div', {}, el('dt', {}, 'the service would run'), dd('plan-service', body.service, 'plan ' + body.service)),
      el('div', {}, el('dt', {}, 'first page: examined ÷ returned'), dd('plan-ratio', int(body.scanned) + ' ÷ ' + int(body.returned))),
      el('div', {}, el('dt', {}, 'density'), dd('plan-density', ratio)),
      el('div', {}, el('dt', {}, 'more pages'), dd('plan-more', body.more ? 'yes' : 'no')));
    const nodes = [dl, el('p', { class: 'detail', id: prefix + 'plan-detail' }, body.detail)];
    if (body.runError) nodes.push(el('p', { class: 'error', id: prefix + 'explain-run-error' }, 'The page did not run: ' + body.runError));
    return nodes;
  }

  async function getJSON(path, params) {
    const res = await fetch(api(path, params), { cache: 'no-store', credentials: 'same-origin' });
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || ('HTTP ' + res.status));
    return body;
  }

  async function explain(ev) {
    ev.preventDefault();
    const out = $('explain-result');
    out.replaceChildren(el('p', { class: 'note' }, 'running…'));
    try {
      out.replaceChildren(...explainView(await getJSON('explain', { table: $('explain-table').value, filter: $('explain-filter').value }), ''));
    } catch (e) {
      out.replaceChildren(el('p', { class: 'error', id: 'explain-error' }, e.message));
    }
  }

  // The data view: a table's entities a page at a time, each property with its EDM type, the
  // query's plan, and the download of every matching entity as an interchange file.
  const data = { table: '', filter: '', top: 50, starts: [{}], page: 0, seq: 0, ran: false };

  // entityGrid draws a page as a table, a column per property name. A column whose values
  // share one EDM type names it in its header; in a column of mixed types each value is
  // tagged with its own. Every cell carries its type in data-type and its tooltip.
  function entityGrid(entities) {
    const types = new Map(); // name → the one type of its values, or '' when mixed
    for (const e of entities) {
      for (const p of e.properties) {
        const t = types.get(p.name);
        types.set(p.name, t === undefined || t === p.type ? p.type : '');
      }
    }
    const names = [...types.keys()].sort();
    const short = (type) => type.replace('Edm.', '');
    const head = el('tr', {}, el('th', { class: 'key' }, 'PartitionKey'), el('th', { class: 'key' }, 'RowKey'), el('th', { class: 'key' }, 'Timestamp'));
    for (const n of names) {
      const t = types.get(n);
      const th = el('th', { class: 'key prop', 'data-name': n, 'data-type': t || 'mixed' }, el('span', { class: 'name' }, n));
      th.append(' ', t ? el('span', { class: 'type', 'data-type': t }, short(t)) : el('span', { class: 'type mixed' }, 'mixed'));
      head.append(th);
    }
    const rows = el('tbody');
    for (const e of entities) {
      const byName = new Map(e.properties.map((p) => [p.name, p]));
      const tr = el('tr', { class: 'entity' },
        el('td', { class: 'key pk', title: e.partitionKey }, quote(e.partitionKey)),
        el('td', { class: 'key rk', title: e.rowKey }, quote(e.rowKey)),
        el('td', { class: 'key ts', title: e.etag }, e.timestamp));
      for (const n of names) {
        const p = byName.get(n);
        if (!p) { tr.append(el('td', { class: 'val absent' })); continue; }
        const td = el('td', { class: 'val', 'data-name': n, 'data-type': p.type, title: p.type + ' ' + p.value });
        if (!types.get(n)) td.append(el('span', { class: 'type', 'data-type': p.type }, short(p.type)), ' ');
        td.append(el('span', { class: 'v' }, p.value));
        tr.append(td);
      }
      rows.append(tr);
    }
    return el('table', { class: 'grid data', id: 'data-grid' }, el('thead', {}, head), rows);
  }

  async function loadPage() {
    const seq = ++data.seq;
    const out = $('data-result');
    $('data-prev').disabled = true;
    $('data-next').disabled = true;
    out.setAttribute('aria-busy', 'true');
    try {
      const body = await getJSON('data', Object.assign({ table: data.table, filter: data.filter, top: data.top }, data.starts[data.page]));
      if (seq !== data.seq) return;
      data.starts.length = data.page + 1;
      if (body.next) data.starts.push(body.next);
      const first = data.page * data.top + 1;
      $('data-page').textContent = body.entities.length === 0 ? 'page ' + (data.page + 1) + ' · no entities' :
        'page ' + (data.page + 1) + ' · entities ' + int(first) + '–' + int(first + body.entities.length - 1) + (body.next ? '' : ' (last page)');
      out.replaceChildren(body.entities.length === 0 ? el('p', { class: 'note empty' }, 'No entities on this page.') : entityGrid(body.entities));
      out.setAttribute('data-page', data.page + 1);
      $('data-prev').disabled = data.page === 0;
      $('data-next').disabled = !body.next;
    } catch (e) {
      if (seq !== data.seq) return;
      $('data-page').textContent = '';
      out.replaceChildren(el('p', { class: 'error', id: 'data-error' }, e.message));
      if (data.page === 0) $('data-download').hidden = true; // nothing to download: no such table, or a bad filter
      out.setAttribute('data-page', 'error');
    }
    out.removeAttribute('aria-busy');
  }

  async function runData(ev) {
    if (ev) ev.preventDefault();
    data.ran = true;
    data.table = $('data-table').value;
    data.filter = $('data-filter').value;
    data.top = Math.min(Math.max(parseInt($('data-top').value, 10) || 50, 1), 1000);
    data.starts = [{}];
    data.page = 0;
    const dl = $('data-download');
    dl.href = api('data/export', data.filter ? { table: data.table, filter: data.filter } : { table: data.table });
    dl.setAttribute('download', data.table.replace(/[^A-Za-z0-9]/g, '_') + '.jsonl');
    dl.hidden = false;
    const ex = $('data-explain');
    ex.replaceChildren(el('p', { class: 'note' }, 'planning…'));
    // A bad filter or a missing table fails the page too, which says so: the plan's box is
    // left empty rather than saying it a second time.
    getJSON('explain', { table: data.table, filter: data.filter })
      .then((body) => ex.replaceChildren(...explainView(body, 'data-')))
      .catch(() => ex.replaceChildren());
    await loadPage();
  }

  function showView() {
    const isData = location.hash === '#data';
    $('load-view').hidden = isData;
    $('data-view').hidden = !isData;
    $('tab-load').classList.toggle('active', !isData);
    $('tab-data').classList.toggle('active', isData);
    showFirstRows();
  }

  for (const s of document.querySelectorAll('.heat-legend .swatch')) s.style.background = heatColor(Number(s.getAttribute('data-ratio')));
  $('explain-form').addEventListener('submit', explain);
  $('data-form').addEventListener('submit', runData);
  $('data-prev').addEventListener('click', () => { if (data.page > 0) { data.page--; loadPage(); } });
  $('data-next').addEventListener('click', () => { if (data.starts.length > data.page + 1) { data.page++; loadPage(); } });
  window.addEventListener('hashchange', showView);
  showView();
  poll();
})();
