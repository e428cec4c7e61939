// Two runs side by side (`sessiontape serve A --against B`, `sessiontape report A --against
// B`, or the list page's "side by side"): A's lanes, then B's, on one time axis (each
// run's time since its own start). Calls both runs made (same worker and boundary, same
// request: sessiontape/cli/_sides.py) are drawn muted and joined by a line; a call only
// one run made is drawn in its run's colour; the fork point (the branch's recorded fork,
// else where the runs part first) is a dashed line across each run's lanes.
//
// The two tapes become one lane model: B's rows follow A's, its seqs moved past A's last
// (so the model's searches by seq still work) and its workers after A's. Everything the
// lane view does (zoom, pan, labels, the tip) works on it unchanged.

const SIDE_GAP = 30; // px under A's last lane: where B's name is written
const ONLY_A = 3; // the status of a call only A made, and of one only B made
const ONLY_B = 4;
const MATCHED_HUE = '#a3afbf';

// One lane model's columns out of the two sides' (see _sides.py, sides_data).
function mergeSides(data) {
  const a = data.a.columns; const b = data.b.columns;
  const nA = a.seq.length;
  const offset = (nA ? a.seq[nA - 1] : 0) + 1;
  const paired = [new Set(), new Set()];
  for (const [sa, sb] of data.pairs) { paired[0].add(sa); paired[1].add(sb); }
  const callKind = a.kinds.map((k) => CALL_KINDS.has(k));
  const status = (cols, i, side) => {
    if (callKind[cols.kind[i]] && !paired[side].has(cols.seq[i])) return side ? ONLY_B : ONLY_A;
    return cols.status[i] === 1 ? 1 : STATUS_OK;
  };
  const wa = a.workers.length;
  const shift = (parent) => (parent === null ? null : parent + offset);
  const cols = {
    seq: a.seq.concat(b.seq.map((s) => s + offset)),
    worker: a.worker.concat(b.worker.map((w) => w + wa)),
    kind: a.kind.concat(b.kind),
    parent: a.parent.concat(b.parent.map(shift)),
    start: a.start.concat(b.start),
    duration: a.duration.concat(b.duration),
    status: a.seq.map((_, i) => status(a, i, 0)).concat(b.seq.map((_, i) => status(b, i, 1))),
    text: a.text.concat(b.text),
    workers: a.workers.map((w) => 'A · ' + w).concat(b.workers.map((w) => 'B · ' + w)),
    kinds: a.kinds,
    error_at: [], error_class: [], error_classes: [],
  };
  const cassette = { workers: cols.workers, duration_ns: Math.max(data.a.duration_ns, data.b.duration_ns) };
  return { cols, cassette, offset, nA, wa };
}

