// The Portico dashboard. Everything it shows or changes goes through the
// admin API, which the dashboard serves to a signed-in browser at api/v1/
// (/admin/v1/ with the admin token added on the server). Charts are SVG
// drawn here; no libraries, no build step.
'use strict';

const cfg = JSON.parse(document.getElementById('config').textContent);
const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];
const SVG = 'http://www.w3.org/2000/svg';
const svgTags = new Set(['svg', 'g', 'rect', 'line', 'text', 'title']);

// el builds an element: attrs are attributes, except text (its text) and
// on* (listeners); kids are appended.
function el(tag, attrs = {}, ...kids) {
  const e = svgTags.has(tag) ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  e.append(...kids.flat().filter((k) => k !== null && k !== undefined));
  return e;
}

const number = new Intl.NumberFormat('en-US');
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const fmt = (n) => number.format(n);

// api calls the admin API; a change carries the session's CSRF token.
async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (method !== 'GET') opts.headers['X-CSRF-Token'] = cfg.csrf;
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch('api/v1/' + path, opts);
  if (r.status === 401) {
    location.assign('./'); // the session ended: back to the sign-in form
    throw new Error('signed out');
  }
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || `${r.status} ${r.statusText}`);
  return data;
}

function showStatus(msg) {
  const s = $('#status');
  s.textContent = msg;
  s.hidden = !msg;
}

// days are the charts' UTC dates, oldest first, ending today.
function lastDays(today, n) {
  const t = Date.parse(today + 'T00:00:00Z');
  return Array.from({ length: n }, (_, i) => new Date(t - (n - 1 - i) * 864e5).toISOString().slice(0, 10));
}

const state = { metric: 'calls', group: 'method', usage: { method: [], key: [] }, keys: [], nodes: null, days: [], armed: new Set() };

async function refresh() {
  const main = $('main');
  main.setAttribute('aria-busy', 'true');
  try {
    const keys = await api('GET', 'keys?today=true');
    // Today by the meter's clock once a key tells it, else the page's.
    const today = keys.find((k) => k.today)?.today.day || cfg.today;
    const days = lastDays(today > cfg.today ? today : cfg.today, cfg.days);
    // Usage summed per method and per key: far fewer rows than per key
    // and method. The two reads may be a usage flush apart.
    const range = `from=${days[0]}&to=${days.at(-1)}`;
    const [byMethod, byKey, nodes, webhooks] = await Promise.all([
      api('GET', `usage?group=method&${range}`),
      api('GET', `usage?group=key&${range}`),
      api('GET', 'nodes').catch(() => null),
      api('GET', 'webhooks').catch(() => []),
    ]);
    Object.assign(state, { keys, days, nodes, webhooks, usage: { method: byMethod, key: byKey } });
    showStatus('');
    drawUsage();
    drawKeys();
    drawWebhooks();
    drawNodes();
    $('#updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    showStatus('Could not load: ' + e.message);
  } finally {
    main.setAttribute('aria-busy', 'false');
  }
}

// unchanged reports whether what is about to be drawn as part is what was
// drawn last: then the DOM stays as it is, and with it the user's focus,
// selection and the button under the pointer.
const drawn = new Map();
function unchanged(part, ...data) {
  const sig = JSON.stringify(data);
  if (drawn.get(part) === sig) return true;
  drawn.set(part, sig);
  return false;
}

// ---- usage ----

const sum = (rows, field) => rows.reduce((a, r) => a + r[field], 0);

function setNumber(sel, n) {
  const e = $(sel);
  e.textContent = fmt(n);
  e.dataset.value = n;
}

function drawUsage() {
  const { usage, days, metric, group } = state;
  if (!days.length) return; // not loaded yet
  const today = days.at(-1);
  const todays = usage.key.filter((r) => r.day === today);
  setNumber('#today-calls', sum(todays, 'calls'));
  setNumber('#today-credits', sum(todays, 'credits'));
  setNumber('#month-calls', sum(usage.key, 'calls'));
  setNumber('#month-credits', sum(usage.key, 'credits'));

  // At most 8 series, one per colour: beyond that the 7 largest over
  // the period, and the rest as one.
  const rows = usage[group];
  const totals = new Map();
  for (const r of rows) totals.set(r[group], (totals.get(r[group]) || 0) + r[metric]);
  const names = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || a.localeCompare(b));
  const rest = new Set(names.length > 8 ? names.splice(7) : []);
  const series = names.map((n) => ({ label: n, total: totals.get(n) }));
  if (rest.size) series.push({ label: `${rest.size} others`, total: [...rest].reduce((a, n) => a + totals.get(n), 0) });
  const index = (name) => (rest.has(name) ? series.length - 1 : names.indexOf(name));
  const cells = new Map(days.map((d) => [d, new Array(series.length).fill(0)]));
  for (const r of rows) {
    const c = cells.get(r.day);
    if (c) c[index(r[group])] += r[metric];
  }

  const title = `${metric === 'calls' ? 'Calls' : 'Credits'} per day by ${group}`;
  drawChart($('#chart'), title, days, series, cells, metric);
  $('#legend').replaceChildren(...series.map((s, i) =>
    el('li', {}, el('span', { class: `sw s${i}` }), `${s.label} `, el('span', { class: 'muted', text: fmt(s.total) }))));
  drawBalances(todays);
}

