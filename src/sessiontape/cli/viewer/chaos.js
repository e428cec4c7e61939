// A chaos receipt's lead: what the failing schedule found, and where its failure became
// inevitable.
//
// The explanation (the receipt's chaos.explain, written under --sessiontape-chaos-explain)
// is drawn as a line above the lanes: for each number k of the schedule's decisions kept, the share of schedules that
// failed the same way; the threshold of "certain" dashed; the point of no return marked,
// and the decision it is named by (the two calls whose order it fixed) beside it.

// A receipt of chaos schedules: the page leads with the schedule shown (the first that
// failed), what it found, and the command that runs it again.
function fillChaos(chaos) {
  const box = $('chaos-box');
  box.hidden = !chaos;
  fillExplain(chaos && chaos.explain);
  if (!chaos) return;
  box.className = `v-${chaos.verdict}`;
  const f = chaos.failure;
  let head = `chaos schedule ${chaos.verdict}`;
  if (f) head += `: ${f.kind}${f.worker ? ` in worker '${f.worker}'` : ''}: ${f.message}`;
  else if (chaos.inadmissible) head += ` (not a failure): ${chaos.inadmissible}`;
  $('chaos-head').textContent = head;
  const what = [`seed ${chaos.seed}`, `strategy ${chaos.strategy}`];
  if (chaos.strategy === 'pct') what.push(`depth ${chaos.depth}`);
  let ran = `${plural(chaos.calls, 'call')} ran`;
  if (chaos.steps !== undefined) ran += ` in ${plural(chaos.steps, 'step')}`;
  if (f && f.after !== undefined) ran += `; it failed after call #${f.after}`;
  what.push(ran);
  if (chaos.schedules > 1) {
    let of = `${chaos.failed} of ${chaos.schedules} schedules of this cassette failed`;
    if (chaos.inadmissible_schedules) of += `, ${chaos.inadmissible_schedules} were inadmissible`;
    what.push(of);
  }
  $('chaos-what').textContent = what.join(' · ');
  $('chaos-command').textContent = chaos.command || '';
  $('chaos-again').hidden = !chaos.command;
}

const CHART = { width: 760, height: 160, left: 44, right: 96, top: 32, bottom: 30 };

function svg(tag, attrs, text) {
  // The namespace of the page's own <svg> (the page names no address, not even this one).
  const node = document.createElementNS($('explain-chart').namespaceURI, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function fillExplain(explain) {
  const box = $('explain-box');
  box.hidden = !explain;
  if (!explain) return;
  $('explain-verdict').textContent = explain.verdict;
  const estimates = explain.estimates.slice().sort((a, b) => a.kept - b.kept);
  $('explain-ran').textContent = `${plural(explain.schedules, 'schedule')} ran: up to ${explain.samples} per estimate ` +
    `(seed ${explain.seed}), ${plural(estimates.length, 'estimate')} (bisection over the decisions kept)`;
  const chart = $('explain-chart');
  chart.textContent = '';
  const { width, height, left, right, top, bottom } = CHART;
  chart.setAttribute('viewBox', `0 0 ${width} ${height}`);
  chart.setAttribute('width', String(width));
  chart.setAttribute('height', String(height));
  const last = Math.max(1, explain.decisions);
  const x = (k) => left + (k / last) * (width - left - right);
  const y = (p) => top + (1 - p) * (height - top - bottom);
  const axis = svg('g', { class: 'axis' });
  for (const p of [0, 0.5, 1]) {
    axis.append(svg('line', { x1: left, x2: width - right, y1: y(p), y2: y(p), class: 'grid' }));
    axis.append(svg('text', { x: left - 6, y: y(p) + 4, 'text-anchor': 'end' }, `${p * 100}%`));
  }
  const ticks = new Set([0, last, explain.point]);
  for (const k of [...ticks].sort((a, b) => a - b)) {
    axis.append(svg('text', { x: x(k), y: height - bottom + 16, 'text-anchor': 'middle' }, String(k)));
  }
  axis.append(svg('text', { x: width - right + 18, y: height - bottom + 16, class: 'label' }, 'decisions kept'));
  chart.append(axis);
  chart.append(svg('line', { x1: left, x2: width - right, y1: y(explain.threshold), y2: y(explain.threshold),
    class: 'threshold', 'data-p': explain.threshold }));
  chart.append(svg('text', { x: width - right + 8, y: y(explain.threshold) + 4, class: 'label' },
    `certain (${Math.round(explain.threshold * 100)}%)`));
  // The point of no return: a line at decision `point`, named at its top.
  const px = x(explain.point);
  chart.append(svg('line', { id: 'explain-point', x1: px, x2: px, y1: top - 10, y2: height - bottom,
    'data-k': explain.point }));
  const name = explain.point ? `point of no return: decision ${explain.point} of ${explain.decisions}` : 'certain before any decision';
  const anchor = px > width * 0.7 ? 'end' : 'start';
  chart.append(svg('text', { x: px + (anchor === 'end' ? -6 : 6), y: top - 14, 'text-anchor': anchor, class: 'point' }, name));
  const points = estimates.map((e) => [x(e.kept), y(e.runs ? e.failed / e.runs : 0)]);
  chart.append(svg('polyline', { points: points.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(' '), class: 'line' }));
  estimates.forEach((e, i) => {
    const p = e.runs ? e.failed / e.runs : 0;
    const dot = svg('circle', { cx: points[i][0], cy: points[i][1], r: 4, class: e.doomed ? 'dot doomed' : 'dot',
      'data-k': e.kept, 'data-p': p.toFixed(3) });
    dot.append(svg('title', {}, `k = ${e.kept}: ${e.failed} of ${e.runs} schedules failed the same way (${Math.round(p * 100)}%)` +
      (e.inadmissible ? `, ${e.inadmissible} inadmissible` : '')));
    chart.append(dot);
  });
  chart.dataset.points = String(estimates.length);
}
