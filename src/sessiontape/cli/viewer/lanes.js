// The lane view: one lane per worker along one shared axis of recorded time, each call a
// bar from its start to its end, a call made inside another drawn under it (one track
// per nesting level), time when nothing ran left as a gap. Drawn on a canvas, and only
// what is in view: each lane's tracks hold their bars sorted by start with the running
// maximum of their ends, so the first bar in view is a binary search away, and where
// many bars fall into one pixel column one mark is drawn and the rest are jumped over
// (another binary search). A frame costs about the pixels in view, not the bars in the
// tape: a million-entry tape pans and zooms as smoothly as a small one.
//
// The geometry comes from the same columns as the table's rows (the report's embedded
// copy, or GET .../columns from `sessiontape serve`), packed here into typed arrays.

// The model (LaneModel, the searches, the ticks) is in lanemodel.js, joined before this.

class LaneView {
  // The ids of its box, canvas and tip: the side-by-side view (sides.js) has its own.
  constructor(box = 'lanes', canvas = 'lane-canvas', tip = 'lane-tip') {
    this.box = $(box);
    this.canvas = $(canvas);
    this.tip = $(tip);
    this.ctx = this.canvas.getContext('2d');
    this.model = null;
    this.loading = null;
    this.t0 = 0; this.t1 = 1; this.y = 0;
    this.hover = -1;
    this.frame = 0;
    this.frames = [];
    this.spans = []; // the time in view of each frame kept
    this.labels = new Map(); // row index -> text, for the server's pages
    this.drag = null;
    const c = this.canvas;
    c.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    c.addEventListener('mousedown', (e) => this.onDown(e));
    window.addEventListener('mousemove', (e) => this.onMove(e));
    window.addEventListener('mouseup', (e) => this.onUp(e));
    c.addEventListener('mouseleave', () => { this.hover = -1; this.tip.hidden = true; this.schedule(); });
    c.addEventListener('dblclick', (e) => { const b = this.hit(e); if (b >= 0) this.zoomTo(b); });
  }
  reset() { this.model = null; this.loading = null; this.labels.clear(); this.scheduleBars = null; }
  async ensure() {
    if (this.model) return this.model;
    if (!this.loading) {
      this.loading = S.api.columns(S.name).then((cols) => {
        this.model = new LaneModel(cols, S.cassette);
        this.whole();
        this.canvas.dataset.lanes = String(S.cassette.workers.length);
        this.canvas.dataset.bars = String(this.model.count);
        return this.model;
      });
    }
    return this.loading;
  }
  plotWidth() { return Math.max(1, this.width - GUTTER); }
  whole() {
    const pad = this.model.duration * 0.01;
    this.t0 = -pad; this.t1 = this.model.duration + pad; this.y = 0;
  }
  setSpan(t0, t1) {
    // What was under the pointer has moved: its summary goes until the pointer moves.
    this.hover = -1;
    this.tip.hidden = true;
    const span = Math.max(MIN_SPAN_NS, t1 - t0);
    const mid = (t0 + t1) / 2;
    const max = this.model.duration * 1.2;
    const s = Math.min(span, max);
    let a = mid - s / 2;
    a = Math.max(-this.model.duration * 0.1, Math.min(a, this.model.duration * 1.1 - s));
    this.t0 = a; this.t1 = a + s;
    this.schedule();
  }
  zoomAt(factor, x) {
    const t = this.t0 + ((x - GUTTER) / this.plotWidth()) * (this.t1 - this.t0);
    this.setSpan(t - (t - this.t0) * factor, t + (this.t1 - t) * factor);
  }
  pan(fraction) {
    const shift = (this.t1 - this.t0) * fraction;
    this.setSpan(this.t0 + shift, this.t1 + shift);
  }
  zoomTo(b) {
    const m = this.model;
    const span = Math.max(MIN_SPAN_NS * 5, m.end[b] - m.start[b]);
    this.setSpan(m.start[b] - span * 0.1, m.end[b] + span * 0.1);
    this.reveal(m.lane[b]);
  }
  reveal(lane) {
    let top = 0;
    for (let l = 0; l < lane; l++) top += this.model.laneHeight(l);
    const room = this.height - AXIS_H;
    if (top < this.y || top + this.model.laneHeight(lane) > this.y + room) this.y = Math.max(0, top - 8);
    this.clampY();
  }
  totalHeight() {
    let h = 0;
    for (let l = 0; l < this.model.workers.length; l++) h += this.model.laneHeight(l);
    return h;
  }
  clampY() { this.y = Math.max(0, Math.min(this.y, this.totalHeight() - (this.height - AXIS_H) + 8)); }
  async focusSeq(seq) {
    await this.ensure();
    const b = this.model.barOfSeq(seq);
    if (b >= 0) this.zoomTo(b);
    this.schedule();
  }
  resize() {
    const dpr = window.devicePixelRatio || 1;
    this.width = this.box.clientWidth;
    this.height = this.box.clientHeight;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    this.canvas.style.width = this.width + 'px';
    this.canvas.style.height = this.height + 'px';
    this.dpr = dpr;
    this.schedule();
  }
  schedule() {
    if (this.frame || this.box.hidden) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }
  // ---- input ----
  onWheel(e) {
    if (!this.model) return;
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.height : 1;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const d = (e.shiftKey ? e.deltaY : e.deltaX) * unit;
      this.pan(d / this.plotWidth());
    } else {
      this.zoomAt(Math.exp(e.deltaY * unit * 0.002), Math.max(GUTTER, x));
    }
  }
  onDown(e) {
    if (!this.model || e.button !== 0) return;
    this.drag = { x: e.clientX, y: e.clientY, t0: this.t0, t1: this.t1, top: this.y, moved: false };
    this.box.focus({ preventScroll: true });
    e.preventDefault();
  }
  onMove(e) {
    if (!this.model) return;
    const d = this.drag;
    if (d) {
      const dx = e.clientX - d.x; const dy = e.clientY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (d.moved) {
        const shift = (-dx / this.plotWidth()) * (d.t1 - d.t0);
        this.t0 = d.t0 + shift; this.t1 = d.t1 + shift;
        this.setSpan(this.t0, this.t1);
        this.y = d.top - dy;
        this.clampY();
        this.tip.hidden = true;
        return;
      }
    }
    if (e.target !== this.canvas) return;
    const b = this.hit(e);
    if (b !== this.hover) { this.hover = b; this.schedule(); }
    this.showTip(b, e);
  }
  onUp(e) {
    const d = this.drag;
    this.drag = null;
    if (!d || d.moved || e.target !== this.canvas) return;
    const b = this.hit(e);
    if (b >= 0) this.open(b);
  }
  open(b) {
    const seq = this.model.cols.seq[this.model.index[b]];
    showDetail(seq).then(() => this.schedule(), (error) => showError(error.message));
  }
  onKey(e) {
    const keys = {
      w: () => this.zoomAt(0.7, GUTTER + this.plotWidth() / 2), '+': () => this.zoomAt(0.7, GUTTER + this.plotWidth() / 2),
      '=': () => this.zoomAt(0.7, GUTTER + this.plotWidth() / 2),
      s: () => this.zoomAt(1 / 0.7, GUTTER + this.plotWidth() / 2), '-': () => this.zoomAt(1 / 0.7, GUTTER + this.plotWidth() / 2),
      a: () => this.pan(-0.2), ArrowLeft: () => this.pan(-0.2), d: () => this.pan(0.2), ArrowRight: () => this.pan(0.2),
      ArrowUp: () => { this.y -= 40; this.clampY(); this.schedule(); },
      ArrowDown: () => { this.y += 40; this.clampY(); this.schedule(); },
      0: () => { this.whole(); this.schedule(); }, Home: () => { this.whole(); this.schedule(); },
      f: () => { const b = this.selectedBar(); if (b >= 0) this.zoomTo(b); },
      Enter: () => { const b = this.hover >= 0 ? this.hover : this.selectedBar(); if (b >= 0) this.open(b); },
    };
    const action = keys[e.key];
    if (!action || !this.model) return false;
    action();
    return true;
  }
  selectedBar() {
    if (S.detailSeq === null || !this.model) return -1;
    return this.model.barOfSeq(S.detailSeq);
  }
  // The bar under the pointer, or -1.
  hit(e) {
    if (!this.model) return -1;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left; const y = e.clientY - rect.top;
    if (x < GUTTER || y < AXIS_H) return -1;
    const m = this.model;
    let top = AXIS_H - this.y;
    let lane = -1;
    for (let l = 0; l < m.workers.length; l++) {
      const h = m.laneHeight(l);
      if (y >= top && y < top + h) { lane = l; break; }
      top += h;
    }
    if (lane < 0) return -1;
    const depth = Math.floor((y - top - LANE_PAD / 2) / TRACK_H);
    const track = depth >= 0 ? m.track(lane, depth) : null;
    if (!track) return -1;
    const perPx = (this.t1 - this.t0) / this.plotWidth();
    const t = this.t0 + (x - GUTTER) * perPx;
    const slack = 2 * perPx;
    // The last bar starting before t (+ slack), then back while bars may still cover t.
    let j = lowerBound(track.start, t + slack, 0, track.start.length) - 1;
    let best = -1; let bestLen = Infinity;
    for (; j >= 0 && track.maxEnd[j] >= t - slack; j--) {
      const b = track.ids[j];
      if (m.start[b] <= t + slack && m.end[b] >= t - slack && m.end[b] - m.start[b] < bestLen) { best = b; bestLen = m.end[b] - m.start[b]; }
      if (track.start[j] < t - slack && best >= 0) break;
    }
    return best;
  }
  text(b) {
    const i = this.model.index[b];
    const cols = this.model.cols;
    if (cols.text) return cols.text[i];
    const known = this.labels.get(i);
    if (known !== undefined) return known;
    this.fetchLabels(i);
    return null;
  }
  fetchLabels(i) {
    const page = Math.floor(i / PAGE);
    if (this.labels.has(-1 - page)) return;
    this.labels.set(-1 - page, null);
    S.api.page(S.name, noFilters(), page * PAGE, PAGE).then((found) => {
      found.rows.forEach((row, k) => this.labels.set(page * PAGE + k, row.text));
      this.schedule();
    }, () => {});
  }
  showTip(b, e) {
    if (b < 0) { this.tip.hidden = true; this.canvas.style.cursor = 'grab'; return; }
    this.canvas.style.cursor = 'pointer';
    const m = this.model;
    const i = m.index[b];
    const cols = m.cols;
    const text = this.text(b);
    const cls = m.errorClassOf(i);
    this.tip.textContent = `${this.seqLabel(i)} · ${m.workers[m.lane[b]]} · ${fmtRel(m.start[b])} · took ${fmtDur(m.end[b] - m.start[b])}` +
      (cls ? ` · ${cls}` : '') + (m.status[b] === 2 ? ' · mismatch' : '') + ' · ' + (text === null ? '…' : text);
    this.tip.hidden = false;
    const rect = this.box.getBoundingClientRect();
    const x = Math.min(e.clientX - rect.left + 14, Math.max(0, this.width - this.tip.offsetWidth - 4));
    this.tip.style.left = x + 'px';
    this.tip.style.top = (e.clientY - rect.top + 16) + 'px';
    this.canvas.dataset.hoverSeq = String(cols.seq[i]);
  }
  seqLabel(i) { return `seq ${this.model.cols.seq[i]}`; }
  // A lane's colour, and the colour a bar of a status other than ok is drawn over in.
  laneColor(l) { return LANE_HUES[l % LANE_HUES.length]; }
  statusColor(status, colors) { return status === 2 ? colors.mismatch : colors.error; }
  // ---- drawing ----
  draw() {
    if (!this.model || this.box.hidden) return;
    const began = performance.now();
    const ctx = this.ctx;
    const m = this.model;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    const W = this.plotWidth();
    const scale = W / (this.t1 - this.t0);
    // Read once: getComputedStyle in a frame would make the browser recompute styles.
    const colors = this.colors || (this.colors = {
      line: cssVar('--line'), dim: cssVar('--dim'), soft: cssVar('--soft'), fg: cssVar('--fg'),
      error: cssVar('--error'), mismatch: cssVar('--mismatch'), sel: cssVar('--accent'),
      onlyA: cssVar('--only-a'), onlyB: cssVar('--only-b'), fork: cssVar('--fork'),
    });
    const step = tickStep(this.t1 - this.t0, W, 110);
    // grid lines under the bars
    ctx.fillStyle = colors.soft;
    const firstTick = Math.ceil(this.t0 / step) * step;
    for (let t = firstTick; t <= this.t1; t += step) ctx.fillRect(GUTTER + Math.round((t - this.t0) * scale), AXIS_H, 1, this.height);
    let drawn = 0;
    const labels = [];
    const tops = [];
    let top = AXIS_H - this.y;
    for (let l = 0; l < m.workers.length; l++) {
      const h = m.laneHeight(l);
      tops.push(top + this.y - AXIS_H);
      if (top + h > AXIS_H && top < this.height) {
        ctx.fillStyle = l % 2 ? '#fbfcfd' : '#ffffff';
        ctx.fillRect(GUTTER, top, W, h);
        ctx.fillStyle = this.laneColor(l);
        for (let d = 0; d < Math.max(1, m.levels[l]); d++) {
          const track = m.track(l, d);
          if (track) drawn += this.drawTrack(track, top + LANE_PAD / 2 + d * TRACK_H, scale, W, labels);
        }
        ctx.fillStyle = colors.line;
        ctx.fillRect(0, top + h - 1, this.width, 1);
      }
      top += h;
    }
    this.drawMarks(scale, W, tops, colors);
    this.drawLabels(labels);
    const scheduled = this.drawSchedule(scale, W, tops);
    this.drawCrashes(scale, W, tops, colors);
    this.drawChrome(step, scale, W, tops, colors);
    const took = performance.now() - began;
    this.frames.push(took);
    this.spans.push(this.t1 - this.t0);
    if (this.frames.length > FRAMES_KEPT) { this.frames.shift(); this.spans.shift(); }
    const ds = this.canvas.dataset;
    ds.t0 = String(this.t0); ds.t1 = String(this.t1); ds.y = String(this.y);
    ds.drawn = String(drawn); ds.frameMs = took.toFixed(2); ds.frames = String(this.frames.length);
    ds.maxFrameMs = Math.max(...this.frames).toFixed(2);
    ds.allFrames = this.frames.map((f) => f.toFixed(2)).join(',');
    ds.allSpans = this.spans.map((t) => t.toFixed(0)).join(',');
    ds.laneTops = tops.map((t) => Math.round(t)).join(',');
    ds.plotLeft = String(GUTTER); ds.axisHeight = String(AXIS_H); ds.trackHeight = String(TRACK_H);
    ds.lanePad = String(LANE_PAD); ds.scheduled = String(scheduled);
  }
  drawTrack(track, y, scale, W, labels) {
    const ctx = this.ctx;
    const m = this.model;
    const ids = track.ids; const starts = track.start;
    let j = lowerBound(track.maxEnd, this.t0, 0, ids.length);
    let drawn = 0;
    const h = TRACK_H - 3;
    // Bars narrower than a pixel are gathered into runs of pixel columns, each run one
    // rectangle: zoomed out, a lane of a million calls is a few hundred rectangles.
    let runFrom = -1; let runTo = -1;
    const flush = () => { if (runTo > runFrom) ctx.fillRect(GUTTER + runFrom, y, runTo - runFrom, h); runFrom = runTo = -1; };
    while (j < ids.length) {
      const s = starts[j];
      if (s > this.t1) break;
      const b = ids[j];
      const x0 = (s - this.t0) * scale;
      const x1 = (m.end[b] - this.t0) * scale;
      if (x1 - x0 < 1.5) {
        const px = Math.max(-1, Math.floor(x0));
        if (px > runTo) { flush(); runFrom = px; }
        if (px + 1.5 > runTo) runTo = px + 1.5;
        drawn++;
        // The rest of the bars starting in this pixel column are jumped over, up to the
        // first that reaches past it (a long call right after a short one is drawn).
        const next = gallop(starts, this.t0 + (px + 1) / scale, j + 1, ids.length);
        const covered = this.t0 + (px + 1.5) / scale;
        j = next > j + 1 && track.maxEnd[next - 1] > covered
          ? lowerBound(track.maxEnd, covered, j + 1, next) : next;
        continue;
      }
      if (x1 - x0 < 3) { // too narrow for a gap to show: part of the run too
        const px = Math.max(-1, Math.floor(x0));
        if (px > runTo) { flush(); runFrom = px; }
        if (x1 > runTo) runTo = Math.min(x1, W + 2);
        drawn++;
        j++;
        continue;
      }
      flush();
      const a = Math.max(x0, -2); const z = Math.min(x1, W + 2);
      ctx.fillRect(GUTTER + a, y, Math.max(1.5, z - a - 1), h);
      drawn++;
      if (z - a > 44) labels.push([b, a, z, y]);
      j++;
    }
    flush();
    return drawn;
  }
  // Each label cut to the characters that fit its bar (a monospace font: no measuring,
  // and no clipping path per label, which would cost more than the bars themselves).
  drawLabels(labels) {
    const ctx = this.ctx;
    ctx.font = LABEL_FONT;
    ctx.fillStyle = '#ffffff';
    ctx.textBaseline = 'middle';
    for (const [b, a, z, y] of labels) {
      const left = Math.max(a, 0);
      const room = Math.floor((z - left - 8) / LABEL_CHAR_PX);
      if (room < 3) continue;
      const text = this.text(b);
      if (!text) continue;
      const cut = text.indexOf(' -> ');
      const short = cut < 0 ? text : text.slice(0, cut);
      ctx.fillText(short.length > room ? short.slice(0, room - 1) + '…' : short, GUTTER + left + 4, y + (TRACK_H - 3) / 2 + 0.5);
    }
  }
  barBox(b, scale, tops) {
    const m = this.model;
    const x0 = GUTTER + (m.start[b] - this.t0) * scale;
    const x1 = GUTTER + (m.end[b] - this.t0) * scale;
    const y = AXIS_H - this.y + tops[m.lane[b]] + LANE_PAD / 2 + m.depth[b] * TRACK_H;
    return [x0, Math.max(x1, x0 + 2), y];
  }
  // Application errors (status error) and replay mismatches, over their bars.
  drawMarks(scale, W, tops, colors) {
    const ctx = this.ctx;
    const m = this.model;
    const marked = m.marked;
    if (!marked.length && S.detailSeq === null && this.hover < 0) return;
    const starts = m.markStart;
    const lastPx = new Map();
    let j = lowerBound(m.markMaxEnd, this.t0, 0, marked.length);
    while (j < marked.length && starts[j] <= this.t1) {
      const b = marked[j++];
      if (m.end[b] < this.t0) continue;
      const [x0, x1, y] = this.barBox(b, scale, tops);
      if (y + TRACK_H < AXIS_H || y > this.height) continue;
      const key = m.lane[b] * MAX_DEPTH + m.depth[b];
      const px = Math.floor(x0);
      if (x1 - x0 < 3 && lastPx.get(key) === px) continue;
      lastPx.set(key, px);
      const mismatch = m.status[b] === 2;
      ctx.fillStyle = this.statusColor(m.status[b], colors);
      ctx.fillRect(Math.max(x0, GUTTER), y, Math.max(2, Math.min(x1, GUTTER + W) - Math.max(x0, GUTTER) - 1), TRACK_H - 3);
      if (mismatch) {
        ctx.strokeStyle = colors.mismatch; ctx.lineWidth = 2;
        ctx.strokeRect(Math.max(x0, GUTTER) - 1, y - 1, Math.max(3, Math.min(x1, GUTTER + W) - Math.max(x0, GUTTER) + 1), TRACK_H - 1);
        ctx.fillStyle = colors.mismatch;
        ctx.font = 'bold 11px system-ui, sans-serif';
        ctx.fillText('✗', Math.max(x0, GUTTER) - 10, y + TRACK_H / 2 + 1);
      }
    }
    for (const b of [this.selectedBar(), this.hover]) {
      if (b < 0) continue;
      const [x0, x1, y] = this.barBox(b, scale, tops);
      ctx.strokeStyle = b === this.hover ? colors.dim : colors.fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(Math.max(x0, GUTTER - 2) - 1, y - 1, Math.min(x1, GUTTER + W + 2) - Math.max(x0, GUTTER - 2) + 1, TRACK_H - 1);
    }
  }
  // A chaos receipt's failing schedule: its calls numbered in the order they ran, joined.
  // Returns how many of its order marks are in view.
  drawSchedule(scale, W, tops) {
    const schedule = S.cassette.receipt && S.cassette.receipt.schedule;
    if (!schedule || !schedule.length) return 0;
    if (!this.scheduleBars) {
      const seqs = this.model.cols.seq;
      this.scheduleBars = schedule.slice().sort((a, b) => a.order - b.order).map((item) => {
        const i = lowerBound(seqs, item.seq, 0, seqs.length);
        return { order: item.order, b: i < seqs.length && seqs[i] === item.seq ? this.model.barOf[i] : -1 };
      }).filter((item) => item.b >= 0);
    }
    const ctx = this.ctx;
    const points = this.scheduleBars.map(({ order, b }) => {
      const [x0, , y] = this.barBox(b, scale, tops);
      return { order, x: x0, y: y + (TRACK_H - 3) / 2 };
    });
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, AXIS_H, W, this.height - AXIS_H); ctx.clip();
    ctx.strokeStyle = 'rgba(61, 90, 128, 0.55)'; ctx.lineWidth = 1.5; ctx.setLineDash([4, 3]);
    ctx.beginPath();
    points.forEach((p, k) => { if (k) ctx.lineTo(p.x, p.y); else ctx.moveTo(p.x, p.y); });
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.font = 'bold 10px system-ui, sans-serif'; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
    let shown = 0;
    for (const p of points) {
      if (p.x < GUTTER - 10 || p.x > GUTTER + W + 10) continue;
      shown += 1;
      ctx.fillStyle = '#3d5a80'; ctx.beginPath(); ctx.arc(p.x, p.y, 8, 0, 2 * Math.PI); ctx.fill();
      ctx.fillStyle = '#ffffff'; ctx.fillText(String(p.order), p.x, p.y + 0.5);
    }
    ctx.restore();
    return shown;
  }
  drawCrashes(scale, W, tops, colors) {
    const ctx = this.ctx;
    for (const crash of this.model.crashes) {
      const x = GUTTER + (crash.t - this.t0) * scale;
      if (x < GUTTER || x > GUTTER + W) continue;
      const y = AXIS_H - this.y + tops[crash.lane];
      ctx.fillStyle = colors.mismatch;
      ctx.fillRect(x - 1, y, 2, this.model.laneHeight(crash.lane) - 2);
    }
  }
  // The axis on top and the lane names on the left, drawn last over the bars.
  drawChrome(step, scale, W, tops, colors) {
    const ctx = this.ctx;
    const m = this.model;
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, GUTTER, this.height);
    ctx.fillStyle = colors.soft;
    ctx.fillRect(0, 0, this.width, AXIS_H);
    ctx.fillStyle = colors.line;
    ctx.fillRect(0, AXIS_H - 1, this.width, 1);
    ctx.fillRect(GUTTER - 1, 0, 1, this.height);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = colors.dim;
    ctx.fillText(`${fmtDur(this.t1 - this.t0)} in view`, 8, AXIS_H / 2);
    for (let t = Math.ceil(this.t0 / step) * step; t <= this.t1; t += step) {
      const x = GUTTER + Math.round((t - this.t0) * scale);
      ctx.fillStyle = colors.line;
      ctx.fillRect(x, AXIS_H - 6, 1, 6);
      ctx.fillStyle = colors.dim;
      ctx.fillText(fmtAxis(t, step), x + 3, AXIS_H / 2 - 2);
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(0, AXIS_H, GUTTER - 1, this.height - AXIS_H); ctx.clip();
    ctx.font = '12px system-ui, sans-serif';
    for (let l = 0; l < m.workers.length; l++) {
      const y = AXIS_H - this.y + tops[l];
      if (y + m.laneHeight(l) < AXIS_H || y > this.height) continue;
      ctx.fillStyle = this.laneColor(l);
      ctx.fillRect(6, y + LANE_PAD / 2 + 2, 4, TRACK_H - 7);
      ctx.fillStyle = colors.fg;
      const name = m.workers[l];
      ctx.fillText(name.length > 17 ? name.slice(0, 16) + '…' : name, 16, y + LANE_PAD / 2 + (TRACK_H - 3) / 2);
    }
    ctx.restore();
  }
}

const lanes = new LaneView();