// niceTop rounds v up to a value whose quarters read well.
function niceTop(v) {
  if (v <= 0) return 4;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 4, 6, 8, 10].map((m) => m * p).find((t) => t >= v);
}

// drawChart draws stacked bars, one per day: cells maps a day to the
// value of each series.
function drawChart(svg, title, days, series, cells, metric) {
  // On a phone the chart is drawn taller, so that its bars and labels
  // stay readable once scaled down to the screen.
  const narrow = svg.clientWidth > 0 && svg.clientWidth < 560;
  const W = 720, H = narrow ? 520 : 260, L = narrow ? 80 : 52, R = 8, T = 16, B = narrow ? 44 : 28;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const totals = days.map((d) => cells.get(d).reduce((a, b) => a + b, 0));
  const top = niceTop(Math.max(...totals));
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const kids = [el('title', { id: 'chart-title', text: title })];
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    kids.push(el('line', { class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v) }),
      el('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', text: compact.format(v) }));
  }
  const bw = (W - L - R) / days.length;
  days.forEach((day, i) => {
    const x = L + i * bw + bw * 0.15, w = bw * 0.7;
    const g = el('g', { class: 'day', 'data-day': day, 'data-total': totals[i] },
      el('title', { text: `${day}: ${fmt(totals[i])} ${metric}` }));
    let acc = 0;
    cells.get(day).forEach((v, s) => {
      if (!v) return;
      g.append(el('rect', { class: `s${s}`, x, width: w, y: y(acc + v), height: Math.max(y(acc) - y(acc + v), 0.5),
        'data-series': series[s].label, 'data-value': v },
        el('title', { text: `${day} · ${series[s].label}: ${fmt(v)} ${metric}` })));
      acc += v;
    });
    if ((days.length - 1 - i) % 7 === 0) {
      const last = i === days.length - 1;
      g.append(el('text', { x: last ? x + w : x + w / 2, y: H - 8, 'text-anchor': last ? 'end' : 'middle', text: day.slice(5) }));
    }
    kids.push(g);
  });
  if (!totals.some(Boolean)) {
    kids.push(el('text', { class: 'empty', x: (L + W) / 2, y: H / 2, 'text-anchor': 'middle', text: 'No calls in these 30 days yet' }));
  }
  svg.replaceChildren(...kids);
}

