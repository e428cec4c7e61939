// sessiontape viewer: plain JavaScript, no framework, no build step. The page's script is
// api.js, rows.js and viewer.js joined in that order inside one strict-mode function
// (sessiontape/cli/_viewer.py), so they share one scope and define no globals.
//
// This file: helpers, and the two data sources behind one interface (list, cassette,
// page, entry):
// HttpApi asks `sessiontape serve` for JSON; EmbeddedApi answers the same questions from
// the data `sessiontape report` put in the page (gzip + base64, unpacked here with
// DecompressionStream). Everything recorded is user data: it reaches the page through
// textContent only, never as markup.

const CHILDREN_SHOWN = 100;
const CLIPPED = '$clipped_json';
const MORE = '$more_bytes';
const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function fmtDur(ns) {
  if (ns >= 1e10) return (ns / 1e9).toFixed(1) + 's';
  if (ns >= 1e9) return (ns / 1e9).toFixed(2) + 's';
  if (ns >= 1e6) return (ns / 1e6).toFixed(1) + 'ms';
  return Math.round(ns / 1e3) + 'µs';
}
const fmtRel = (ns) => '+' + (ns / 1e9).toFixed(3) + 's';
const plural = (n, word, words) => n.toLocaleString('en') + ' ' + (n === 1 ? word : (words || word + 's'));
const filtersEmpty = (f) => !(f.worker || f.boundary || f.kind || f.status || f.error || f.q);
const noFilters = () => ({ worker: '', boundary: '', kind: '', status: '', error: '', q: '' });

// ---- data sources ------------------------------------------------------------------

class HttpApi {
  constructor() { this.fast = false; }
  async get(path, params) {
    const url = new URL(path, location.href);
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== '' && value !== null && value !== undefined) url.searchParams.set(key, value);
    }
    const response = await fetch(url, { headers: { Accept: 'application/json' } });
    let body;
    try { body = await response.json(); } catch (e) { body = {}; }
    if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
    return body;
  }
  base(name) { return 'api/cassettes/' + encodeURIComponent(name); }
  list() { return this.get('api/cassettes'); }
  cassette(name) { return this.get(this.base(name)); }
  page(name, f, offset, limit, seek) {
    return this.get(this.base(name) + '/entries', { ...f, offset, limit, seek });
  }
  entry(name, seq, f) { return this.get(this.base(name) + '/entries/' + seq, f); }
  columns(name) { return this.get(this.base(name) + '/columns'); }
  sides(a, b) { return this.get('api/sides', { a, b }); }
}

