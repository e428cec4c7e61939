// A tape's pending changes (--sessiontape-update=pending), read-only: each change with its
// category, the call it touches, each field old and new side by side, and the commands
// that accept or reject it. The page never decides anything itself.

function pendingChangeBox(c) {
  const box = el('div', 'pending-change');
  const head = el('p', 'pending-line');
  const at = c.seq === null ? 'a new call' : `seq ${c.seq}`;
  head.append(el('span', 'chip cat-' + c.category, c.category),
    document.createTextNode(` ${c.change} at ${at} (${c.worker}, ${c.boundary}) `),
    el('code', 'null', c.id));
  if (c.decision) head.append(document.createTextNode(' '), el('span', 'chip', c.decision + 'ed'));
  box.append(head);
  if (c.fields.length) {
    const table = el('table', 'diff');
    const tr = el('tr');
    tr.append(el('th', '', 'field'), el('th', '', 'recorded (old)'), el('th', '', 'proposed (new)'));
    table.append(tr);
    for (const f of c.fields) {
      const row = el('tr');
      const old = el('td', 'old'); old.append(el('pre', '', f.old === null ? '—' : f.old));
      const now = el('td', 'new'); now.append(el('pre', '', f.new === null ? '—' : f.new));
      row.append(el('td', 'mono', f.field || '(the call)'), old, now);
      table.append(row);
    }
    box.append(table);
  }
  const entries = el('details');
  entries.append(el('summary', '', 'the entries, old and new'));
  const sides = el('div', 'pending-sides');
  const old = el('pre', 'old', c.old.join('\n') || '(none: the call is created)');
  const now = el('pre', 'new', c.new.join('\n') || '(none: the call is dropped)');
  sides.append(old, now);
  entries.append(sides);
  box.append(entries);
  const commands = el('p', 'pending-commands');
  commands.append(el('span', 'null', 'accept: '), el('code', '', c.accept),
    el('span', 'null', '  reject: '), el('code', '', c.reject));
  box.append(commands);
  return box;
}

function fillPending(c) {
  const box = $('pending-box');
  const list = $('pending-list');
  list.textContent = '';
  const p = c.pending;
  box.hidden = !p;
  if (!p) return;
  if (p.error) {
    $('pending-head').textContent = 'pending changes that no longer apply';
    list.append(el('p', 'next', p.error));
    return;
  }
  const open = p.changes.filter((x) => !x.decision).length;
  $('pending-head').textContent = `${plural(open, 'pending change')} (${p.path}); review them: ${p.review}`;
  for (const change of p.changes) {
    const item = pendingChangeBox(change);
    if (change.seq !== null) {
      const jump = el('button', 'axis', 'show the entry');
      jump.type = 'button';
      jump.addEventListener('click', () => jumpTo(change.seq));
      item.querySelector('.pending-line').append(document.createTextNode(' '), jump);
    }
    list.append(item);
  }
}

// The pending changes that touch the entry ``seq``, for its details.
function pendingFor(seq) {
  const p = S.cassette && S.cassette.pending;
  if (!p || p.error) return [];
  return p.changes.filter((c) => c.seqs.includes(seq));
}