// fill replaces a table's rows; each cell gets its column's header as
// data-label, which a phone shows in place of the hidden header.
function fill(table, rows, empty) {
  const labels = $$('thead th', table).map((th) => th.textContent);
  const body = $('tbody', table);
  if (!rows.length) {
    body.replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: labels.length, text: empty })));
    return;
  }
  body.replaceChildren(...rows.map(({ attrs, cells }) => el('tr', attrs || {}, cells.map((c, i) => {
    c.dataset.label = labels[i] || '';
    return c;
  }))));
}

const td = (content, cls) => el('td', { class: cls }, content);

function meter(used, daily) {
  const left = daily > 0 ? Math.max(0, 1 - used / daily) : 0;
  const bar = el('span');
  bar.style.width = `${Math.min(100, (used / Math.max(daily, 1)) * 100)}%`;
  return el('div', { class: left < 0.1 ? 'meter low' : 'meter', title: `${fmt(used)} of ${fmt(daily)} used` }, bar);
}

function drawBalances(todays) {
  const byKey = new Map(todays.map((r) => [r.key, r]));
  fill($('#balances'), state.keys.filter((k) => k.today).map((k) => {
    const u = byKey.get(k.name) || { calls: 0, credits: 0 };
    return { attrs: { 'data-key': k.name }, cells: [td(k.name), td(fmt(u.calls), 'num calls'), td(fmt(u.credits), 'num credits'),
      td(meter(k.today.used, k.daily_credits)), td(fmt(k.today.remaining), 'num remaining')] };
  }), 'No active keys');
}

// ---- keys ----

const allows = (k) => {
  const parts = [['methods', k.allow_methods], ['networks', k.allow_networks], ['origins', k.allow_origins],
    ['contracts', k.allow_addresses], ['user agents', k.allow_user_agents]]
    .filter(([, l]) => l && l.length).map(([what, l]) => `${what}: ${l.join(', ')}`);
  return parts.length ? parts.join('; ') : 'everything';
};

// guards says what a call with the key must carry and how it is bounded
// (docs/keys.md).
const guards = (k) => {
  const parts = [];
  if (k.has_secret) parts.push(k.prev_secret_until ? `secret (old one until ${k.prev_secret_until.slice(0, 16).replace('T', ' ')})` : 'secret');
  if (k.jwt_keys?.length) parts.push(`JWT: ${k.jwt_keys.map((j) => j.name).join(', ')}`);
  if (k.max_concurrent) parts.push(`${fmt(k.max_concurrent)} in flight`);
  if (k.requests_per_second) parts.push(`${fmt(k.requests_per_second)} calls/s`);
  if (k.logs?.max_block_range) parts.push(`logs: ${fmt(k.logs.max_block_range)} blocks`);
  return parts.join('; ');
};

const keyPath = (name) => 'keys/' + encodeURIComponent(name);

function drawKeys() {
  if ($('#key-table form')) return; // a balance is being edited: keep the row
  if (unchanged('keys', state.keys, [...state.armed])) return;
  fill($('#key-table'), state.keys.map((k) => ({ attrs: { 'data-key': k.name }, cells: [
    td(el('strong', { text: k.name })),
    td(fmt(k.daily_credits), 'num daily'),
    td(k.rate_per_second ? fmt(k.rate_per_second) : 'no limit', 'num'),
    td(k.today ? fmt(k.today.remaining) : '–', 'num remaining'),
    td(el('div', {}, el('span', { text: allows(k) }), el('div', { class: 'muted small guards', text: guards(k) })), 'allows'),
    td(k.created_at.slice(0, 10)),
    td(el('div', { class: 'row-actions' },
      el('button', { type: 'button', class: 'edit', text: 'Balance', onclick: (ev) => editBalance(ev.target.closest('tr'), k) }),
      el('button', { type: 'button', class: 'settings', text: 'Settings', onclick: (ev) => editRules(ev.target.closest('tr'), k) }),
      revokeButton(k))),
  ] })), 'No active keys: create one above');
}

