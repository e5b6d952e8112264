/* cliqo broker dashboard (docs/broker.md, "Dashboard"; the API: docs/broker-openapi.yaml).
 *
 * Plain DOM, no framework, nothing fetched but the broker's own API, no inline code (it runs under
 * Content-Security-Policy default-src 'self'). Every value the API returns is untrusted: it reaches
 * the page as text (textContent, Text nodes, setAttribute), never through HTML parsing, and each
 * value shown is cut at MAX_TEXT characters. URLs are relative, so the page also works under a
 * path prefix (a proxy).
 *
 * What a test can rely on: a row tr[data-cluster-id] per cluster (data-enabled, data-selected
 * "true"/"false") in #cluster-rows, its cells .c-ident (.c-name, .c-id), .c-peering, .c-offer,
 * .c-kpi, .c-selected, .c-enabled, lists li[data-k=<field>], the checkbox .toggle; #status with
 * data-state loading|ok|error, data-polls (answers so far, 200 or 304) and data-updated (ISO time
 * of the last good answer); #notice (a failed toggle), #empty, #token, #policy, #policy-save,
 * #policy-reload, #policy-note, #policy-error. */
'use strict';

(function () {
  const POLL_MS = 2000;
  const REQUEST_MS = 10000; /* bound on one request, answer body included */
  const MAX_PAGES = 100; /* Continue pages followed in one update */
  const MAX_TEXT = 256;
  const MAX_ITEMS = 32; /* entries shown of one map (offer, conditions) */
  const TOKEN_KEY = 'cliqo-broker-token';

  const $ = (id) => document.getElementById(id);
  const obj = (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null);

  let etag = null; /* of the list shown */
  let polls = 0;
  let inflight = false;
  let again = false;
  let timer = 0;
  let policyLoaded = false;
  const pending = new Map(); /* cluster ID -> the state asked while its toggle request runs */

  /* Any value as a bounded string; null and undefined as a dash. */
  function text(v) {
    if (v === undefined || v === null) return '—';
    const s = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT - 1) + '…' : s;
  }

  /* An element: props class, text, or attributes; children are nodes or strings (Text nodes). */
  function h(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function clock() {
    return new Date().toLocaleTimeString();
  }

  function token() {
    return $('token').value.trim();
  }

  function headers(extra) {
    const hd = { Accept: 'application/json' };
    const t = token();
    if (t) hd.Authorization = 'Bearer ' + t;
    return Object.assign(hd, extra);
  }

  /* One request, bounded in time, body read and parsed: {status, ok, headers, json}. Throws an Error
   * with a readable message when no answer comes. */
  async function request(method, url, hd, body) {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), REQUEST_MS);
    try {
      const r = await fetch(url, {
        method, headers: hd, body, cache: 'no-store', credentials: 'same-origin',
        redirect: 'error', signal: ctl.signal,
      });
      const raw = r.status === 304 ? '' : await r.text();
      let json;
      try {
        json = raw ? JSON.parse(raw) : undefined;
      } catch (e) {
        json = undefined;
      }
      return { status: r.status, ok: r.ok, headers: r.headers, json };
    } catch (e) {
      if (e.name === 'AbortError') throw new Error(`no answer within ${REQUEST_MS / 1000} s`);
      throw new Error('request failed: ' + e.message);
    } finally {
      clearTimeout(t);
    }
  }

  /* The error of a failed answer: the API's {"error": "..."} message, else its status. */
  function failure(r) {
    const j = obj(r.json);
    const msg = j && typeof j.error === 'string' ? j.error : `HTTP ${r.status}`;
    return new Error(`${text(msg)} (${r.status})`);
  }

  function setStatus(state, msg) {
    const s = $('status');
    s.dataset.state = state;
    s.textContent = msg;
  }

  /* ---- the list ---- */

  function kv(entries) {
    if (!entries.length) return '—';
    return h('ul', { class: 'kv' }, ...entries.map(([k, label, value, title]) =>
      h('li', title ? { 'data-k': k, title } : { 'data-k': k },
        h('span', { class: 'k', text: label }), h('span', { class: 'v', text: value }))));
  }

  function duration(s) {
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }

  const CONDITIONS = {
    OutgoingPeering: 'outgoing', IncomingPeering: 'incoming', AuthenticationStatus: 'authentication',
    NetworkStatus: 'network', ProcessForeignClusterStatus: 'processing',
  };

  /* Whatever of the peering the status has: its conditions, the phases of the older incoming and
   * outgoing objects, the Advertisements' decisions. */
  function peering(st) {
    if (!st) return '—';
    const out = [];
    if (Array.isArray(st.peeringConditions)) {
      for (const c of st.peeringConditions.slice(0, MAX_ITEMS).map(obj)) {
        if (!c || typeof c.type !== 'string') continue;
        const why = [c.reason, c.message].filter((v) => typeof v === 'string' && v).join(': ');
        out.push([c.type, Object.hasOwn(CONDITIONS, c.type) ? CONDITIONS[c.type] : text(c.type),
          text(c.status), why ? text(why) : undefined]);
      }
    }
    for (const dir of ['outgoing', 'incoming']) {
      const d = obj(st[dir]);
      const phase = d && (d.phase !== undefined ? d.phase : d.peeringPhase);
      if (phase !== undefined && phase !== null) out.push([dir, dir, text(phase)]);
    }
    const adv = obj(st.advertisement);
    for (const dir of ['sent', 'received']) {
      const a = adv && obj(adv[dir]);
      if (a && typeof a.status === 'string' && a.status)
        out.push(['advertisement.' + dir, 'advertisement ' + dir, text(a.status),
          typeof a.message === 'string' && a.message ? text(a.message) : undefined]);
    }
    return kv(out);
  }

  function offer(o) {
    if (!o) return '—';
    const keys = Object.keys(o).sort();
    const out = keys.slice(0, MAX_ITEMS).map((k) => [k, text(k), text(o[k])]);
    if (keys.length > MAX_ITEMS) out.push(['more', '…', `${keys.length - MAX_ITEMS} more`]);
    return kv(out);
  }

  const KPIS = [
    ['uptimeSeconds', 'uptime', duration],
    ['latencyMs', 'latency', (v) => `${v} ms`],
    ['availabilityPercent', 'availability', (v) => `${v} %`],
    ['probes', 'probes', String],
    ['failures', 'failures', String],
  ];

  /* The KPIs the spec names, formatted, then any other field as it is. */
  function kpis(k) {
    if (!k) return '—';
    const out = [];
    for (const [key, label, fmt] of KPIS) {
      if (!Object.hasOwn(k, key)) continue;
      const v = k[key];
      out.push([key, label, typeof v === 'number' && Number.isFinite(v) && v >= 0 ? fmt(v) : text(v)]);
    }
    for (const key of Object.keys(k).slice(0, MAX_ITEMS)) {
      if (!KPIS.some(([known]) => known === key)) out.push([key, text(key), text(k[key])]);
    }
    return kv(out);
  }

  function selected(b) {
    if (typeof b.selected !== 'boolean') return '—';
    const why = b.why !== undefined ? b.why : b.reason;
    return h('div', null,
      h('span', { class: 'badge ' + (b.selected ? 'yes' : 'no'), text: b.selected ? 'selected' : 'not selected' }),
      !b.selected && why !== undefined && why !== '' ? h('div', { class: 'muted why', text: text(why) }) : null);
  }

  function toggle(id, enabled) {
    const cb = h('input', { type: 'checkbox', class: 'toggle', 'aria-label': 'enabled: ' + text(id || null) });
    const want = pending.get(id);
    cb.checked = want !== undefined ? want : enabled;
    cb.disabled = !id || want !== undefined;
    cb.addEventListener('change', () => setEnabled(id, cb.checked));
    return h('label', { class: 'switch' }, cb, h('span', { class: 'slider' }));
  }

  function row(c) {
    const spec = obj(c.spec) || {};
    const ident = obj(spec.clusterIdentity) || {};
    const meta = obj(c.metadata) || {};
    const b = obj(c.broker) || {};
    const id = typeof ident.clusterID === 'string' ? ident.clusterID : '';
    const name = ident.clusterName !== undefined ? ident.clusterName : meta.name;
    const enabled = b.enabled === true;
    return h('tr', { 'data-cluster-id': id, 'data-enabled': String(enabled), 'data-selected': String(b.selected === true) },
      h('td', { class: 'c-ident' }, h('div', { class: 'c-name', text: text(name) }),
        h('div', { class: 'c-id', text: text(id || null) })),
      h('td', { class: 'c-peering' }, peering(obj(c.status))),
      h('td', { class: 'c-offer' }, offer(obj(b.offer))),
      h('td', { class: 'c-kpi' }, kpis(obj(b.kpi))),
      h('td', { class: 'c-selected' }, selected(b)),
      h('td', { class: 'c-enabled' }, toggle(id, enabled)));
  }

  function rowOf(id) {
    for (const tr of $('cluster-rows').rows) if (tr.dataset.clusterId === id) return tr;
    return null;
  }

  /* A list that arrives while a pointer is pressed waits for the release: replacing the rows between
   * the press and the release would make the browser drop the click (its press and release would
   * land on two different elements), and the toggle under the pointer would not change. It is shown
   * just after the click has been dispatched. */
  let pressed = false;
  let deferred = null;
  function pointerDown() {
    pressed = true;
  }
  function pointerUp() {
    pressed = false;
    if (deferred) {
      const d = deferred;
      deferred = null;
      setTimeout(() => render(d), 0);
    }
  }

  function render(items) {
    if (pressed) {
      deferred = items;
      return;
    }
    const a = document.activeElement;
    const focused = a && a.classList.contains('toggle') ? a.closest('tr').dataset.clusterId : null;
    const frag = document.createDocumentFragment();
    for (const c of items) if (obj(c)) frag.append(row(c));
    $('cluster-rows').replaceChildren(frag);
    $('empty').hidden = items.length > 0;
    if (focused) {
      const tr = rowOf(focused);
      if (tr) tr.querySelector('.toggle').focus();
    }
  }

  /* One update: the list if it changed (If-None-Match; a 304 leaves it), following Continue pages. */
  async function poll() {
    try {
      const r = await request('GET', 'api/clusters', headers(etag ? { 'If-None-Match': etag } : {}));
      if (r.status !== 304) {
        if (!r.ok) throw failure(r);
        let items = r.json;
        if (!Array.isArray(items)) throw new Error('the cluster list is not a JSON array');
        let next = r.headers.get('Continue');
        for (let n = 0; next && n < MAX_PAGES; n++) {
          const p = await request('GET', 'api/clusters?continue=' + encodeURIComponent(next), headers());
          if (!p.ok) throw failure(p);
          if (!Array.isArray(p.json)) throw new Error('a page of the cluster list is not a JSON array');
          items = items.concat(p.json);
          next = p.headers.get('Continue');
        }
        render(items);
        etag = r.headers.get('ETag');
      }
      polls++;
      const s = $('status');
      s.dataset.polls = String(polls);
      s.dataset.updated = new Date().toISOString();
      const n = $('cluster-rows').rows.length;
      setStatus('ok', `${n} cluster${n === 1 ? '' : 's'}, checked at ${clock()}`);
    } catch (e) {
      const last = $('status').dataset.updated;
      setStatus('error', `Error: ${e.message}` + (last ? ` (last update ${new Date(last).toLocaleTimeString()})` : ''));
    }
  }

  /* Updates now, then every POLL_MS; never two at once (a call during one runs again right after). */
  function refresh() {
    clearTimeout(timer);
    if (inflight) {
      again = true;
      return;
    }
    inflight = true;
    poll().finally(() => {
      inflight = false;
      if (again) {
        again = false;
        refresh();
      } else {
        timer = setTimeout(refresh, POLL_MS);
      }
    });
  }

  function notice(msg) {
    const n = $('notice');
    n.textContent = msg || '';
    n.hidden = !msg;
  }

  async function setEnabled(id, on) {
    pending.set(id, on);
    let now = on;
    let tr = rowOf(id);
    if (tr) tr.querySelector('.toggle').disabled = true;
    try {
      const r = await request('POST', `api/toggle?id=${encodeURIComponent(id)}&enable=${on}`, headers());
      if (!r.ok) throw failure(r);
      const j = obj(r.json);
      if (j && typeof j.enabled === 'boolean') now = j.enabled;
      notice(null);
    } catch (e) {
      now = !on;
      notice(`Could not ${on ? 'enable' : 'disable'} ${text(id)}: ${e.message}`);
    } finally {
      pending.delete(id);
      tr = rowOf(id); /* the list may have been drawn again meanwhile */
      if (tr) {
        const cb = tr.querySelector('.toggle');
        cb.checked = now;
        cb.disabled = false;
        tr.dataset.enabled = String(now);
      }
      refresh(); /* the selection follows */
    }
  }

  /* ---- the policy ---- */

  function policyMessage(note, error) {
    $('policy-note').textContent = note;
    $('policy-error').textContent = error;
  }

  function showPolicy(p) {
    $('policy').value = JSON.stringify(p, null, 2);
  }

  /* The editor's text once someone typed in it is theirs: a load that was already on its way (the
   * page's first, or the one a new token starts) never overwrites it, or the policy saved next would
   * be the old one. Only Reload (force) discards the changes. */
  let policyEdited = false;
  let policyLoads = 0;
  async function loadPolicy(force) {
    try {
      const r = await request('GET', 'api/policy', headers());
      if (!r.ok) throw failure(r);
      if (!obj(r.json)) throw new Error('the policy is not a JSON object');
      policyLoaded = true;
      $('policy').dataset.loads = String(++policyLoads); /* for tests: loads answered so far */
      if (policyEdited && force !== true) return;
      showPolicy(r.json);
      policyEdited = false;
      policyMessage(`Loaded at ${clock()}`, '');
    } catch (e) {
      policyMessage('', e.message);
    }
  }

  async function savePolicy() {
    const body = $('policy').value;
    try {
      JSON.parse(body);
    } catch (e) {
      policyMessage('', 'Not valid JSON: ' + e.message);
      return;
    }
    const save = $('policy-save');
    save.disabled = true;
    policyMessage('Saving…', '');
    try {
      /* The text as written: the broker validates it field by field and names what it refuses. */
      const r = await request('PUT', 'api/policy', headers({ 'Content-Type': 'application/json' }), body);
      if (!r.ok) throw failure(r);
      if (obj(r.json)) showPolicy(r.json);
      policyLoaded = true;
      policyEdited = false;
      policyMessage(`Saved at ${clock()}`, '');
      refresh();
    } catch (e) {
      policyMessage('', e.message);
    } finally {
      save.disabled = false;
    }
  }

  /* ---- start ---- */

  function storage(fn) {
    try {
      return fn(window.sessionStorage);
    } catch (e) {
      return null; /* storage refused: the token lasts as long as the page */
    }
  }

  const tok = $('token');
  tok.value = storage((s) => s.getItem(TOKEN_KEY)) || '';
  tok.addEventListener('change', () => {
    const t = token();
    storage((s) => (t ? s.setItem(TOKEN_KEY, t) : s.removeItem(TOKEN_KEY)));
    etag = null;
    refresh();
    if (!policyLoaded) loadPolicy();
  });
  $('policy-save').addEventListener('click', savePolicy);
  $('policy-reload').addEventListener('click', () => loadPolicy(true));
  $('policy').addEventListener('input', () => {
    policyEdited = true;
  });
  document.addEventListener('pointerdown', pointerDown, true);
  document.addEventListener('pointerup', pointerUp, true);
  document.addEventListener('pointercancel', pointerUp, true);
  refresh();
  loadPolicy();
}());
