// The page: state, routing, the list of cassettes, a cassette's summary and filters,
// entry details and parent links, and the keyboard.

// ---- state ---------------------------------------------------------------------------

const S = {
  api: null,
  view: null, // 'list' or 'cassette'
  name: null,
  cassette: null,
  filters: noFilters(),
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
  mode: 'table', // or 'lanes': the view of a cassette
  against: null, // [A, B]: `serve A --against B` opens on them side by side
  sidesOnly: false, // a `report A --against B` page: the two runs side by side only
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
  return {
    a: params.get('a'), b: params.get('b'),
    name: params.get('c'), seq: params.has('seq') ? Number(params.get('seq')) : null, list: params.has('list'),
    mode: params.get('v') === 'lanes' ? 'lanes' : params.get('v') === 'table' ? 'table' : null,
  };
}

// The address of the cassette shown, its view and (optionally) an entry.
function hashFor(seq) {
  let hash = '#c=' + encodeURIComponent(S.name);
  if (S.mode === 'lanes') hash += '&v=lanes';
  if (seq !== null && seq !== undefined) hash += '&seq=' + seq;
  return hash;
}

async function route() {
  const { name, seq, list, mode, a, b } = parseHash();
  showError('');
  try {
    if (S.sidesOnly) await openSides(null, null);
    else if (a !== null && b !== null) await openSides(a, b);
    else if (name === null && !list && S.against) await openSides(...S.against);
    else if (name !== null) await openCassette(name, seq, mode);
    else if (document.body.dataset.mode === 'report' && !list) await openCassette(S.api.c.name, null, mode);
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
  $('sides-view').hidden = true;
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
  fillPairForm(cassettes);
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

async function openCassette(name, seq, mode) {
  if (S.view !== 'cassette' || S.name !== name) {
    lanes.reset();
    S.view = 'cassette';
    $('list-view').hidden = true;
    $('sides-view').hidden = true;
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
    // A failing chaos schedule opens on the lanes, where its calls are drawn in order.
    const receipt = cassette.receipt;
    if (!mode && receipt && receipt.schedule && receipt.chaos && receipt.chaos.verdict === 'failed') mode = 'lanes';
  }
  mode = mode || 'table';
  if (mode !== S.mode) await setMode(mode);
  if (seq !== null && seq !== S.detailSeq) {
    await jumpTo(seq);
    if (S.mode === 'lanes') await lanes.focusSeq(seq);
  }
}

// ---- the two views: the table and the lanes ----------------------------------------------

async function setMode(mode) {
  S.mode = mode;
  const onLanes = mode === 'lanes';
  $('table').hidden = onLanes;
  $('lanes').hidden = !onLanes;
  $('v-table').setAttribute('aria-pressed', String(!onLanes));
  $('v-lanes').setAttribute('aria-pressed', String(onLanes));
  history.replaceState(null, '', hashFor(S.detailSeq));
  if (onLanes) {
    setLoading('Laying out the lanes…');
    try { await lanes.ensure(); } finally { setLoading(''); }
    lanes.resize();
    $('lanes').focus({ preventScroll: true });
  } else {
    list.resize();
    if (S.detailSeq !== null) await jumpTo(S.detailSeq);
    $('rows').focus({ preventScroll: true });
  }
}

// The row's place on the time axis: the lane view, zoomed to the call.
async function showOnAxis(seq) {
  if (S.mode !== 'lanes') await setMode('lanes');
  await lanes.focusSeq(seq);
  if (S.detailSeq !== seq) await showDetail(seq);
}

function fillSummary(c) {
  const receipt = c.receipt;
  fillChaos(receipt && receipt.chaos);
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
      // A chaos schedule says which one it was, and the command that runs it again.
      const chaos = r.chaos ? `chaos seed ${r.chaos.seed} (${r.chaos.strategy}): ${r.chaos.verdict}${r.chaos.command ? ` (${r.chaos.command})` : ''}; ` : '';
      // A schedule's calls ran in its own order: "served" would count the tape's.
      const counts = r.chaos ? `${plural(r.chaos.calls, 'call')} ran (${r.loaded} recorded)`
        : `${r.consumed} of ${r.loaded} calls served, ${r.unconsumed} unconsumed, ${r.extra} extra`;
      tr.append(el('td', '', 'replay'), el('td', '',
        `${r.nodeid || r.cassette}: ${chaos}${verdict}; ${counts} (receipt ${receipt.path})`));
      body.append(tr);
    }
  }
  const notes = $('notes');
  notes.textContent = '';
  for (const note of c.notes) notes.append(el('li', '', note));
  fillPending(c);
  const box = $('mismatch-box');
  const list = $('mismatch-list');
  list.textContent = '';
  box.hidden = !(receipt && receipt.mismatches.length);
  if (receipt && receipt.mismatches.length) {
    const found = plural(receipt.mismatches.length, 'mismatch', 'mismatches');
    $('mismatch-head').textContent = receipt.chaos ? `what the schedules found: ${found}` : `replay diverged: ${found}`;
    for (const m of receipt.mismatches) {
      const li = el('li');
      const at = m.seq !== null ? `seq ${m.seq}` : receipt.chaos ? 'a call the tape lacks' : 'an unrecorded call';
      // Of a chaos receipt, which schedule found it.
      const of = receipt.chaos && m.nodeid ? (/\[(chaos-\d+)\]$/.exec(m.nodeid) || [])[1] : null;
      li.append(el('span', 'kind', m.kind), document.createTextNode(` at ${at} (${m.worker}, ${m.boundary}${of ? `, ${of}` : ''}): ${m.message}`));
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
  fillSelect('f-error', 'error class', c.error_classes ? Object.keys(c.error_classes) : [], c.error_classes);
  S.filters = noFilters();
  $('f-q').value = '';
}

function readFilters() {
  return {
    worker: $('f-worker').value, boundary: $('f-boundary').value, kind: $('f-kind').value,
    status: $('f-status').value, error: $('f-error').value, q: $('f-q').value,
  };
}

function setFilters(f) {
  $('f-worker').value = f.worker; $('f-boundary').value = f.boundary; $('f-kind').value = f.kind;
  $('f-status').value = f.status; $('f-error').value = f.error; $('f-q').value = f.q;
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
  if (S.mode === 'lanes') lanes.resize(); // the panel gave its width back
  if (S.name) history.replaceState(null, '', hashFor(null));
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
  const opened = $('detail').hidden;
  $('detail').hidden = false;
  if (opened && S.mode === 'lanes') lanes.resize(); // the panel took part of its width
  lanes.schedule();
  history.replaceState(null, '', hashFor(seq));
}

function value(v) {
  if (v === null || v === undefined) return el('span', 'null', 'null');
  if (typeof v === 'string') return el('pre', '', v);
  if (typeof v === 'object' && !Array.isArray(v) && CLIPPED in v && MORE in v && Object.keys(v).length === 2) {
    const text = textOfClipped(v[CLIPPED]);
    const pre = el('pre', '', text === null ? v[CLIPPED] : text);
    pre.append(el('span', 'clipped', `… (${v[MORE].toLocaleString('en')} more bytes of JSON in the cassette)`));
    return pre;
  }
  return el('pre', '', JSON.stringify(v, null, 2));
}

// The text that the first bytes of a clipped JSON string begin: the report clips a long
// output as JSON, without decoding it (sessiontape/cli/_clip.py), so the cut may fall
// inside an escape. null when the clipped JSON is not a string.
function textOfClipped(json) {
  if (!json.startsWith('"')) return null;
  let end = json.length;
  for (let tries = 0; tries < 8 && end > 0; tries++) {
    let run = 0; // a cut after an odd run of backslashes splits the escape it starts
    while (run < end && json[end - 1 - run] === '\\') run++;
    if (run % 2 === 1) { end--; continue; }
    try { return JSON.parse(json.slice(0, end) + '"'); } catch (e) { end--; } // inside \uXXXX
  }
  return null;
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
  status.append(el('span', 'chip s-' + r.status, r.status));
  if (r.error_class) status.append(document.createTextNode(' '), el('span', 'chip s-error err-class', r.error_class));
  status.append(document.createTextNode(` ${fmtRel(r.start_ns)}` + (r.duration_ns ? `, took ${fmtDur(r.duration_ns)}` : '')));
  body.append(status, el('p', 'mono', r.text));
  const links = el('div', 'links');
  if (r.parent !== null) {
    if (d.parent) links.append(linkButton(`↑ parent seq ${r.parent}`, r.parent));
    else links.append(el('span', 'null', `parent seq ${r.parent} is not in this tape `));
  }
  for (const child of d.children) links.append(linkButton(`↳ child seq ${child.seq}`, child.seq));
  if (d.children_total > d.children.length) links.append(el('span', 'null', `and ${d.children_total - d.children.length} more children`));
  if (links.childNodes.length) body.append(links);
  if (r.boundary !== null && S.mode !== 'lanes') {
    const axis = el('button', 'axis', '⟷ on the time axis');
    axis.type = 'button';
    axis.title = 'this call in the lane view, zoomed to it';
    axis.addEventListener('click', () => showOnAxis(r.seq).catch((error) => showError(error.message)));
    const box = el('div', 'axis-link');
    box.append(axis);
    body.append(box);
  }
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
  for (const change of pendingFor(r.seq)) {
    const box = el('div', 'pending');
    box.append(el('h4', '', 'pending change'), pendingChangeBox(change));
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
    setFilters(noFilters());
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
    else if (S.view === 'sides') closeSideDetail();
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
  if (S.view === 'sides') {
    if (sides.onKey(e)) e.preventDefault();
    return;
  }
  if (S.view === 'list') {
    if (e.key === 'j' || e.key === 'ArrowDown') { moveList(1); e.preventDefault(); }
    else if (e.key === 'k' || e.key === 'ArrowUp') { moveList(-1); e.preventDefault(); }
    else if (e.key === 'Enter' && S.listSelected >= 0) { S.listRows[S.listSelected].click(); e.preventDefault(); }
    return;
  }
  if (S.view !== 'cassette') return;
  if (e.key === 't' || e.key === 'l') {
    e.preventDefault();
    setMode(e.key === 'l' ? 'lanes' : 'table').catch((error) => showError(error.message));
    return;
  }
  if (S.mode === 'lanes' && e.key !== '/') {
    if (lanes.onKey(e)) e.preventDefault();
    return;
  }
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
  for (const id of ['f-worker', 'f-boundary', 'f-kind', 'f-status', 'f-error']) {
    $(id).addEventListener('change', () => applyFilters().catch((error) => showError(error.message)));
  }
  $('f-q').addEventListener('input', () => {
    clearTimeout(S.searchTimer);
    S.searchTimer = setTimeout(() => applyFilters().catch((error) => showError(error.message)), 150);
  });
  $('detail-close').addEventListener('click', closeDetail);
  $('v-table').addEventListener('click', () => setMode('table').catch((error) => showError(error.message)));
  $('v-lanes').addEventListener('click', () => setMode('lanes').catch((error) => showError(error.message)));
  $('home').addEventListener('click', (e) => {
    if (document.body.dataset.mode === 'report') { e.preventDefault(); location.hash = 'list'; }
  });
  $('pair-open').addEventListener('click', openPair);
  if (document.body.dataset.mode === 'report' && $('st-sides')) {
    setLoading('Unpacking the report…');
    S.api = new EmbeddedSides(JSON.parse(await unpack('st-sides')));
    S.sidesOnly = true;
  } else if (document.body.dataset.mode === 'report') {
    setLoading('Unpacking the report…');
    const packed = JSON.parse(await unpack('st-rows'));
    packed.columns.text = JSON.parse(await unpack('st-text'));
    S.api = new EmbeddedApi(packed);
  } else {
    S.api = new HttpApi();
    $('home').href = '#';
    const { against } = await S.api.list();
    S.against = against || null; // serve A --against B: the page opens on them
  }
  window.addEventListener('hashchange', route);
  await route();
}

start().catch((error) => { setLoading(''); showError(error.message); });