function editBalance(row, k) {
  const cell = $('td.daily', row);
  const input = el('input', { type: 'number', min: 0, step: 1, name: 'daily', value: k.daily_credits, 'aria-label': 'Daily credits', required: true });
  const rate = el('input', { type: 'number', min: 0, step: 1, name: 'rate', value: k.rate_per_second, 'aria-label': 'Rate, credits a second' });
  const form = el('form', { class: 'inline' }, input, rate,
    el('button', { type: 'submit', class: 'primary', text: 'Save' }),
    el('button', { type: 'button', text: 'Cancel', onclick: () => { form.remove(); drawn.delete('keys'); drawKeys(); } }));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('PATCH', keyPath(k.name), { daily_credits: Number(input.value), rate_per_second: Number(rate.value || 0) });
      form.remove();
      drawn.delete('keys');
      await refresh();
    } catch (e) {
      showStatus(`Balance of ${k.name}: ${e.message}`);
    }
  });
  cell.replaceChildren(form);
  input.focus();
}

const listOf = (s) => s.split(/[\s,]+/).filter(Boolean);

// jwtFields are the inputs of up to 3 public keys: a name (the tokens'
// kid) and the key pasted as PEM.
function jwtFields(keys = []) {
  return [0, 1, 2].map((i) => el('div', { class: 'jwt-key' },
    el('label', {}, `Public key ${i + 1} name (kid) `, el('input', { name: `jwt-name-${i}`, maxlength: 64, value: keys[i]?.name || '' })),
    el('label', {}, 'PEM ', el('textarea', { name: `jwt-pem-${i}`, rows: 3, placeholder: '-----BEGIN PUBLIC KEY-----', text: keys[i]?.pem || '' }))));
}

function readJWT(form) {
  const keys = [];
  for (const i of [0, 1, 2]) {
    const name = form.elements[`jwt-name-${i}`].value.trim(), pem = form.elements[`jwt-pem-${i}`].value.trim();
    if (name || pem) keys.push({ name, pem });
  }
  return keys;
}

// editRules edits a key's allowlists, JWT keys, bounds and log limit, and
// rotates or drops its secret; a new secret is shown once.
function editRules(row, k) {
  const cell = $('td.allows', row);
  const input = (name, value, attrs = {}) => el('input', { name, value: value ?? '', ...attrs });
  const form = el('form', { class: 'rules grid' },
    el('label', { class: 'wide' }, 'Methods ', input('methods', (k.allow_methods || []).join(', '))),
    el('label', { class: 'wide' }, 'Networks ', input('networks', (k.allow_networks || []).join(', '))),
    el('label', { class: 'wide' }, 'Origins ', input('origins', (k.allow_origins || []).join(', '))),
    el('label', { class: 'wide' }, 'Contract addresses ', input('addresses', (k.allow_addresses || []).join(', '), { placeholder: 'any; or 0x…, 0x…' })),
    el('label', { class: 'wide' }, 'User-Agents (substrings) ', input('agents', (k.allow_user_agents || []).join(', '), { placeholder: 'any; or viem/, MyApp/' })),
    el('label', {}, 'Calls in flight ', input('concurrent', k.max_concurrent || 0, { type: 'number', min: 0, step: 1 })),
    el('label', {}, 'Calls a second ', input('rps', k.requests_per_second || 0, { type: 'number', min: 0, step: 1 })),
    el('label', {}, 'eth_getLogs block range ', input('logrange', k.logs?.max_block_range || 0, { type: 'number', min: 0, step: 1 })),
    el('fieldset', { class: 'wide' }, el('legend', { text: 'JWT: tokens signed by one of these keys (RS256 or ES256)' }), ...jwtFields(k.jwt_keys),
      el('label', {}, 'Max token lifetime, seconds ', input('jwtlife', k.jwt_max_lifetime_seconds || '', { type: 'number', min: 0, step: 1, placeholder: '3600' })),
      el('label', {}, 'Audience ', input('jwtaud', k.jwt_audience || '', { placeholder: k.name }))),
    el('p', { class: 'error wide', role: 'alert', hidden: true }),
    el('div', { class: 'wide row-actions' },
      el('button', { type: 'submit', class: 'primary', text: 'Save' }),
      el('button', { type: 'button', class: 'rotate', text: k.has_secret ? 'Rotate secret' : 'Add a secret', onclick: () => rotateSecret(k) }),
      k.has_secret ? el('button', { type: 'button', class: 'remove-secret', text: 'Remove secret', onclick: () => removeSecret(k) }) : '',
      el('button', { type: 'button', text: 'Cancel', onclick: () => { form.remove(); drawn.delete('keys'); drawKeys(); } })));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (name) => form.elements[name].value.trim();
    const jwt = readJWT(form);
    const body = {
      allow_methods: listOf(v('methods')), allow_networks: listOf(v('networks')), allow_origins: listOf(v('origins')),
      allow_addresses: listOf(v('addresses')), allow_user_agents: listOf(v('agents')),
      max_concurrent: Number(v('concurrent') || 0), requests_per_second: Number(v('rps') || 0),
      logs: { ...(k.logs || {}), max_block_range: Number(v('logrange') || 0) },
      jwt_keys: jwt, jwt_max_lifetime_seconds: jwt.length ? Number(v('jwtlife') || 0) : 0, jwt_audience: jwt.length ? v('jwtaud') : '',
    };
    try {
      await api('PATCH', keyPath(k.name), body);
      form.remove();
      drawn.delete('keys');
      await refresh();
    } catch (e) {
      const err = $('p.error', form);
      err.textContent = e.message;
      err.hidden = false;
    }
  });
  cell.replaceChildren(form);
}

