// sessiontape viewer: plain JavaScript, no framework, no build step.
//
// One page, two data sources behind one interface (list, cassette, page, entry):
// HttpApi asks `sessiontape serve` for JSON; EmbeddedApi answers the same questions from
// the data `sessiontape report` put in the page (gzip + base64, unpacked here with
// DecompressionStream). Everything recorded is user data: it reaches the page through
// textContent only, never as markup.
'use strict';
(() => {
  const ROW = 22; // px: every row has this height, so row i is at i * ROW
  const MAX_PX = 4e6; // taller lists are scrolled in scaled pixels (browsers cap heights)
  const PAGE = 200; // rows fetched at a time
  const CHILDREN_SHOWN = 100;
  const LANE_HUES = ['#4e6a8f', '#7b6ba8', '#5a8aa6', '#8a7fa0', '#3f5f7f', '#6f7f99',
    '#9a86b8', '#56758f', '#7d8ca3', '#5c5c8a'];
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
  const filtersEmpty = (f) => !(f.worker || f.boundary || f.kind || f.status || f.q);

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
      const key = JSON.stringify([f.worker, f.boundary, f.kind, f.status, f.q]);
      if (this.selection.key === key) return this.selection.rows;
      const c = this.cols;
      const code = (names, name) => { const at = names.indexOf(name); return at < 0 ? -2 : at; };
      const w = f.worker ? code(c.workers, f.worker) : -1;
      const b = f.boundary ? code(c.boundaries, f.boundary) : -1;
      const k = f.kind ? code(c.kinds, f.kind) : -1;
      const s = f.status ? code(c.statuses, f.status) : -1;
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

  // ---- state ---------------------------------------------------------------------------

  const S = {
    api: null,
    view: null, // 'list' or 'cassette'
    name: null,
    cassette: null,
    filters: { worker: '', boundary: '', kind: '', status: '', q: '' },
    total: 0,
    generation: 0,
    pages: new Map(),
    wanted: new Set(),
    fetchTimer: 0,
    selected: -1, // position among the filtered rows
    detailSeq: null,
    links: null, // { self, parent, children: [], min, max } positions of the selected entry's links
    listRows: [],
    listSelected: -1,
  };

  function showError(message) {
    const node = $('error');
    node.textContent = message;
    node.hidden = !message;
  }
  function setLoading(message) {
    const node = $('loading');
    node.textContent = message || '';
    node.hidden = !message;
  }

  // ---- routing -------------------------------------------------------------------------

  function parseHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    return { name: params.get('c'), seq: params.has('seq') ? Number(params.get('seq')) : null, list: params.has('list') };
  }

  async function route() {
    const { name, seq, list } = parseHash();
    showError('');
    try {
      if (name !== null) await openCassette(name, seq);
      else if (document.body.dataset.mode === 'report' && !list) await openCassette(S.api.c.name, null);
      else await showList();
    } catch (error) {
      setLoading('');
      showError(error.message);
    }
  }

  // ---- the list page -------------------------------------------------------------------

  async function showList() {
    S.view = 'list';
    $('cassette-view').hidden = true;
    $('crumb').textContent = '';
    setLoading('Loading the cassettes…');
    const { cassettes } = await S.api.list();
    setLoading('');
    const body = $('cassettes').tBodies[0];
    body.textContent = '';
    S.listRows = [];
    for (const c of cassettes) {
      const tr = el('tr');
      const status = c.mismatches === null ? 'none' : c.mismatches ? 's-mismatch' : 's-ok';
      const word = c.mismatches === null ? '—' : c.mismatches ? plural(c.mismatches, 'mismatch', 'mismatches') : 'replayed ok';
      const cell = el('td');
      cell.append(el('span', 'chip ' + (status === 'none' ? 's-none' : status), word));
      tr.append(cell);
      const link = el('a', 'name', c.name);
      link.href = '#c=' + encodeURIComponent(c.name);
      const nameCell = el('td');
      nameCell.append(link);
      tr.append(nameCell, el('td', 'mono', c.run_id || '?'), el('td', '', c.entrypoint || ''),
        el('td', '', c.recorded_at || ''), el('td', 'num', c.size === null ? '' : fmtSize(c.size)),
        el('td', 'num', c.entries === null ? '' : c.entries.toLocaleString('en')));
      tr.addEventListener('click', () => { location.hash = 'c=' + encodeURIComponent(c.name); });
      body.append(tr);
      S.listRows.push(tr);
    }
    $('list-note').textContent = plural(cassettes.length, 'cassette') +
      (document.body.dataset.mode === 'serve' ? ' served; each is loaded when first opened.' : '.');
    $('list-view').hidden = false;
    S.listSelected = -1;
  }

  function fmtSize(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + ' MB';
    return (n / 1e3).toFixed(1) + ' kB';
  }

  function moveList(delta) {
    if (!S.listRows.length) return;
    S.listSelected = Math.max(0, Math.min(S.listRows.length - 1, S.listSelected + delta));
    S.listRows.forEach((tr, i) => tr.classList.toggle('sel', i === S.listSelected));
    S.listRows[S.listSelected].scrollIntoView({ block: 'nearest' });
  }

  // ---- the cassette page ---------------------------------------------------------------

  async function openCassette(name, seq) {
    if (S.view !== 'cassette' || S.name !== name) {
      S.view = 'cassette';
      $('list-view').hidden = true;
      $('cassette-view').hidden = true;
      setLoading(`Loading ${name}…`);
      const cassette = await S.api.cassette(name);
      setLoading('');
      S.name = name;
      S.cassette = cassette;
      $('crumb').textContent = name;
      document.title = 'sessiontape: ' + name;
      fillSummary(cassette);
      fillFilters(cassette);
      drawLaneHead();
      closeDetail();
      $('cassette-view').hidden = false;
      resize();
      await applyFilters();
      if (document.body.dataset.mode === 'report') S.api.lines(); // unpack the details early
    }
    if (seq !== null && seq !== S.detailSeq) await jumpTo(seq);
  }

  function fillSummary(c) {
    const receipt = c.receipt;
    const parts = [`run ${c.run_id}`, c.entrypoint || '?', plural(c.entries, 'entry', 'entries'),
      plural(c.workers.length, 'worker'), fmtDur(c.duration_ns), c.crashed ? 'crashed' : 'complete'];
    if (receipt && !receipt.reports.length) parts.push('no replay of it in the receipt');
    else if (receipt) parts.push(receipt.mismatches.length ? plural(receipt.mismatches.length, 'mismatch', 'mismatches') : 'replayed ok');
    $('info-line').textContent = parts.join(' · ');
    const body = $('info-table').tBodies[0];
    body.textContent = '';
    for (const [label, value] of c.info) {
      const tr = el('tr');
      tr.append(el('td', '', label), el('td', '', value));
      body.append(tr);
    }
    if (receipt) {
      for (const r of receipt.reports) {
        const tr = el('tr');
        const verdict = r.ok ? 'ok' : plural(r.mismatches, 'mismatch', 'mismatches');
        tr.append(el('td', '', 'replay'), el('td', '',
          `${r.nodeid || r.cassette}: ${verdict}; ${r.consumed} of ${r.loaded} calls served, ${r.unconsumed} unconsumed, ${r.extra} extra (receipt ${receipt.path})`));
        body.append(tr);
      }
    }
    const notes = $('notes');
    notes.textContent = '';
    for (const note of c.notes) notes.append(el('li', '', note));
    const box = $('mismatch-box');
    const list = $('mismatch-list');
    list.textContent = '';
    box.hidden = !(receipt && receipt.mismatches.length);
    if (receipt && receipt.mismatches.length) {
      $('mismatch-head').textContent = `replay diverged: ${plural(receipt.mismatches.length, 'mismatch', 'mismatches')}`;
      for (const m of receipt.mismatches) {
        const li = el('li');
        const at = m.seq === null ? 'an unrecorded call' : `seq ${m.seq}`;
        li.append(el('span', 'kind', m.kind), document.createTextNode(` at ${at} (${m.worker}, ${m.boundary}): ${m.message}`));
        if (m.seq !== null) li.addEventListener('click', () => jumpTo(m.seq));
        list.append(li);
      }
    }
  }

  function fillSelect(id, label, values, counts) {
    const select = $(id);
    select.textContent = '';
    select.append(new Option('all', ''));
    for (const value of values) {
      const option = new Option(counts ? `${value} (${counts[value].toLocaleString('en')})` : value, value);
      select.append(option);
    }
    select.setAttribute('aria-label', label);
  }

  function fillFilters(c) {
    fillSelect('f-worker', 'worker', c.workers);
    fillSelect('f-boundary', 'boundary', c.boundaries);
    fillSelect('f-kind', 'kind', c.kinds);
    fillSelect('f-status', 'status', ['ok', 'error', 'mismatch'], c.statuses);
    S.filters = { worker: '', boundary: '', kind: '', status: '', q: '' };
    $('f-q').value = '';
  }

  function readFilters() {
    return {
      worker: $('f-worker').value, boundary: $('f-boundary').value, kind: $('f-kind').value,
      status: $('f-status').value, q: $('f-q').value,
    };
  }

  function setFilters(f) {
    $('f-worker').value = f.worker; $('f-boundary').value = f.boundary; $('f-kind').value = f.kind;
    $('f-status').value = f.status; $('f-q').value = f.q;
  }

  async function applyFilters() {
    const f = readFilters();
    S.filters = f;
    const generation = ++S.generation;
    S.pages.clear();
    S.wanted.clear();
    const first = await S.api.page(S.name, f, 0, PAGE);
    if (generation !== S.generation) return;
    S.pages.set(0, first.rows);
    S.total = first.total;
    S.selected = first.total ? 0 : -1;
    S.links = null;
    list.reset(first.total);
    $('count').textContent = filtersEmpty(f)
      ? plural(first.total, 'entry', 'entries')
      : `${first.total.toLocaleString('en')} of ${plural(S.cassette.entries, 'entry', 'entries')}`;
    if (S.detailSeq !== null) refreshLinks(S.detailSeq);
  }

  // ---- rows: pages fetched as they scroll into view --------------------------------------

  function rowAt(pos) {
    const page = S.pages.get(Math.floor(pos / PAGE));
    return page ? page[pos % PAGE] : null;
  }

  function want(pageIndex) {
    if (S.pages.has(pageIndex) || S.wanted.has(pageIndex)) return;
    S.wanted.add(pageIndex);
    clearTimeout(S.fetchTimer);
    // The server is asked once the scrolling settles: a fast drag over a million rows
    // would otherwise ask for every page it passes.
    S.fetchTimer = setTimeout(fetchWanted, S.api.fast ? 0 : 40);
  }

  function fetchWanted() {
    const visible = list.visiblePages();
    const generation = S.generation;
    for (const pageIndex of S.wanted) {
      if (!visible.has(pageIndex)) { S.wanted.delete(pageIndex); continue; }
      S.api.page(S.name, S.filters, pageIndex * PAGE, PAGE).then((page) => {
        if (generation !== S.generation) return;
        S.pages.set(pageIndex, page.rows);
        S.wanted.delete(pageIndex);
        if (S.pages.size > 400) S.pages.delete(S.pages.keys().next().value);
        list.render();
      }, (error) => { S.wanted.delete(pageIndex); showError(error.message); });
    }
  }

  async function ensureRow(pos) {
    const row = rowAt(pos);
    if (row) return row;
    const pageIndex = Math.floor(pos / PAGE);
    const page = await S.api.page(S.name, S.filters, pageIndex * PAGE, PAGE);
    S.pages.set(pageIndex, page.rows);
    return page.rows[pos % PAGE] || null;
  }

  function laneWidth() {
    const lanes = S.cassette ? S.cassette.workers.length : 1;
    return Math.max(3, Math.min(14, Math.floor(150 / Math.max(lanes, 1))));
  }

  function drawLaneHead() {
    const head = $('lane-head');
    head.textContent = '';
    const width = laneWidth();
    head.style.width = width * S.cassette.workers.length + 'px';
    S.cassette.workers.forEach((worker, i) => {
      const mark = el('i');
      mark.title = worker;
      mark.style.left = i * width + 'px';
      mark.style.width = Math.max(2, width - 2) + 'px';
      mark.style.background = LANE_HUES[i % LANE_HUES.length];
      head.append(mark);
    });
  }

  class VirtualList {
    constructor() {
      this.box = $('rows');
      this.layer = $('layer');
      this.spacer = $('spacer');
      this.pool = [];
      this.total = 0;
      this.top = 0; // virtual px: where the view starts in the full list
      this.lastScroll = 0;
      this.box.addEventListener('scroll', () => this.onScroll(), { passive: true });
      this.box.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
      this.box.addEventListener('click', (e) => this.onClick(e));
      this.box.addEventListener('dblclick', (e) => { if (this.posOf(e) !== null) openDetail(); });
    }
    view() { return this.box.clientHeight; }
    full() { return this.total * ROW; }
    height() { return Math.min(this.full(), MAX_PX); }
    scaled() { return this.full() > MAX_PX; }
    maxTop() { return Math.max(0, this.full() - this.view()); }
    reset(total) {
      this.total = total;
      this.spacer.style.height = Math.max(0, this.height() - this.view()) + 'px';
      this.top = 0;
      this.setScroll();
      this.render();
    }
    resize() {
      this.layer.style.height = this.view() + 'px';
      const rows = Math.ceil(this.view() / ROW) + 2;
      while (this.pool.length < rows) {
        const row = el('div', 'row');
        for (const cls of ['st', 'lanes', 'gut', 'seq', 'when', 'dur', 'worker', 'kind', 'bar', 'text']) row.append(el('span', cls));
        row.children[0].append(el('span', 'dot'));
        row.children[1].append(el('i'));
        row.children[8].append(el('i'));
        row.setAttribute('role', 'option');
        this.layer.append(row);
        this.pool.push(row);
      }
      this.spacer.style.height = Math.max(0, this.height() - this.view()) + 'px';
      this.render();
    }
    // The scrollbar covers height() px; the list is full() px; in between, positions scale.
    scrollFor(top) {
      const range = this.height() - this.view();
      return this.scaled() ? (top / this.maxTop()) * range : top;
    }
    setScroll() {
      const target = this.scrollFor(this.top);
      this.lastScroll = target;
      if (Math.abs(this.box.scrollTop - target) >= 1) this.box.scrollTop = target;
    }
    onScroll() {
      const scroll = this.box.scrollTop;
      if (Math.abs(scroll - this.lastScroll) < 1) return; // our own move
      const range = this.height() - this.view();
      this.top = this.scaled() && range > 0 ? (scroll / range) * this.maxTop() : scroll;
      this.lastScroll = scroll;
      this.render();
    }
    onWheel(e) {
      if (!this.scaled()) return; // the browser scrolls unscaled lists itself
      e.preventDefault();
      const unit = e.deltaMode === 1 ? ROW : e.deltaMode === 2 ? this.view() : 1;
      this.scrollTo(this.top + e.deltaY * unit);
    }
    scrollTo(top) {
      this.top = Math.max(0, Math.min(this.maxTop(), top));
      this.setScroll();
      this.render();
    }
    first() { return Math.floor(this.top / ROW); }
    visibleRows() { return Math.max(1, Math.floor(this.view() / ROW)); }
    visiblePages() {
      const pages = new Set();
      const last = Math.min(this.total - 1, this.first() + this.pool.length);
      for (let p = Math.floor(this.first() / PAGE); p <= Math.floor(Math.max(last, 0) / PAGE); p++) pages.add(p);
      return pages;
    }
    ensureVisible(pos) {
      const rowTop = pos * ROW;
      if (rowTop < this.top) this.scrollTo(rowTop);
      else if (rowTop + ROW > this.top + this.view()) this.scrollTo(rowTop + ROW - this.view());
      else this.render();
    }
    posOf(e) {
      const row = e.target.closest('.row');
      if (!row || !row.dataset.pos) return null;
      return Number(row.dataset.pos);
    }
    onClick(e) {
      const pos = this.posOf(e);
      if (pos === null) return;
      select(pos);
      openDetail();
    }
    render() {
      const first = this.first();
      const shift = this.top - first * ROW;
      const width = laneWidth();
      const duration = Math.max(1, S.cassette ? S.cassette.duration_ns : 1);
      const links = S.links;
      this.pool.forEach((node, slot) => {
        const pos = first + slot;
        if (pos >= this.total) { node.hidden = true; node.dataset.pos = ''; return; }
        node.hidden = false;
        node.style.top = (slot * ROW - shift) + 'px';
        node.dataset.pos = String(pos);
        const row = rowAt(pos);
        const c = node.children;
        let cls = 'row';
        if (pos === S.selected) cls += ' sel';
        if (links) {
          if (links.linked.has(pos)) cls += ' linked';
          if (pos === links.min && links.max > links.min) cls += ' span-start';
          else if (pos === links.max && links.max > links.min) cls += ' span-end';
          else if (pos > links.min && pos < links.max) cls += ' inspan';
        }
        node.setAttribute('aria-selected', pos === S.selected ? 'true' : 'false');
        if (!row) {
          want(Math.floor(pos / PAGE));
          node.className = cls + ' pending';
          for (const i of [3, 4, 5, 6, 7]) c[i].textContent = '';
          c[3].textContent = '…';
          c[9].textContent = '';
          c[1].firstChild.style.display = 'none';
          c[8].firstChild.style.display = 'none';
          return;
        }
        node.className = cls + ' s-' + row.status;
        node.dataset.seq = String(row.seq);
        c[0].title = row.status;
        const lane = S.cassette.workers.indexOf(row.worker);
        const mark = c[1].firstChild;
        c[1].style.width = width * S.cassette.workers.length + 'px';
        mark.style.display = '';
        mark.style.left = lane * width + 'px';
        mark.style.width = Math.max(2, width - 2) + 'px';
        mark.style.background = LANE_HUES[lane % LANE_HUES.length];
        c[3].textContent = row.seq;
        c[4].textContent = fmtRel(row.start_ns);
        c[5].textContent = row.duration_ns ? fmtDur(row.duration_ns) : '';
        c[6].textContent = row.worker;
        c[6].title = row.worker;
        c[7].textContent = row.boundary || row.kind;
        const bar = c[8].firstChild;
        bar.style.display = '';
        bar.style.left = Math.min(100, (row.start_ns / duration) * 100) + '%';
        bar.style.width = Math.max(0, (row.duration_ns / duration) * 100) + '%';
        const text = c[9];
        text.textContent = '';
        text.style.paddingLeft = row.depth * 14 + 'px';
        if (row.parent !== null) text.append(el('span', 'nest', `↳${row.parent} `));
        text.append(document.createTextNode(row.text));
        text.title = row.text;
      });
    }
  }

  const list = new VirtualList();
  function resize() { list.resize(); }
  window.addEventListener('resize', resize);

  // ---- selection, details and links ------------------------------------------------------

  function select(pos) {
    if (!S.total) return;
    S.selected = Math.max(0, Math.min(S.total - 1, pos));
    list.ensureVisible(S.selected);
  }

  async function move(delta) {
    if (!S.total) return;
    select((S.selected < 0 ? 0 : S.selected) + delta);
    if (!$('detail').hidden) {
      const pos = S.selected;
      const row = await ensureRow(pos);
      if (row && pos === S.selected) await showDetail(row.seq);
    }
  }

  async function openDetail() {
    if (S.selected < 0) return;
    const row = await ensureRow(S.selected);
    if (row) await showDetail(row.seq);
  }

  function closeDetail() {
    $('detail').hidden = true;
    S.detailSeq = null;
    S.links = null;
    list.render();
    if (S.name) history.replaceState(null, '', '#c=' + encodeURIComponent(S.name));
  }

  function setLinks(detail) {
    const p = detail.positions;
    const self = p[String(detail.row.seq)];
    const linked = new Set();
    const all = [];
    if (detail.row.parent !== null && p[String(detail.row.parent)] !== null && p[String(detail.row.parent)] !== undefined) {
      linked.add(p[String(detail.row.parent)]);
      all.push(p[String(detail.row.parent)]);
    }
    for (const child of detail.children) {
      const at = p[String(child.seq)];
      if (at !== null && at !== undefined) { linked.add(at); all.push(at); }
    }
    if (self !== null && self !== undefined) all.push(self);
    S.links = all.length > 1 ? { linked, min: Math.min(...all), max: Math.max(...all) } : (linked.size ? { linked, min: 0, max: 0 } : null);
  }

  async function refreshLinks(seq) {
    const detail = await S.api.entry(S.name, seq, S.filters);
    setLinks(detail);
    list.render();
  }

  async function showDetail(seq) {
    const detail = await S.api.entry(S.name, seq, S.filters);
    S.detailSeq = seq;
    setLinks(detail);
    const self = detail.positions[String(seq)];
    if (self !== null && self !== undefined) S.selected = self;
    list.render();
    renderDetail(detail);
    $('detail').hidden = false;
    history.replaceState(null, '', '#c=' + encodeURIComponent(S.name) + '&seq=' + seq);
  }

  function value(v) {
    if (v === null || v === undefined) return el('span', 'null', 'null');
    if (typeof v === 'string') return el('pre', '', v);
    if (typeof v === 'object' && !Array.isArray(v) && CLIPPED in v && MORE in v && Object.keys(v).length === 2) {
      const pre = el('pre', '', v[CLIPPED]);
      pre.append(el('span', 'clipped', `… (${v[MORE].toLocaleString('en')} more bytes of JSON in the cassette)`));
      return pre;
    }
    return el('pre', '', JSON.stringify(v, null, 2));
  }

  function linkButton(label, seq) {
    const button = el('button', '', label);
    button.type = 'button';
    button.addEventListener('click', () => jumpTo(seq));
    return button;
  }

  function renderDetail(d) {
    const body = $('detail-body');
    body.textContent = '';
    const r = d.row;
    body.append(el('h3', '', `seq ${r.seq} · ${r.boundary || r.kind} · ${r.worker}`));
    const status = el('p');
    status.append(el('span', 'chip s-' + r.status, r.status), document.createTextNode(` ${fmtRel(r.start_ns)}` + (r.duration_ns ? `, took ${fmtDur(r.duration_ns)}` : '')));
    body.append(status, el('p', 'mono', r.text));
    const links = el('div', 'links');
    if (r.parent !== null) {
      if (d.parent) links.append(linkButton(`↑ parent seq ${r.parent}`, r.parent));
      else links.append(el('span', 'null', `parent seq ${r.parent} is not in this tape `));
    }
    for (const child of d.children) links.append(linkButton(`↳ child seq ${child.seq}`, child.seq));
    if (d.children_total > d.children.length) links.append(el('span', 'null', `and ${d.children_total - d.children.length} more children`));
    if (links.childNodes.length) body.append(links);
    for (const m of d.mismatches) {
      const box = el('div', 'mismatch');
      box.append(el('h4', 'kind', m.kind), el('p', '', m.message));
      if (m.diffs && m.diffs.length) {
        const table = el('table', 'diff');
        const head = el('tr');
        head.append(el('th', '', 'path'), el('th', '', 'expected (recorded)'), el('th', '', 'actual (replayed)'));
        table.append(head);
        for (const diff of m.diffs) {
          const tr = el('tr');
          const expected = el('td'); expected.append(el('pre', '', JSON.stringify(diff.expected)));
          const actual = el('td'); actual.append(el('pre', '', JSON.stringify(diff.actual)));
          tr.append(el('td', 'mono', diff.path), expected, actual);
          table.append(tr);
          if (diff.detail) { const note = el('tr'); const td = el('td', 'null', diff.detail); td.colSpan = 3; note.append(td); table.append(note); }
        }
        box.append(table);
        if (m.omitted_diffs) box.append(el('p', 'null', `${m.omitted_diffs} more differing fields not listed`));
      }
      if (m.nearest) box.append(el('p', 'next', `nearest recorded call: seq ${m.nearest.seq} (${m.nearest.worker}): ${m.nearest.summary}`));
      if (m.next_step) box.append(el('p', 'next', 'next: ' + m.next_step));
      if (m.nodeid) box.append(el('p', 'null', 'found by ' + m.nodeid));
      body.append(box);
    }
    body.append(el('h4', '', 'recorded fields'));
    const table = el('table', 'fields');
    for (const [name, v] of Object.entries(d.entry)) {
      const tr = el('tr');
      const cell = el('td');
      cell.append(value(v));
      tr.append(el('td', 'name', name), cell);
      table.append(tr);
    }
    body.append(table);
  }

  async function jumpTo(seq) {
    let found = await S.api.page(S.name, S.filters, 0, 0, seq);
    if ((found.position === null || found.position === undefined) && !filtersEmpty(S.filters)) {
      setFilters({ worker: '', boundary: '', kind: '', status: '', q: '' });
      await applyFilters();
      found = await S.api.page(S.name, S.filters, 0, 0, seq);
    }
    if (found.position === null || found.position === undefined) {
      showError(`${S.name} has no entry with seq ${seq}.`);
      return;
    }
    select(found.position);
    await showDetail(seq);
  }

  async function goParent() {
    if (S.selected < 0) return;
    const row = await ensureRow(S.selected);
    if (row && row.parent !== null) await jumpTo(row.parent);
  }

  // ---- keyboard ------------------------------------------------------------------------

  function onKey(e) {
    const target = e.target;
    const typing = target.tagName === 'INPUT' || target.tagName === 'SELECT' || target.tagName === 'TEXTAREA';
    if (e.key === 'Escape') {
      if (typing) { target.blur(); $('rows').focus(); } else if (S.view === 'cassette') closeDetail();
      e.preventDefault();
      return;
    }
    if ((target.tagName === 'BUTTON' || target.tagName === 'A') && (e.key === 'Enter' || e.key === ' ')) return;
    if (typing) {
      if (e.key === 'Enter' && target.id === 'f-q') {
        clearTimeout(S.searchTimer);
        applyFilters().then(() => $('rows').focus());
        e.preventDefault();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (S.view === 'list') {
      if (e.key === 'j' || e.key === 'ArrowDown') { moveList(1); e.preventDefault(); }
      else if (e.key === 'k' || e.key === 'ArrowUp') { moveList(-1); e.preventDefault(); }
      else if (e.key === 'Enter' && S.listSelected >= 0) { S.listRows[S.listSelected].click(); e.preventDefault(); }
      return;
    }
    if (S.view !== 'cassette') return;
    const keys = {
      '/': () => { $('f-q').focus(); $('f-q').select(); },
      j: () => move(1), ArrowDown: () => move(1), k: () => move(-1), ArrowUp: () => move(-1),
      PageDown: () => move(list.visibleRows()), PageUp: () => move(-list.visibleRows()),
      Home: () => move(-S.total), g: () => move(-S.total), End: () => move(S.total), G: () => move(S.total),
      Enter: () => openDetail(), p: () => goParent(),
    };
    const action = keys[e.key];
    if (action) {
      e.preventDefault();
      Promise.resolve(action()).catch((error) => showError(error.message));
    }
  }

  // ---- start ---------------------------------------------------------------------------

  async function start() {
    document.addEventListener('keydown', onKey);
    for (const id of ['f-worker', 'f-boundary', 'f-kind', 'f-status']) {
      $(id).addEventListener('change', () => applyFilters().catch((error) => showError(error.message)));
    }
    $('f-q').addEventListener('input', () => {
      clearTimeout(S.searchTimer);
      S.searchTimer = setTimeout(() => applyFilters().catch((error) => showError(error.message)), 150);
    });
    $('detail-close').addEventListener('click', closeDetail);
    $('home').addEventListener('click', (e) => {
      if (document.body.dataset.mode === 'report') { e.preventDefault(); location.hash = 'list'; }
    });
    if (document.body.dataset.mode === 'report') {
      setLoading('Unpacking the report…');
      const packed = JSON.parse(await unpack('st-rows'));
      packed.columns.text = JSON.parse(await unpack('st-text'));
      S.api = new EmbeddedApi(packed);
    } else {
      S.api = new HttpApi();
      $('home').href = '#';
    }
    window.addEventListener('hashchange', route);
    await route();
  }

  start().catch((error) => { setLoading(''); showError(error.message); });
})();
