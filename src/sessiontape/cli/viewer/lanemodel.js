// The lane view's model: the bars of one cassette in typed arrays, their tracks (one per
// worker and nesting level, sorted by start, with the running maximum of their ends), and
// the helpers both the lane view (lanes.js) and the side-by-side view (sides.js) draw with.

const GUTTER = 132; // px: the lane names
const AXIS_H = 26; // px: the time axis
const TRACK_H = 18; // px: one nesting level
const LANE_PAD = 8; // px between lanes
const MAX_DEPTH = 12; // deeper calls share the last track
const MIN_SPAN_NS = 200; // the closest zoom: 200 ns across the plot
const CALL_KINDS = new Set(['process', 'agent_turn', 'store_mutation', 'call']);
const STATUS_OK = 0;
const LABEL_FONT = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
const LABEL_CHAR_PX = 6.8; // the width of one character of LABEL_FONT, about
const FRAMES_KEPT = 1000; // the last frames' drawing times, in the canvas's data-*

function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

// lowerBound from lo, probing 1, 2, 4... ahead first: the next bar in view is usually near.
function gallop(arr, value, lo, hi) {
  let step = 1;
  let prev = lo;
  while (lo + step < hi && arr[lo + step] < value) { prev = lo + step; step *= 2; }
  return lowerBound(arr, value, prev, Math.min(hi, lo + step + 1));
}

function lowerBound(arr, value, lo, hi) {
  while (lo < hi) { const mid = (lo + hi) >>> 1; if (arr[mid] < value) lo = mid + 1; else hi = mid; }
  return lo;
}