async function rotateSecret(k) {
  try {
    const out = await api('POST', keyPath(k.name) + '/secret', {});
    showSecret(k.name, out.secret, out.prev_secret_until);
    drawn.delete('keys');
    await refresh();
  } catch (e) {
    showStatus(`Secret of ${k.name}: ${e.message}`);
  }
}

async function removeSecret(k) {
  try {
    await api('DELETE', keyPath(k.name) + '/secret');
    $('#key-table form')?.remove();
    drawn.delete('keys');
    await refresh();
  } catch (e) {
    showStatus(`Secret of ${k.name}: ${e.message}`);
  }
}

// showSecret shows a key's new secret, once, with a copy button.
function showSecret(name, secret, prevUntil) {
  $('#new-secret-name').textContent = name;
  $('#new-secret-value').textContent = secret;
  $('#new-secret-grace').textContent = prevUntil ? `The previous secret keeps working until ${prevUntil}.` : '';
  $('#new-secret').hidden = false;
  $('#new-secret').scrollIntoView({ block: 'nearest' });
}

// revokeButton asks once more, for 5 seconds, then revokes. Being asked
// is kept in state.armed, so that a refresh meanwhile does not undo it.
function revokeButton(k) {
  const armed = state.armed.has(k.name);
  return el('button', { type: 'button', class: armed ? 'revoke danger' : 'revoke', text: armed ? 'Confirm revoke' : 'Revoke',
    onclick: () => revoke(k) });
}

async function revoke(k) {
  if (!state.armed.has(k.name)) {
    state.armed.add(k.name);
    drawKeys();
    setTimeout(() => { state.armed.delete(k.name); drawKeys(); }, 5000);
    return;
  }
  state.armed.delete(k.name);
  try {
    await api('DELETE', keyPath(k.name));
    await refresh();
  } catch (e) {
    showStatus(`Revoke ${k.name}: ${e.message}`);
  }
}

// ---- webhooks ----

const webhookPath = (w) => `${keyPath(w.key)}/webhooks/${encodeURIComponent(w.id)}`;