class SidesView extends LaneView {
  constructor() {
    super('sides', 'sides-canvas', 'sides-tip');
    this.data = null;
    this.selected = -1;
  }
  show(data) {
    this.data = data;
    const merged = mergeSides(data);
    this.merged = merged;
    const model = new LaneModel(merged.cols, merged.cassette);
    const height = model.laneHeight.bind(model);
    model.laneHeight = (l) => height(l) + (l === merged.wa - 1 ? SIDE_GAP : 0);
    this.model = model;
    this.loading = Promise.resolve(model);
    // Each pair as the bars it joins.
    this.pairBars = data.pairs.map(([sa, sb]) => [model.barOfSeq(sa), model.barOfSeq(sb + merged.offset)])
      .filter(([ba, bb]) => ba >= 0 && bb >= 0);
    this.selected = -1;
    this.whole();
    const ds = this.canvas.dataset;
    ds.lanes = String(merged.cols.workers.length);
    ds.lanesA = String(merged.wa);
    ds.lanesB = String(merged.cols.workers.length - merged.wa);
    ds.bars = String(model.count);
    ds.pairs = String(this.pairBars.length);
    let onlyA = 0; let onlyB = 0;
    for (let k = 0; k < model.count; k++) {
      if (model.status[k] === ONLY_A) onlyA++;
      else if (model.status[k] === ONLY_B) onlyB++;
    }
    ds.onlyA = String(onlyA); ds.onlyB = String(onlyB);
    const fork = data.fork;
    ds.forkSeq = fork ? String(fork.a_seq !== null ? fork.a_seq : fork.b_seq) : '';
    ds.forkSource = fork ? fork.source : '';
  }
  async ensure() { return this.model; }
  // The side a row is of, and its seq in its own tape.
  sideOf(i) { return i < this.merged.nA ? ['A', this.model.cols.seq[i]] : ['B', this.model.cols.seq[i] - this.merged.offset]; }
  seqLabel(i) { const [side, seq] = this.sideOf(i); return `${side} seq ${seq}`; }
  laneColor() { return MATCHED_HUE; }
  statusColor(status, colors) {
    if (status === ONLY_A) return colors.onlyA;
    if (status === ONLY_B) return colors.onlyB;
    return super.statusColor(status, colors);
  }
  selectedBar() { return this.selected; }
  open(b) {
    this.selected = b;
    this.schedule();
    renderSideDetail(b);
  }
  // The pairs, joined, and the fork marks: drawn where the lane view draws a chaos schedule.
  drawSchedule(scale, W, tops) {
    const ctx = this.ctx;
    const m = this.model;
    const colors = this.colors;
    const wa = this.merged.wa;
    const [endA, topB] = this.gap(tops);
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, AXIS_H, W, this.height - AXIS_H); ctx.clip();
    // B's band: its name, in the gap under A's lanes.
    ctx.fillStyle = colors.soft;
    ctx.fillRect(0, endA, this.width, SIDE_GAP);
    ctx.fillStyle = colors.line;
    ctx.fillRect(0, endA, this.width, 1);
    ctx.fillRect(0, topB - 1, this.width, 1);
    let joined = 0;
    const seen = new Set();
    ctx.strokeStyle = 'rgba(61, 90, 128, 0.45)'; ctx.lineWidth = 1;
    ctx.beginPath();
    for (const [ba, bb] of this.pairBars) {
      const [xa, , ya] = this.barBox(ba, scale, tops);
      const [xb, , yb] = this.barBox(bb, scale, tops);
      if ((xa < GUTTER && xb < GUTTER) || (xa > GUTTER + W && xb > GUTTER + W)) continue;
      const key = `${Math.round(xa)},${Math.round(xb)},${m.lane[ba]},${m.lane[bb]}`;
      if (seen.has(key)) continue;
      seen.add(key);
      ctx.moveTo(xa + 0.5, ya + TRACK_H - 3); ctx.lineTo(xb + 0.5, yb);
      joined++;
    }
    ctx.stroke();
    const fork = this.data.fork;
    const ds = this.canvas.dataset;
    ds.forkXA = ''; ds.forkXB = '';
    if (fork) {
      const xa = fork.a_ns === null ? null : GUTTER + (fork.a_ns - this.t0) * scale;
      const xb = fork.b_ns === null ? null : GUTTER + (fork.b_ns - this.t0) * scale;
      ctx.strokeStyle = colors.fork; ctx.lineWidth = 2; ctx.setLineDash([6, 4]);
      ctx.beginPath();
      if (xa !== null) { ctx.moveTo(xa, AXIS_H - this.y); ctx.lineTo(xa, endA); }
      if (xa !== null && xb !== null) ctx.lineTo(xb, topB);
      else if (xb !== null) ctx.moveTo(xb, topB);
      if (xb !== null) ctx.lineTo(xb, topB + this.sideHeight(wa));
      ctx.stroke();
      ctx.setLineDash([]);
      if (xa !== null) ds.forkXA = xa.toFixed(1);
      if (xb !== null) ds.forkXB = xb.toFixed(1);
    }
    ctx.restore();
    ds.joined = String(joined);
    ds.sideTop = String(Math.round(topB + this.y - AXIS_H));
    return joined;
  }
  // Where A's lanes end and B's begin (canvas px): the band between them is SIDE_GAP high.
  gap(tops) {
    const wa = this.merged.wa;
    const topB = AXIS_H - this.y + (wa < tops.length ? tops[wa] : this.totalHeight());
    return [topB - SIDE_GAP, topB];
  }
  sideHeight(from) {
    let h = 0;
    for (let l = from; l < this.model.workers.length; l++) h += this.model.laneHeight(l);
    return h;
  }
  drawChrome(step, scale, W, tops, colors) {
    super.drawChrome(step, scale, W, tops, colors);
    const ctx = this.ctx;
    // B's name in the band under A's lanes (over the joins that cross it).
    const [endA] = this.gap(tops);
    if (endA + SIDE_GAP > AXIS_H && endA < this.height) {
      ctx.save();
      ctx.beginPath(); ctx.rect(0, AXIS_H, this.width, this.height - AXIS_H); ctx.clip();
      ctx.fillStyle = colors.soft;
      ctx.fillRect(0, endA + 1, GUTTER - 1, SIDE_GAP - 2);
      ctx.font = 'bold 12px system-ui, sans-serif'; ctx.textBaseline = 'middle'; ctx.fillStyle = colors.fg;
      const b = this.data.b;
      ctx.fillText(`B · ${b.name} (run ${b.run_id})`, 8, endA + SIDE_GAP / 2);
      ctx.restore();
    }
    const fork = this.data.fork;
    const x = fork && fork.a_ns !== null ? GUTTER + (fork.a_ns - this.t0) * scale : null;
    if (x === null || x < GUTTER || x > GUTTER + W) return;
    // The fork's name on the axis, in a pill.
    const text = `fork · seq ${fork.a_seq}`;
    ctx.font = 'bold 11px system-ui, sans-serif';
    const w = ctx.measureText(text).width + 10;
    const left = Math.min(x - w / 2, GUTTER + W - w);
    ctx.fillStyle = colors.fork;
    ctx.fillRect(Math.max(GUTTER, left), 4, w, AXIS_H - 8);
    ctx.fillStyle = '#ffffff'; ctx.textBaseline = 'middle';
    ctx.fillText(text, Math.max(GUTTER, left) + 5, AXIS_H / 2);
  }
}

