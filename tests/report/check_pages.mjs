// Opens report pages in headless Chromium (Debian's, driven by playwright-core) and checks each one:
//   - it loads without a console error or an uncaught exception, and its script finished (window.railyardReport);
//   - every chart the page drew, and each one the caller expects, renders: it holds data points and a screenshot of it
//     is not blank (more than 1% of its pixels differ from the background, in more than 8 colours);
//   - every table cell equals the file it came from, read here independently: a CSV table's cell is the CSV's text
//     (RFC 4180 parsed below), a summary.json number equals the file's number, and the timeline's busy times are
//     recomputed from trace.json.
// usage: node check_pages.mjs --chromium PATH --modules NODE_MODULES PAGE:KIND:FOLDER:CHART,CHART,... ...
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i < 0 || i + 1 >= args.length) throw new Error(`${name} is required`);
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const chromiumPath = option('--chromium');
const modules = option('--modules');
const { chromium } = createRequire(path.resolve(modules, 'noop.js'))('playwright-core');

let failures = 0;
const fail = (page, what) => {
  failures++;
  console.log(`FAIL ${page}: ${what}`);
};

// RFC 4180: quoted fields with commas, doubled quotes and line breaks; CRLF or LF record ends.
function parseCsv(text) {
  const records = [];
  let field = '';
  let record = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') { record.push(field); field = ''; } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += ch;
  }
  if (field !== '' || record.length) { record.push(field); records.push(record); }
  return { header: records[0], rows: records.slice(1).filter((r) => !(r.length === 1 && r[0] === '')) };
}

const atPath = (root, key) => key.split('.').reduce((v, k) => (v === undefined || v === null ? undefined : v[k]), root);

// The timeline summary as report.cpp documents it: per stream, the union of each rank's events, averaged over ranks.
function timeline(folder) {
  const trace = JSON.parse(fs.readFileSync(path.join(folder, 'trace.json'), 'utf8'));
  const names = new Map();
  const spans = new Map();
  for (const e of trace.traceEvents) {
    const key = `${e.pid}/${e.tid}`;
    if (e.ph === 'M' && e.name === 'thread_name') names.set(key, e.args.name);
    if (e.ph === 'X') {
      if (!spans.has(key)) spans.set(key, []);
      spans.get(key).push([e.ts, e.ts + e.dur]);
    }
  }
  const streams = new Map();
  for (const [key, list] of spans) {
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let busy = 0;
    let [open, close] = list[0];
    for (const [a, b] of list) {
      if (a > close) { busy += close - open; open = a; close = b; } else close = Math.max(close, b);
    }
    busy += close - open;
    const name = names.get(key) ?? `thread ${key.split('/')[1]}`;
    const s = streams.get(name) ?? { ranks: new Set(), events: 0, busy: 0 };
    s.ranks.add(key.split('/')[0]);
    s.events += list.length;
    s.busy += busy;
    streams.set(name, s);
  }
  return streams;
}

const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b), 1e-30);

async function checkTables(page, name, folder) {
  const tables = await page.$$eval('table[data-source]', (ts) => ts.map((t) => ({
    id: t.id,
    source: t.dataset.source,
    key: t.dataset.key || null,
    rows: [...t.querySelectorAll('tbody tr')].map((tr) => ({
      row: tr.dataset.row === undefined ? null : Number(tr.dataset.row),
      key: tr.dataset.key || null,
      cells: [...tr.querySelectorAll('td[data-col]')].map((td) => [td.dataset.col, td.textContent]),
    })),
  })));
  let compared = 0;
  const csvs = new Map();
  const summary = fs.existsSync(path.join(folder, 'summary.json'))
    ? JSON.parse(fs.readFileSync(path.join(folder, 'summary.json'), 'utf8')) : null;
  for (const t of tables) {
    if (!t.rows.length) fail(name, `table ${t.id} has no rows`);
    if (t.source.endsWith('.csv')) {
      if (!csvs.has(t.source)) csvs.set(t.source, parseCsv(fs.readFileSync(path.join(folder, t.source), 'utf8')));
      const csv = csvs.get(t.source);
      for (const r of t.rows) {
        const row = csv.rows[r.row];
        if (!row) { fail(name, `${t.id}: row ${r.row} is not in ${t.source}`); continue; }
        for (const [col, text] of r.cells) {
          const c = csv.header.indexOf(col);
          if (c < 0) fail(name, `${t.id}: ${t.source} has no column ${col}`);
          else if (row[c] !== text) fail(name, `${t.id} row ${r.row} ${col}: page '${text}', ${t.source} '${row[c]}'`);
          else compared++;
        }
      }
    } else if (t.source === 'summary.json' && t.key) { // a list in summary.json: one row per element
      const list = atPath(summary, t.key);
      for (const r of t.rows) {
        for (const [col, text] of r.cells) {
          const want = list?.[r.row]?.[col];
          const ok = typeof want === 'number' ? Number(text) === want : String(want ?? '') === text;
          if (!ok) fail(name, `${t.id} row ${r.row} ${col}: page '${text}', summary.json ${JSON.stringify(want)}`);
          else compared++;
        }
      }
    } else if (t.source === 'summary.json') { // (what, key, value) rows
      for (const r of t.rows) {
        const want = atPath(summary, r.key);
        const value = r.cells.find(([c]) => c === 'value')[1];
        const ok = typeof want === 'number' ? Number(value) === want : String(want) === value;
        if (!ok) fail(name, `${t.id} ${r.key}: page '${value}', summary.json ${JSON.stringify(want)}`);
        else compared++;
        const fraction = r.cells.find(([c]) => c === 'fraction_of_step');
        if (fraction && !close(Number(fraction[1]), want / summary.step_time_s)) {
          fail(name, `${t.id} ${r.key}: fraction ${fraction[1]} is not ${want} / ${summary.step_time_s}`);
        }
      }
    } else if (t.source === 'trace.json') {
      const streams = timeline(folder);
      if (t.rows.length !== streams.size) fail(name, `timeline: ${t.rows.length} streams, trace.json has ${streams.size}`);
      for (const r of t.rows) {
        const cell = Object.fromEntries(r.cells);
        const s = streams.get(cell.stream);
        if (!s) { fail(name, `timeline: no stream ${cell.stream} in trace.json`); continue; }
        const mean = s.busy / s.ranks.size / 1e6;
        if (Number(cell.ranks) !== s.ranks.size || Number(cell.events) !== s.events ||
          !close(Number(cell.busy_s_mean_over_ranks), mean)) {
          fail(name, `timeline ${cell.stream}: page ${JSON.stringify(cell)}, trace.json ranks ${s.ranks.size} ` +
            `events ${s.events} busy ${mean}`);
        } else compared += 3;
      }
    } else fail(name, `table ${t.id} has an unknown source ${t.source}`);
  }
  return { tables: tables.length, compared };
}