function drawWebhooks() {
  if (unchanged('webhooks', state.webhooks)) return;
  fill($('#webhook-table'), (state.webhooks || []).map((w) => ({ attrs: { 'data-webhook': w.id }, cells: [
    td(w.key),
    td(w.network),
    td(w.event),
    td(el('code', { text: w.url })),
    td(fmt(w.delivered), 'num delivered'),
    td(w.cursor ? `${fmt(w.cursor.number)} ${w.cursor.hash.slice(0, 10)}…` : '–'),
    td(el('div', {}, el('span', { class: w.state === 'paused' ? 'state paused' : 'state', text: w.state }),
      w.paused_reason ? el('div', { class: 'muted small reason', text: w.paused_reason }) : null), 'state-cell'),
    td(el('div', { class: 'row-actions' },
      w.state === 'paused' ? el('button', { type: 'button', class: 'resume', text: 'Resume', onclick: () => webhookAction(w, 'POST', '/resume') }) : null,
      el('button', { type: 'button', class: 'delete', text: 'Delete', onclick: () => webhookAction(w, 'DELETE', '') }))),
  ] })), 'No webhooks: add one with POST /admin/v1/keys/{name}/webhooks or portico keys webhooks add');
}

async function webhookAction(w, method, suffix) {
  try {
    await api(method, webhookPath(w) + suffix);
    await refresh();
  } catch (e) {
    showStatus(`Webhook ${w.id}: ${e.message}`);
  }
}

function setupCreate() {
  $('#create-networks').replaceChildren(...cfg.networks.map((n) =>
    el('label', {}, el('input', { type: 'checkbox', name: 'network', value: n.name }), ` ${n.name}`)));
  const form = $('#create-form');
  const list = (s) => s.split(/[\s,]+/).filter(Boolean);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (name) => form.elements[name].value.trim();
    const body = { name: v('name') };
    if (v('daily') !== '') body.daily_credits = Number(v('daily'));
    if (v('rate') !== '') body.rate_per_second = Number(v('rate'));
    const methods = list(v('methods')), origins = list(v('origins'));
    const nets = $$('input[name=network]:checked', form).map((c) => c.value);
    if (methods.length) body.allow_methods = methods;
    if (nets.length) body.allow_networks = nets;
    if (origins.length) body.allow_origins = origins;
    const addresses = list(v('addresses')), agents = list(v('agents'));
    if (addresses.length) body.allow_addresses = addresses;
    if (agents.length) body.allow_user_agents = agents;
    if (v('concurrent') !== '') body.max_concurrent = Number(v('concurrent'));
    if (v('rps') !== '') body.requests_per_second = Number(v('rps'));
    if (v('logrange') !== '') body.logs = { max_block_range: Number(v('logrange')) };
    if (form.elements.secret.checked) body.with_secret = true;
    const jwt = readJWT(form);
    if (jwt.length) body.jwt_keys = jwt;
    const err = $('#create-error');
    try {
      const k = await api('POST', 'keys', body);
      err.hidden = true;
      form.reset();
      $('#create').open = false;
      showNewKey(k);
      await refresh();
    } catch (e) {
      err.textContent = e.message;
      err.hidden = false;
    }
  });
}

const copyButton = (target) => el('button', { type: 'button', class: 'copy', 'data-copy': target, text: 'Copy' });
const copyLine = (id, text) => el('div', { class: 'copyline' }, el('code', { id, text }), copyButton('#' + id));

// showNewKey shows a created key, once, with its endpoint URLs.
function showNewKey(k) {
  $('#new-key-name').textContent = k.name;
  $('#new-key-value').textContent = k.key;
  $('#new-key-secret').hidden = !k.secret;
  $('#new-key-secret-value').textContent = k.secret || '';
  const nets = cfg.networks.filter((n) => !k.allow_networks?.length || k.allow_networks.includes(n.name));
  fill($('#endpoints'), nets.map((n, i) => ({ attrs: { 'data-network': n.name }, cells: [
    td(n.name), td(copyLine(`url-http-${i}`, `${n.http}/v3/${k.key}`)), td(copyLine(`url-ws-${i}`, `${n.ws}/ws/v3/${k.key}`)),
  ] })), 'No network of this instance is open to this key');
  $('#new-key').hidden = false;
  $('#new-key').scrollIntoView({ block: 'nearest' });
}