async function unpack(id) {
  const node = $(id);
  const b64 = node.textContent;
  node.textContent = '';
  let bytes;
  if (Uint8Array.fromBase64) {
    bytes = Uint8Array.fromBase64(b64);
  } else {
    const binary = atob(b64);
    bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}

// The report's copy of the server's API: the same answers, computed in the page. Its
// filters must select what the server's do (sessiontape/cli/_catalog.py, Query).
class EmbeddedApi {
  constructor(packed) {
    this.fast = true;
    this.c = packed.cassette;
    const cols = packed.columns;
    this.cols = cols;
    this.n = cols.seq.length;
    this.children = new Map();
    cols.parent.forEach((parent, i) => {
      if (parent === null) return;
      const list = this.children.get(parent);
      if (list) list.push(i); else this.children.set(parent, [i]);
    });
    // Error classes come sparse (the rows of failed calls); -1 marks every other row.
    this.error = new Int8Array(this.n).fill(-1);
    (cols.error_at || []).forEach((at, i) => { this.error[at] = cols.error_class[i]; });
    this.lower = null;
    this.selection = { key: null, rows: null };
    this.details = null; // a promise of the detail lines, unpacked when first needed
  }
  lines() {
    if (!this.details) this.details = unpack('st-details').then((text) => text.split('\n'));
    return this.details;
  }
  row(i) {
    const c = this.cols;
    const boundary = c.boundary[i];
    return {
      index: i, seq: c.seq[i], worker: c.workers[c.worker[i]], kind: c.kinds[c.kind[i]],
      boundary: boundary === null ? null : c.boundaries[boundary], parent: c.parent[i],
      depth: c.depth[i], start_ns: c.start[i], duration_ns: c.duration[i],
      status: c.statuses[c.status[i]], text: c.text[i],
      error_class: this.error[i] < 0 ? null : c.error_classes[this.error[i]],
    };
  }
  indexOf(seq) {
    const seqs = this.cols.seq;
    let lo = 0; let hi = seqs.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (seqs[mid] < seq) lo = mid + 1; else hi = mid; }
    return lo < seqs.length && seqs[lo] === seq ? lo : null;
  }
  select(f) {
    if (filtersEmpty(f)) return null; // every row
    const key = JSON.stringify([f.worker, f.boundary, f.kind, f.status, f.error, f.q]);
    if (this.selection.key === key) return this.selection.rows;
    const c = this.cols;
    const code = (names, name) => { const at = names.indexOf(name); return at < 0 ? -2 : at; };
    const w = f.worker ? code(c.workers, f.worker) : -1;
    const b = f.boundary ? code(c.boundaries, f.boundary) : -1;
    const k = f.kind ? code(c.kinds, f.kind) : -1;
    const s = f.status ? code(c.statuses, f.status) : -1;
    const e = f.error ? code(c.error_classes, f.error) : -1;
    const errors = this.error;
    let lower = null;
    let needle = '';
    if (f.q) {
      if (!this.lower) this.lower = c.text.map((t) => t.toLowerCase());
      lower = this.lower;
      needle = f.q.toLowerCase();
    }
    const rows = [];
    for (let i = 0; i < this.n; i++) {
      if (w !== -1 && c.worker[i] !== w) continue;
      if (b !== -1 && c.boundary[i] !== b) continue;
      if (k !== -1 && c.kind[i] !== k) continue;
      if (s !== -1 && c.status[i] !== s) continue;
      if (e !== -1 && errors[i] !== e) continue;
      if (lower && !lower[i].includes(needle)) continue;
      rows.push(i);
    }
    this.selection = { key, rows: Int32Array.from(rows) };
    return this.selection.rows;
  }
  position(rows, seq) {
    const index = seq === null || seq === undefined ? null : this.indexOf(seq);
    if (index === null) return null;
    if (!rows) return index;
    let lo = 0; let hi = rows.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (rows[mid] < index) lo = mid + 1; else hi = mid; }
    return lo < rows.length && rows[lo] === index ? lo : null;
  }
  check(name) {
    if (name !== this.c.name) throw new Error(`no cassette named '${name}' in this report`);
  }
  async list() {
    const c = this.c;
    return { cassettes: [{
      name: c.name, path: c.path, size: null, run_id: c.run_id, entrypoint: c.entrypoint,
      recorded_at: c.recorded_at, entries: c.entries, crashed: c.crashed,
      reports: c.receipt ? c.receipt.reports.length : null,
      mismatches: c.receipt && c.receipt.reports.length ? c.receipt.mismatches.length : null,
    }] };
  }
  async cassette(name) { this.check(name); return this.c; }
  async columns(name) { this.check(name); return this.cols; }
  async page(name, f, offset, limit, seek) {
    this.check(name);
    const rows = this.select(f);
    const total = rows ? rows.length : this.n;
    const out = [];
    for (let p = offset; p < Math.min(total, offset + limit); p++) out.push(this.row(rows ? rows[p] : p));
    const page = { total, offset, limit, rows: out };
    if (seek !== undefined && seek !== null) page.position = this.position(rows, seek);
    return page;
  }
  async entry(name, seq, f) {
    this.check(name);
    const index = this.indexOf(seq);
    if (index === null) throw new Error(`${name} has no entry with seq ${seq}`);
    const lines = await this.lines();
    const row = this.row(index);
    const values = JSON.parse(lines[index]);
    const entry = { kind: row.kind };
    (this.c.schema[row.kind] || []).forEach((field, i) => { entry[field] = values[i]; });
    const parent = row.parent === null ? null : this.indexOf(row.parent);
    const children = this.children.get(seq) || [];
    const shown = children.slice(0, CHILDREN_SHOWN);
    const rows = this.select(f);
    const positions = {};
    for (const s of [seq, row.parent, ...shown.map((i) => this.cols.seq[i])]) {
      if (s !== null) positions[String(s)] = this.position(rows, s);
    }
    const mismatches = this.c.receipt ? this.c.receipt.mismatches.filter((m) => m.seq === seq) : [];
    return {
      row, entry, parent: parent === null ? null : this.row(parent),
      children: shown.map((i) => this.row(i)), children_total: children.length, mismatches, positions,
    };
  }
}