// ---- the page ----------------------------------------------------------------------------

const sides = new SidesView();

async function openSides(a, b) {
  S.view = 'sides';
  S.name = null;
  $('list-view').hidden = true;
  $('cassette-view').hidden = true;
  $('sides-detail').hidden = true;
  setLoading(a === null ? 'Unpacking the two runs…' : `Loading ${a} and ${b}…`);
  const data = await S.api.sides(a, b);
  setLoading('');
  $('crumb').textContent = `${data.a.name} ⟷ ${data.b.name}`;
  document.title = `sessiontape: ${data.a.name} and ${data.b.name} side by side`;
  fillSidesHead(data);
  $('sides-view').hidden = false;
  sides.show(data);
  sides.resize();
  $('sides').focus({ preventScroll: true });
}

function swatch(cls, text) {
  const span = el('span', 'legend');
  span.append(el('i', cls), document.createTextNode(text));
  return span;
}

function fillSidesHead(data) {
  const side = (key, label) => {
    const s = data[key];
    return `${label}: ${s.name} (run ${s.run_id}, ${plural(s.calls, 'call')}, ${fmtDur(s.duration_ns)}${s.crashed ? ', crashed' : ''})`;
  };
  $('sides-a').textContent = side('a', 'A');
  $('sides-b').textContent = side('b', 'B');
  const legend = $('sides-legend');
  legend.textContent = '';
  legend.append(
    swatch('matched', `${plural(data.pairs.length, 'call')} both made, joined`),
    swatch('only-a', `${plural(data.only_a, 'call')} only A made`),
    swatch('only-b', `${plural(data.only_b, 'call')} only B made`),
  );
  const fork = data.fork;
  $('sides-fork').textContent = fork ? fork.text : 'the runs do not part: every call matches';
  $('sides-fork').className = fork ? 'fork' : '';
}

function renderSideDetail(b) {
  const m = sides.model;
  const i = m.index[b];
  const [side, seq] = sides.sideOf(i);
  const box = $('sides-detail');
  box.textContent = '';
  box.append(el('h3', '', `${side} · seq ${seq} · ${m.workers[m.lane[b]].slice(4)}`));
  box.append(el('p', 'mono', m.cols.text[i]));
  const pair = sides.pairBars.find(([ba, bb]) => ba === b || bb === b);
  let match;
  if (pair) {
    const other = pair[0] === b ? pair[1] : pair[0];
    const [otherSide, otherSeq] = sides.sideOf(m.index[other]);
    match = `the same call in ${otherSide}: seq ${otherSeq}, ${fmtRel(m.start[other])}`;
  } else {
    match = `only ${side} made this call`;
  }
  box.append(el('p', '', `${fmtRel(m.start[b])}, took ${fmtDur(m.end[b] - m.start[b])}; ${match}`));
  if (document.body.dataset.mode === 'serve') {
    const link = el('a', '', `open seq ${seq} in ${side}'s page`);
    link.href = `#c=${encodeURIComponent(sides.data[side.toLowerCase()].name)}&seq=${seq}`;
    box.append(link);
  }
  const opened = box.hidden;
  box.hidden = false;
  if (opened) sides.resize(); // the panel took part of the canvas's width
}

function closeSideDetail() {
  if ($('sides-detail').hidden) return;
  $('sides-detail').hidden = true;
  sides.selected = -1;
  sides.resize();
}

// The list page's "side by side": any two of the cassettes served.
function fillPairForm(cassettes) {
  const form = $('pair-form');
  form.hidden = cassettes.length < 2 || document.body.dataset.mode !== 'serve';
  if (form.hidden) return;
  for (const [id, pick] of [['pair-a', 0], ['pair-b', 1]]) {
    const select = $(id);
    select.textContent = '';
    for (const c of cassettes) select.append(new Option(c.name, c.name));
    select.selectedIndex = pick;
  }
}

function openPair() {
  const a = $('pair-a').value; const b = $('pair-b').value;
  if (a === b) { showError('Pick two different cassettes to show side by side.'); return; }
  location.hash = `a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
}

// `sessiontape report A --against B`: the page's own copy of GET /api/sides.
class EmbeddedSides {
  constructor(data) { this.data = data; this.fast = true; }
  async sides() { return this.data; }
  async list() { return { cassettes: [] }; }
}