function hideNewKey() {
  $('#new-key').hidden = true;
  $('#new-key-value').textContent = '';
  $('#new-key-secret-value').textContent = '';
  $('#endpoints tbody').replaceChildren();
}

// copy puts the text of the button's target on the clipboard; where the
// browser refuses, it selects the text for the user to copy.
async function copy(button) {
  const target = $(button.dataset.copy);
  try {
    await navigator.clipboard.writeText(target.textContent);
    button.textContent = 'Copied';
  } catch {
    getSelection().selectAllChildren(target);
    button.textContent = 'Press Ctrl+C';
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 2000);
}

// ---- nodes ----

const ms = (ns) => (ns > 0 ? `${(ns / 1e6).toFixed(ns < 1e7 ? 2 : 0)} ms` : '–');

function nodeState(n) {
  if (n.wrongChain) return ['bad', 'wrong chain'];
  if (n.benched) return ['bad', 'benched'];
  if (n.headsAgeNs < 0) return ['warn', 'no head yet'];
  if (n.lagging) return ['warn', 'lagging'];
  if (n.suspect) return ['warn', 'slow'];
  return ['ok', 'ok'];
}

// headsLine names a network's heads as its family does (the rollup has
// no safe head; the slot chain's are processed, confirmed and finalized).
// An instance that does not send marks gets the three numbers.
function headsLine(net) {
  const h = net.heads;
  const marks = net.marks || [{ tag: 'latest', number: h.Latest }, { tag: 'safe', number: h.Safe }, { tag: 'finalized', number: h.Finalized }];
  return [...marks.map((m) => `${m.tag} ${fmt(m.number)}`), `max lag ${fmt(net.maxLag)}`].join(' · ');
}

// keepsLine says what a node keeps and serves (docs/nodes.md), marking
// what was learned from its answers rather than configured.
function keepsLine(k) {
  if (!k) return '–';
  const parts = [k.state === 'unknown' ? 'state: not known' : `state: ${k.state}`];
  if (k.firstBlock) parts.push(`from block ${fmt(k.firstBlock)}`);
  if (k.serves && k.serves.length) parts.push(`serves ${k.serves.join(', ')}`);
  if (k.lacks && k.lacks.length) parts.push(`lacks ${k.lacks.join(', ')}`);
  return parts.join(' · ') + (k.learned ? ' (learned)' : '');
}

// rateLine is a node's own rate bounds and their use.
function rateLine(r) {
  if (!r) return '–';
  const parts = [];
  if (r.perSecond) parts.push(`${fmt(r.perSecond)}/s`);
  if (r.concurrent) parts.push(`${fmt(r.inFlight || 0)} of ${fmt(r.concurrent)} in flight`);
  if (r.limitedUntil) parts.push('held by its rate limit');
  return parts.length ? parts.join(' · ') : 'no bound';
}

// answersLine counts a node's answers by class, results left out.
function answersLine(a) {
  if (!a) return '–';
  const parts = Object.keys(a).filter((c) => c !== 'result').sort().map((c) => `${c} ${fmt(a[c])}`);
  return parts.length ? parts.join(' · ') : 'results only';
}

// txsLine says what happened to the signed transactions sent for clients
// on a network (docs/nodes.md): received and kept, broadcast to how many
// nodes, landed and how fast, sent again, dropped.
function txsLine(t) {
  if (!t) return '';
  const mean = t.landed ? ` (mean ${ms(t.inclusionMeanNs)} to inclusion)` : '';
  const per = t.broadcasts ? `, ${t.nodesPerSend.toFixed(1)} nodes per send` : '';
  return `Transactions: ${fmt(t.sent)} received${per}, ${fmt(t.landed)} landed${mean}, ` +
    `${fmt(t.resent)} resent, ${fmt(t.expired + t.refused + t.unkept)} dropped, ${fmt(t.kept)} followed now`;
}

