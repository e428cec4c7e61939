// The entries' list: pages fetched as they scroll into view, and virtual scrolling.
// Every row has the same height, so row i is at i * ROW and only the rows in view
// exist in the page; past MAX_PX, scroll positions are scaled and the wheel is
// handled here, so that it still moves the list by pixels.

const ROW = 22; // px: every row has this height, so row i is at i * ROW
const MAX_PX = 4e6; // taller lists are scrolled in scaled pixels (browsers cap heights)
const PAGE = 200; // rows fetched at a time
const LANE_HUES = ['#4e6a8f', '#7b6ba8', '#5a8aa6', '#8a7fa0', '#3f5f7f', '#6f7f99',
  '#9a86b8', '#56758f', '#7d8ca3', '#5c5c8a'];

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
  const generation = S.generation;
  const page = await S.api.page(S.name, S.filters, pageIndex * PAGE, PAGE);
  if (generation !== S.generation) return null; // the filters changed meanwhile
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
    const row = rowAt(pos);
    // The timeline cell links the row to its place on the lane view's time axis.
    if (row && row.boundary !== null && e.target.closest('.bar')) {
      showOnAxis(row.seq).catch((error) => showError(error.message));
      return;
    }
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
      // A row out of the list or not loaded yet names no entry: a stale seq on a hidden row
      // would make a selector of the entry match two rows, one of them invisible.
      if (pos >= this.total) { node.hidden = true; node.dataset.pos = ''; delete node.dataset.seq; return; }
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
        delete node.dataset.seq;
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
      c[8].title = row.boundary !== null ? 'show on the time axis' : '';
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
function resize() {
  if (S.view === 'sides') { sides.resize(); return; }
  list.resize();
  if (S.mode === 'lanes') lanes.resize();
}
window.addEventListener('resize', resize);