// How many pixels of a PNG differ from its corner pixel (the background), and in how many colours: decoded by the
// browser in a page of its own.
async function pixelStats(browser, png) {
  const p = await browser.newPage();
  try {
    return await p.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const px = ctx.getImageData(0, 0, img.width, img.height).data;
      const bg = [px[0], px[1], px[2]];
      let other = 0;
      const colours = new Set();
      for (let i = 0; i < px.length; i += 4) {
        if (px[i] !== bg[0] || px[i + 1] !== bg[1] || px[i + 2] !== bg[2]) other++;
        if (colours.size < 1000) colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
      }
      return { width: img.width, height: img.height, fraction: other / (px.length / 4), colours: colours.size };
    }, png.toString('base64'));
  } finally {
    await p.close();
  }
}

const browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
try {
  for (const spec of args) {
    const [file, kind, folder, expect] = spec.split(':');
    const name = path.relative(process.cwd(), file);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const before = failures;
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
    page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) errors.push(`network request: ${r.url()}`); });
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const state = await page.evaluate(() => window.railyardReport ?? null);
    if (!state || !state.ready) {
      for (const e of errors) fail(name, e);
      fail(name, 'the page script did not finish');
      await page.close();
      continue;
    }
    if (state.kind !== kind) fail(name, `kind ${state.kind}, expected ${kind}`);
    const wanted = expect ? expect.split(',') : [];
    for (const id of wanted) if (!state.charts.includes(id)) fail(name, `no chart ${id} (charts: ${state.charts.join(', ')})`);
    // Charts draw on the next animation frame at the latest.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    for (const id of state.charts) {
      // Axes alone are not a chart: each must hold data points.
      const points = await page.evaluate((i) => echarts.getInstanceByDom(document.getElementById(i)).getOption().series
        .reduce((n, s) => n + (s.data || []).filter((v) => v !== null && v !== undefined).length, 0), id);
      if (!points) fail(name, `chart ${id} has no data points`);
      const shot = await page.locator(`#${id}`).screenshot();
      const s = await pixelStats(browser, shot);
      if (s.fraction <= 0.01 || s.colours <= 8) {
        fail(name, `chart ${id} looks blank: ${(100 * s.fraction).toFixed(2)}% of ${s.width}x${s.height} pixels drawn, ` +
          `${s.colours} colours`);
      } else console.log(`  ${name}: ${id} ${s.width}x${s.height}, ${(100 * s.fraction).toFixed(1)}% drawn, ` +
        `${s.colours >= 1000 ? '1000+' : s.colours} colours`);
    }
    const t = await checkTables(page, name, folder);
    if (!t.compared) fail(name, 'no table cell was compared');
    for (const e of errors) fail(name, e);
    console.log(`${failures > before ? 'FAIL' : 'ok'} ${name} (${kind}): ${state.charts.length} charts, ${t.tables} ` +
      `tables, ${t.compared} cells equal to their files`);
    await page.close();
  }
} finally {
  await browser.close();
}
if (failures) {
  console.log(`${failures} failure(s)`);
  process.exit(1);
}