function drawNodes() {
  if (unchanged('nodes', state.nodes)) return;
  const box = $('#networks');
  if (!state.nodes) {
    box.replaceChildren(el('p', { class: 'muted', text: 'This instance does not report its nodes.' }));
    return;
  }
  box.replaceChildren(...state.nodes.map((net) => {
    const table = el('table', { class: 'cards' },
      el('thead', {}, el('tr', {}, ['Node', 'Head', 'Lag', 'Latency p50', 'p95', 'Calls', 'Errors', 'Keeps', 'Own rate', 'Answers', 'State'].map((t, i) =>
        el('th', { class: i > 0 && i < 7 ? 'num' : null, text: t })))),
      el('tbody'));
    const rows = net.nodes.map((n) => {
      const [cls, text] = nodeState(n);
      return { attrs: { 'data-node': n.name }, cells: [td(n.name), td(fmt(n.heads.Latest), 'num head'), td(fmt(n.lag), 'num lag'),
        td(ms(n.p50Ns), 'num'), td(ms(n.p95Ns), 'num'), td(fmt(n.calls), 'num calls'), td(fmt(n.errors), 'num errors'),
        td(keepsLine(n.keeps), 'keeps'), td(rateLine(n.rate), 'rate'), td(answersLine(n.answers), 'answers'),
        td(el('span', { class: `state ${cls}`, text }))] };
    });
    // Calls answered from the tracked heads (eth_blockNumber, getSlot…)
    // reach no node: a row of their own, so that the calls add up.
    if (net.nodes.length && net.fromHeads !== undefined) {
      rows.push({ attrs: { class: 'from-heads', title: 'Calls answered from the tracked heads, without a node' },
        cells: [td('answered from heads', 'muted'), td('–', 'num'), td('–', 'num'), td('–', 'num'), td('–', 'num'),
          td(fmt(net.fromHeads), 'num calls'), td('–', 'num'), td(''), td(''), td(''), td('')] });
    }
    fill(table, rows, 'No nodes');
    return el('div', { class: 'network', 'data-network': net.name },
      el('h3', { text: net.name }),
      el('p', { class: 'heads', text: headsLine(net) }),
      el('p', { class: 'txs', text: txsLine(net.txs) }),
      el('div', { class: 'scroll' }, table));
  }));
}

// ---- wiring ----

function press(attr, value) {
  for (const b of $$(`[data-${attr}]`)) b.setAttribute('aria-pressed', String(b.dataset[attr] === value));
}

document.addEventListener('click', (ev) => {
  const b = ev.target.closest('button');
  if (!b) return;
  if (b.dataset.metric) { state.metric = b.dataset.metric; press('metric', state.metric); drawUsage(); }
  if (b.dataset.group) { state.group = b.dataset.group; press('group', state.group); drawUsage(); }
  if (b.dataset.copy) copy(b);
});
$('#refresh').addEventListener('click', refresh);
let resized;
addEventListener('resize', () => { clearTimeout(resized); resized = setTimeout(drawUsage, 150); });
$('#new-key-done').addEventListener('click', hideNewKey);
$('#new-secret-done').addEventListener('click', () => { $('#new-secret').hidden = true; $('#new-secret-value').textContent = ''; });
// The sticky header's height, which anchored sections scroll clear of
// (scroll-padding-top in app.css); a phone's header wraps and is taller.
const header = $('header.top');
const headerHeight = () => document.documentElement.style.setProperty('--top-h', `${header.offsetHeight}px`);
new ResizeObserver(headerHeight).observe(header);
headerHeight();
setupCreate();
refresh();
// Keep the numbers fresh while the page is in view.
setInterval(() => { if (!document.hidden) refresh(); }, 15000);
