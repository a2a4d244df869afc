// The report page's script (railyard report, studies/README.md "Report page"): builds the tables and charts from the
// JSON the page carries (<script id="railyard-data">). Tables show each cell's text as the folder's file has it; every
// table names its source file (data-source), every row its index in that file (data-row) and every cell its column
// (data-col), so a test can compare the page with the files. Charts are Apache ECharts, inlined before this script.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('railyard-data').textContent);
  const page = document.getElementById('page');
  const MAX_ROWS = 2000; // rows a table shows; the charts use every row
  const charts = [];
  const state = { kind: data.kind, charts: [], tables: [], ready: false };
  window.railyardReport = state;

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of [].concat(children === undefined ? [] : children)) {
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function section(title, intro) {
    const s = el('section', {}, [el('h2', {}, title)]);
    if (intro) s.appendChild(el('p', { class: 'intro' }, intro));
    page.appendChild(s);
    return s;
  }

  function note(parent, text) {
    parent.appendChild(el('p', { class: 'note' }, text));
  }

  const num = (s) => (s === '' || s === null || s === undefined ? NaN : Number(s));
  const isNumeric = (s) => s !== '' && Number.isFinite(Number(s));

  // A table of a CSV's rows: `columns` (names, default all) of the rows `rows` (indexes, default all).
  function csvTable(parent, id, table, opts) {
    opts = opts || {};
    const columns = opts.columns || table.header;
    const indexes = opts.rows || table.rows.map((_, i) => i);
    const cols = columns.map((c) => table.header.indexOf(c));
    const head = el('tr', {}, columns.map((c) => el('th', { 'data-col': c }, c)));
    const body = el('tbody');
    for (const i of indexes.slice(0, MAX_ROWS)) {
      const row = table.rows[i];
      const cls = opts.rowClass ? opts.rowClass(row) : undefined;
      body.appendChild(el('tr', { 'data-row': String(i), class: cls },
        cols.map((c, k) => el('td', { 'data-col': columns[k], class: isNumeric(row[c]) ? 'num' : undefined },
          row[c]))));
    }
    const t = el('table', { id, 'data-source': table.file }, [el('thead', {}, head), body]);
    parent.appendChild(el('div', { class: 'scroll' }, t));
    if (indexes.length > MAX_ROWS) {
      note(parent, `The first ${MAX_ROWS} of ${indexes.length} rows; ${table.file} has them all.`);
    }
    state.tables.push(id);
    return t;
  }

  // A table of (what, summary.json key, value) rows.
  function keyTable(parent, id, rows, extraHeader) {
    const header = ['', 'summary.json key', 'value'].concat(extraHeader || []);
    const body = el('tbody', {}, rows.map((r) => el('tr', { 'data-key': r[1] }, [
      el('th', {}, r[0]), el('td', { class: 'key' }, r[1]),
      el('td', { 'data-col': 'value', class: isNumeric(r[2]) ? 'num' : undefined }, r[2]),
    ].concat(r.slice(3).map((v, k) => el('td', { 'data-col': extraHeader[k], class: 'num' }, v))))));
    const t = el('table', { id, 'data-source': 'summary.json' },
      [el('thead', {}, el('tr', {}, header.map((h) => el('th', {}, h)))), body]);
    parent.appendChild(el('div', { class: 'scroll' }, t));
    state.tables.push(id);
  }

  // A table of a list in summary.json (`key`): one row per element, its fields as columns.
  function jsonRows(parent, id, spec) {
    const body = el('tbody', {}, spec.rows.map((r, i) => el('tr', { 'data-row': String(i) },
      r.map((v, k) => el('td', { 'data-col': spec.header[k], class: isNumeric(v) ? 'num' : undefined }, v)))));
    parent.appendChild(el('div', { class: 'scroll' }, el('table', { id, 'data-source': spec.file,
      'data-key': spec.key }, [el('thead', {}, el('tr', {}, spec.header.map((c) => el('th', { 'data-col': c }, c)))),
      body])));
    state.tables.push(id);
  }

  function chart(parent, id, option, height) {
    const div = el('div', { class: 'chart', id, style: `height: ${height || 380}px` });
    parent.appendChild(div);
    const c = echarts.init(div, null, { renderer: 'canvas' });
    c.setOption(Object.assign({ animation: false, tooltip: { trigger: 'item', confine: true } }, option));
    charts.push(c);
    state.charts.push(id);
    return c;
  }
  window.addEventListener('resize', () => charts.forEach((c) => c.resize()));

  const valueAxis = (name, extra) => Object.assign({ type: 'value', name, nameLocation: 'middle', nameGap: 50,
    scale: false }, extra || {});
  const categoryAxis = (name, values, extra) => Object.assign({ type: 'category', name, nameLocation: 'middle',
    nameGap: 30, data: values }, extra || {});
  const legend = { type: 'scroll', top: 0 };

  function facts() {
    if (!data.facts || !data.facts.length) return;
    const s = section('Run', `Folder ${data.folder}.`);
    keyTable(s, 'facts', data.facts);
  }

  function keyNumbers(title) {
    if (!data.key_numbers || !data.key_numbers.length) return;
    const s = section(title, 'As summary.json has them.');
    keyTable(s, 'key-numbers', data.key_numbers);
  }

  // The network: the hottest links (summary.json) and link utilisation over time (links.csv).
  function network() {
    if (data.hottest_links) {
      const h = data.hottest_links;
      const s = section('Hottest links', 'The most used network links (NIC ports and switch links) over the span ' +
        'from the first transfer to the last: summary.json network.hottest_links.');
      jsonRows(s, 'hottest-links', h);
      const u = h.header.indexOf('utilisation');
      if (u >= 0) {
        const names = h.rows.map((r) => r[0]).reverse();
        chart(s, 'chart-hottest-links', {
          grid: { left: 160, right: 30, top: 20, bottom: 50 },
          xAxis: valueAxis('utilisation over the span'),
          yAxis: { type: 'category', data: names },
          series: [{ type: 'bar', name: 'utilisation', data: h.rows.map((r) => num(r[u])).reverse() }],
        }, Math.max(200, 26 * names.length + 80));
      }
    }
    if (data.heatmap) {
      const m = data.heatmap;
      const s = section('Link utilisation over time', m.note ? undefined :
        `links.csv: the ${m.links.length} most used of ${m.network_links} network links, one column per ` +
        `${(m.interval_s * 1e6).toPrecision(4)} us` + (m.binned_intervals > 1 ?
          ` (${m.binned_intervals} sampling intervals averaged)` : '') + '; idle intervals are 0.');
      if (m.note) {
        note(s, m.note);
      } else {
        let max = 0;
        for (const v of m.values) max = Math.max(max, v[2]);
        chart(s, 'chart-heatmap', {
          tooltip: { position: 'top', confine: true },
          grid: { left: 160, right: 30, top: 20, bottom: 110 },
          xAxis: categoryAxis('time (ms)', m.times_s.map((t) => (t * 1e3).toPrecision(4)), { splitArea: { show: true } }),
          yAxis: { type: 'category', data: m.links, inverse: true, splitArea: { show: true } }, // most used on top
          visualMap: { min: 0, max: Math.max(1, max), calculable: true, orient: 'horizontal', left: 'center',
            bottom: 0, inRange: { color: ['#f7fbff', '#6baed6', '#08306b'] } },
          series: [{ type: 'heatmap', name: 'utilisation', data: m.values }],
        }, Math.max(260, 18 * m.links.length + 140));
      }
    }
  }

  function run() {
    facts();
    keyNumbers('Step');
    const b = data.breakdown || [];
    if (b.length) {
      const s = section('Step breakdown', 'Mean over ranks (summary.json breakdown_mean_over_ranks): compute, ' +
        'communication not hidden behind compute by parallelism, pipeline bubble and idle time.');
      keyTable(s, 'breakdown-mean', b.map((r) => [r[0], r[1], r[2], r[3]]), ['fraction_of_step']);
      chart(s, 'chart-breakdown', {
        grid: { left: 140, right: 30, top: 20, bottom: 50 },
        xAxis: valueAxis('seconds per step'),
        yAxis: { type: 'category', data: b.map((r) => r[0]).reverse() },
        series: [{ type: 'bar', name: 'seconds', data: b.map((r) => num(r[2])).reverse() }],
      }, Math.max(220, 30 * b.length + 80));
    }
    const t = data.tables['breakdown.csv'];
    if (t) {
      const s = section('Per rank', 'breakdown.csv: each rank\'s step, stacked: compute, exposed communication, ' +
        'bubble and idle (seconds).');
      const parts = t.header.filter((h) => h === 'compute_s' || h.startsWith('exposed_') || h === 'bubble_s' ||
        h === 'idle_s');
      const ranks = t.rows.map((r) => r[t.header.indexOf('rank')]);
      const bars = ranks.length <= 512;
      chart(s, 'chart-breakdown-ranks', {
        legend,
        tooltip: { trigger: 'axis', confine: true },
        grid: { left: 80, right: 30, top: 40, bottom: 50 },
        xAxis: categoryAxis('rank', ranks),
        yAxis: valueAxis('seconds'),
        series: parts.map((p) => {
          const c = t.header.indexOf(p);
          const values = t.rows.map((r) => num(r[c]));
          return bars ? { type: 'bar', stack: 'step', name: p, data: values }
            : { type: 'line', stack: 'step', name: p, areaStyle: {}, showSymbol: false, data: values };
        }),
      });
      csvTable(s, 'table-breakdown', t);
    }
    const tl = data.timeline;
    if (tl) {
      const s = section('Timeline', tl.note ? undefined : `trace.json: per stream of the ${tl.traced_ranks} traced ` +
        'ranks, the time it is busy (the union of its events), averaged over the ranks that have it.');
      if (tl.note) {
        note(s, tl.note);
      } else {
        const body = el('tbody', {}, tl.rows.map((r, i) => el('tr', { 'data-row': String(i) },
          r.map((v, k) => el('td', { 'data-col': tl.header[k], class: k ? 'num' : undefined }, v)))));
        s.appendChild(el('div', { class: 'scroll' }, el('table', { id: 'timeline', 'data-source': 'trace.json' },
          [el('thead', {}, el('tr', {}, tl.header.map((c) => el('th', { 'data-col': c }, c)))), body])));
        state.tables.push('timeline');
        const busy = tl.header.indexOf('busy_s_mean_over_ranks');
        chart(s, 'chart-timeline', {
          grid: { left: 140, right: 30, top: 20, bottom: 50 },
          xAxis: valueAxis('busy seconds per step (mean over ranks)'),
          yAxis: { type: 'category', data: tl.rows.map((r) => r[0]).reverse() },
          series: [{ type: 'bar', name: 'busy (s)', data: tl.rows.map((r) => num(r[busy])).reverse() }],
        }, Math.max(220, 30 * tl.rows.length + 80));
      }
    }
    if (data.jobs) {
      const s = section('Jobs', 'summary.json jobs: each job\'s step beside the cluster and alone on it.');
      jsonRows(s, 'jobs', data.jobs);
    }
    if (data.tables['congestion.csv']) {
      const s = section('Congestion', 'congestion.csv: per group and collective, its time against the same calls ' +
        'alone on the fabric.');
      csvTable(s, 'table-congestion', data.tables['congestion.csv']);
    }
    network();
  }

  function collectives() {
    facts();
    keyNumbers('Totals');
    const t = data.tables['collectives.csv'];
    const s = section('Collectives', 'collectives.csv: each call\'s time, algorithm bandwidth and bus bandwidth ' +
      '(as nccl-tests computes them).');
    const c = (name) => t.header.indexOf(name);
    const groups = new Map();
    t.rows.forEach((r) => {
      const label = r[c('label')] ? `${r[c('op')]} (${r[c('label')]})` : r[c('op')];
      if (!groups.has(label)) groups.set(label, []);
      groups.get(label).push([num(r[c('size_bytes')]), num(r[c('busbw_GBps')])]);
    });
    chart(s, 'chart-busbw', {
      legend,
      grid: { left: 80, right: 30, top: 40, bottom: 60 },
      xAxis: valueAxis('size (bytes)', { type: 'log', logBase: 2 }),
      yAxis: valueAxis('bus bandwidth (GB/s)'),
      series: [...groups].map(([name, points]) => ({ type: 'line', name, symbolSize: 8,
        data: points.sort((a, b) => a[0] - b[0]) })),
    });
    csvTable(s, 'table-collectives', t);
    network();
  }

  // The Pareto front of step time against GPUs: the points no other point beats on both (fewer or as many GPUs and
  // a shorter or equal step, one of them strictly).
  function paretoChart(parent, id, points, front) {
    chart(parent, id, {
      legend,
      grid: { left: 80, right: 30, top: 40, bottom: 60 },
      xAxis: valueAxis('GPUs', { scale: true }),
      yAxis: valueAxis('step time (s)', { scale: true }),
      tooltip: { trigger: 'item', confine: true, formatter: (p) => `${p.data[2]}<br>${p.data[0]} GPUs, ${p.data[1]} s` },
      series: [
        { type: 'scatter', name: 'points', symbolSize: 8, data: points },
        { type: 'line', name: 'Pareto front', symbolSize: 12, data: front.slice().sort((a, b) => a[0] - b[0]) },
      ],
    });
  }

  function sweep() {
    const t = data.tables['results.csv'];
    const c = (name) => t.header.indexOf(name);
    const status = c('status');
    const ok = t.rows.map((_, i) => i).filter((i) => t.rows[i][status] === 'ok');
    const bad = t.rows.map((_, i) => i).filter((i) => t.rows[i][status] !== 'ok');
    const s = section('Results', `results.csv: ${t.rows.length} points, ${ok.length} ok, ${bad.length} failed, ` +
      'invalid or skipped (highlighted, with their error).');
    csvTable(s, 'table-results', t, { rowClass: (r) => (r[status] === 'ok' ? undefined : 'bad') });
    if (bad.length) {
      const f = section('Points that did not finish', 'Their status and error, as results.csv has them.');
      csvTable(f, 'table-failed', t, { rows: bad, columns: ['point', 'status', 'error', 'folder'].filter((x) => c(x) >= 0) });
    }
    const axes = data.axes;
    const metrics = t.header.filter((h, k) => k > status && h.indexOf('.') < 0 && !['error', 'folder'].includes(h) &&
      ok.length && ok.every((i) => isNumeric(t.rows[i][k]) || t.rows[i][k] === ''));
    const preferred = ['step_time_s', 'simulated_time_s', 'c0_busbw_GBps'].find((m) => metrics.includes(m));
    const a = section('Metric against each axis', 'One chart per axis of the sweep, one line per combination of ' +
      'the other axes, points that finished only' + (data.axes_note ? ` (${data.axes_note}: every dotted column ` +
        'is taken as an axis)' : '') + '.');
    if (!metrics.length || !ok.length) {
      note(a, 'No point finished with a numeric metric.');
    } else {
      const select = el('select', { id: 'metric' }, metrics.map((m) => el('option', { value: m }, m)));
      select.value = preferred || metrics[0];
      a.appendChild(el('label', {}, ['metric ', select]));
      const holder = el('div');
      a.appendChild(holder);
      const dims = axes.dimensions.filter((keys) => new Set(ok.map((i) => keys.map((k) => t.rows[i][c(k)])
        .join(' / '))).size > 1);
      const drawn = [];
      const draw = () => {
        const y = c(select.value);
        dims.forEach((keys, d) => {
          const value = (i, ks) => ks.map((k) => t.rows[i][c(k)]).join(' / ');
          const others = dims.filter((_, e) => e !== d);
          const xs = [];
          ok.forEach((i) => { if (!xs.includes(value(i, keys))) xs.push(value(i, keys)); });
          if (xs.every((x) => isNumeric(x))) xs.sort((p, q) => Number(p) - Number(q));
          const lines = new Map();
          ok.forEach((i) => {
            const name = others.map((ks) => `${ks.map((k) => k.split('.').pop()).join('/')}=${value(i, ks)}`)
              .join(', ') || select.value;
            if (!lines.has(name)) lines.set(name, new Array(xs.length).fill(null));
            lines.get(name)[xs.indexOf(value(i, keys))] = num(t.rows[i][y]);
          });
          const option = {
            title: { text: `${select.value} against ${keys.join(' / ')}`, left: 'center', top: 0,
              textStyle: { fontSize: 13 } },
            legend: Object.assign({}, legend, { top: 22 }),
            tooltip: { trigger: 'axis', confine: true },
            grid: { left: 80, right: 30, top: 70, bottom: 60 },
            xAxis: categoryAxis(keys.join(' / '), xs),
            yAxis: valueAxis(select.value, { scale: true }),
            series: [...lines].map(([name, values]) => ({ type: 'line', name, symbolSize: 8, connectNulls: true,
              data: values })),
          };
          if (drawn[d]) {
            drawn[d].setOption(option, true);
          } else {
            drawn[d] = chart(holder, `chart-axis-${d}`, option);
          }
        });
      };
      select.addEventListener('change', draw);
      if (!dims.length) note(a, 'No axis takes more than one value among the points that finished.');
      draw();
    }
    if (c('gpus') >= 0 && c('step_time_s') >= 0) {
      const p = section('Pareto front', 'Step time against GPUs: the points no other point beats on both.');
      const pts = ok.filter((i) => isNumeric(t.rows[i][c('gpus')]) && isNumeric(t.rows[i][c('step_time_s')]))
        .map((i) => [num(t.rows[i][c('gpus')]), num(t.rows[i][c('step_time_s')]), `point ${t.rows[i][c('point')]}`]);
      const front = pts.filter((q) => !pts.some((o) => o[0] <= q[0] && o[1] <= q[1] && (o[0] < q[0] || o[1] < q[1])));
      paretoChart(p, 'chart-pareto', pts, front);
    }
  }

  function search() {
    const t = data.tables['search.csv'];
    const c = (name) => t.header.indexOf(name);
    const status = c('status');
    const keys = data.layout_keys;
    const where = (st) => t.rows.map((_, i) => i).filter((i) => t.rows[i][status] === st);
    const ranked = where('ok');
    const label = (i) => keys.map((k) => `${k}=${t.rows[i][c(k)]}`).join(' ');
    const s = section('Ranked layouts', `search.csv: ${ranked.length} layouts simulated, fastest first.`);
    csvTable(s, 'table-ranked', t, { rows: ranked, columns: t.header.filter((h) => h !== 'reason') });
    const top = ranked.slice(0, 20);
    chart(s, 'chart-top', {
      grid: { left: 260, right: 30, top: 20, bottom: 50 },
      xAxis: valueAxis('step time (s)'),
      yAxis: { type: 'category', data: top.map((i) => `#${t.rows[i][c('rank')]} ${t.rows[i][c('gpus')]} GPUs ${label(i)}`).reverse() },
      series: [{ type: 'bar', name: 'step time (s)', data: top.map((i) => num(t.rows[i][c('step_time_s')])).reverse() }],
    }, Math.max(220, 24 * top.length + 80));
    const p = section('Pareto front', 'Step time against GPUs; search.csv\'s pareto column marks the front.');
    const pts = ranked.map((i) => [num(t.rows[i][c('gpus')]), num(t.rows[i][c('step_time_s')]),
      `#${t.rows[i][c('rank')]} ${label(i)}`]);
    const front = ranked.filter((i) => t.rows[i][c('pareto')] === 'yes').map((i) => [num(t.rows[i][c('gpus')]),
      num(t.rows[i][c('step_time_s')]), `#${t.rows[i][c('rank')]} ${label(i)}`]);
    paretoChart(p, 'chart-pareto', pts, front);
    const memory = where('does_not_fit');
    const m = section('Do not fit in GPU memory', `${memory.length} layouts refused by the memory model, not ` +
      'simulated, with their peak per GPU and its breakdown.');
    const memCols = ['gpus'].concat(keys, ['peak_gpu_memory_bytes', 'gpu_memory_capacity_bytes', 'reason'])
      .filter((h) => c(h) >= 0);
    if (memory.length) csvTable(m, 'table-does-not-fit', t, { rows: memory, columns: memCols });
    const rest = t.rows.map((_, i) => i).filter((i) => !['ok', 'does_not_fit'].includes(t.rows[i][status]));
    if (rest.length) {
      const r = section('Not ranked', 'Combinations that are not layouts of this model and cluster, and points ' +
        'that failed, with the reason.');
      csvTable(r, 'table-not-ranked', t, { rows: rest, columns: ['point', 'status', 'gpus'].concat(keys, ['reason']) });
    }
  }

  function plan() {
    const t = data.tables['plan.csv'];
    const bom = data.tables['bom.csv'];
    const status = t.header.indexOf('status');
    const s = section('Clusters', 'plan.csv: one row per cluster of the plan.');
    csvTable(s, 'table-plan', t, { rowClass: (r) => (status < 0 || r[status] === 'ok' ? undefined : 'bad') });
    const clusters = t.rows.map((r) => r[0]);
    // Every numeric column of plan.csv; one that is the same for every cluster (GPUs, nodes) only if it is one of the
    // figures a plan is for.
    const always = ['capex_usd', 'it_power_kw', 'facility_power_kw', 'step_time_s', 'train_days', 'energy_mwh',
      'cost_usd'];
    const numeric = t.header.filter((h, k) => k > 0 && t.rows.length && t.rows.every((r) => isNumeric(r[k])) &&
      (always.includes(h) || t.rows.length === 1 || new Set(t.rows.map((r) => r[k])).size > 1));
    const g = section('Per cluster', 'The numeric columns of plan.csv, one bar per cluster.');
    const grid = el('div', { class: 'grid' });
    g.appendChild(grid);
    numeric.forEach((h) => {
      const k = t.header.indexOf(h);
      chart(grid, `chart-plan-${h}`, {
        title: { text: h, left: 'center', textStyle: { fontSize: 13 } },
        grid: { left: 90, right: 20, top: 40, bottom: 60 },
        xAxis: categoryAxis('', clusters, { axisLabel: { interval: 0, rotate: clusters.length > 4 ? 30 : 0 } }),
        yAxis: valueAxis(''),
        series: [{ type: 'bar', name: h, data: t.rows.map((r) => num(r[k])) }],
      }, 300);
    });
    const cb = (name) => bom.header.indexOf(name);
    if (cb('category') >= 0 && cb('price_usd') >= 0) {
      const categories = [];
      bom.rows.forEach((r) => { if (!categories.includes(r[cb('category')])) categories.push(r[cb('category')]); });
      const capex = section('Capital cost by category', 'bom.csv: price_usd summed per category and cluster (parts ' +
        'without a price count 0, as in plan.csv\'s capex_usd).');
      chart(capex, 'chart-capex-by-category', {
        legend,
        tooltip: { trigger: 'axis', confine: true },
        grid: { left: 110, right: 30, top: 40, bottom: 60 },
        xAxis: categoryAxis('cluster', clusters),
        yAxis: valueAxis('USD'),
        series: categories.map((cat) => ({ type: 'bar', stack: 'capex', name: cat,
          data: clusters.map((cl) => bom.rows.filter((r) => r[cb('cluster')] === cl && r[cb('category')] === cat)
            .reduce((sum, r) => sum + (isNumeric(r[cb('price_usd')]) ? num(r[cb('price_usd')]) : 0), 0)) })),
      });
    }
    clusters.forEach((cl, n) => {
      const b = section(`Bill of materials: ${cl}`, data.scenarios && data.scenarios[cl] ?
        `Scenario ${data.scenarios[cl]}.` : undefined);
      const rows = bom.rows.map((_, i) => i).filter((i) => bom.rows[i][cb('cluster')] === cl);
      csvTable(b, `table-bom-${n}`, bom, { rows, columns: bom.header.filter((h) => h !== 'cluster') });
    });
  }

  const build = { run, collectives, sweep, search, plan }[data.kind];
  if (!build) throw new Error(`railyard report: unknown kind '${data.kind}'`);
  build();
  page.appendChild(el('footer', {}, `Written by ${data.generated_by} (railyard report) from ${data.folder}. Charts: ` +
    `${data.chart_library} (Apache License 2.0), inlined: the page needs no network.`));
  state.ready = true;
}());