// The bars of one cassette, as typed arrays (bar b is row index[b]).
class LaneModel {
  constructor(cols, cassette) {
    const n = cols.seq.length;
    const isCall = cols.kinds.map((k) => CALL_KINDS.has(k));
    const errorKind = cols.kinds.indexOf('error');
    let m = 0;
    for (let i = 0; i < n; i++) if (isCall[cols.kind[i]]) m++;
    this.count = m;
    this.cols = cols;
    this.workers = cassette.workers;
    this.index = new Int32Array(m);
    this.start = new Float64Array(m);
    this.end = new Float64Array(m);
    this.lane = new Uint16Array(m);
    this.depth = new Uint8Array(m);
    this.status = new Uint8Array(m);
    this.barOf = new Int32Array(n).fill(-1);
    this.crashes = [];
    const seqs = cols.seq;
    let last = 0;
    for (let i = 0, b = 0; i < n; i++) {
      const kind = cols.kind[i];
      if (!isCall[kind]) {
        if (kind === errorKind) this.crashes.push({ t: cols.start[i], lane: cols.worker[i], row: i });
        continue;
      }
      this.index[b] = i;
      this.start[b] = cols.start[i];
      this.end[b] = cols.start[i] + cols.duration[i];
      if (this.end[b] > last) last = this.end[b];
      this.lane[b] = cols.worker[i];
      this.status[b] = cols.status[i];
      this.barOf[i] = b;
      // Nesting on its own lane: one level under a parent of the same worker.
      const parent = cols.parent[i];
      let depth = 0;
      if (parent !== null) {
        const p = lowerBound(seqs, parent, 0, i);
        const pb = p < i && seqs[p] === parent ? this.barOf[p] : -1;
        if (pb >= 0 && this.lane[pb] === this.lane[b]) depth = Math.min(MAX_DEPTH - 1, this.depth[pb] + 1);
      }
      this.depth[b] = depth;
      b++;
    }
    this.duration = Math.max(1, cassette.duration_ns || 0, last);
    this.errorClass = new Int8Array(n).fill(-1); // sparse in the columns
    (cols.error_at || []).forEach((at, k) => { this.errorClass[at] = cols.error_class[k]; });
    this.buildTracks();
    this.marked = this.sortedBy((b) => this.status[b] !== STATUS_OK);
    this.markStart = Float64Array.from(this.marked, (b) => this.start[b]);
    this.markMaxEnd = new Float64Array(this.marked.length);
    let maxEnd = -Infinity;
    this.marked.forEach((b, k) => { if (this.end[b] > maxEnd) maxEnd = this.end[b]; this.markMaxEnd[k] = maxEnd; });
  }
  barOfSeq(seq) {
    const seqs = this.cols.seq;
    const i = lowerBound(seqs, seq, 0, seqs.length);
    return i < seqs.length && seqs[i] === seq ? this.barOf[i] : -1;
  }
  errorClassOf(i) { return this.errorClass[i] < 0 ? null : this.cols.error_classes[this.errorClass[i]]; }
  sortedBy(keep) {
    const out = [];
    for (let b = 0; b < this.count; b++) if (keep(b)) out.push(b);
    out.sort((a, b) => this.start[a] - this.start[b]);
    return Int32Array.from(out);
  }
  buildTracks() {
    const lanes = this.workers.length;
    this.levels = new Uint8Array(lanes); // tracks per lane
    const sizes = new Map();
    const key = (lane, depth) => lane * MAX_DEPTH + depth;
    for (let b = 0; b < this.count; b++) {
      const k = key(this.lane[b], this.depth[b]);
      sizes.set(k, (sizes.get(k) || 0) + 1);
      if (this.depth[b] + 1 > this.levels[this.lane[b]]) this.levels[this.lane[b]] = this.depth[b] + 1;
    }
    const fill = new Map();
    this.tracks = new Map();
    for (const [k, size] of sizes) { this.tracks.set(k, { ids: new Int32Array(size) }); fill.set(k, 0); }
    for (let b = 0; b < this.count; b++) {
      const k = key(this.lane[b], this.depth[b]);
      const at = fill.get(k);
      this.tracks.get(k).ids[at] = b;
      fill.set(k, at + 1);
    }
    for (const track of this.tracks.values()) {
      let ids = track.ids;
      let sorted = true;
      for (let j = 1; j < ids.length && sorted; j++) if (this.start[ids[j]] < this.start[ids[j - 1]]) sorted = false;
      if (!sorted) ids = track.ids = Int32Array.from(Array.from(ids).sort((a, b) => this.start[a] - this.start[b]));
      track.start = new Float64Array(ids.length);
      track.maxEnd = new Float64Array(ids.length); // the latest end of the bars up to j
      let maxEnd = -Infinity;
      for (let j = 0; j < ids.length; j++) {
        track.start[j] = this.start[ids[j]];
        if (this.end[ids[j]] > maxEnd) maxEnd = this.end[ids[j]];
        track.maxEnd[j] = maxEnd;
      }
    }
    this.key = key;
  }
  track(lane, depth) { return this.tracks.get(this.key(lane, depth)); }
  laneHeight(lane) { return Math.max(1, this.levels[lane]) * TRACK_H + LANE_PAD; }
}

// Ticks every 1, 2 or 5 of a power of ten, about `px` apart; labels in the run's time.
function tickStep(spanNs, widthPx, px) {
  const raw = spanNs / Math.max(1, widthPx / px);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const f of [1, 2, 5, 10]) if (f * power >= raw) return f * power;
  return 10 * power;
}
// A tick's time since the session started, in the unit of the step (+250ms, +12µs) or,
// past the first second, in seconds with the decimals the step needs (+52758.8s).
function fmtAxis(ns, step) {
  if (Math.abs(ns) >= 1e9 || step >= 1e9) {
    const decimals = Math.max(0, Math.min(9, -Math.floor(Math.log10(step / 1e9) + 1e-9)));
    return (ns < 0 ? '-' : '+') + (Math.abs(ns) / 1e9).toFixed(decimals) + 's';
  }
  const [unit, name] = step >= 1e6 ? [1e6, 'ms'] : step >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / unit) + 1e-9)));
  return (ns < 0 ? '-' : '+') + (Math.abs(ns) / unit).toFixed(decimals) + name;
}
