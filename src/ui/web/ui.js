// omma's live view: stats and results from /api/events (Server-Sent
// Events), previews from /api/preview/N.jpg, overlays drawn here from the
// results (never burnt into the pixels). No framework, no build step.
// window.omma holds the page's state for people and tests to read.
'use strict';

const PER_PAGE = 24;
const SYNC_HISTORY = 100; // sync samples a sparkline shows
// BlazePose's skeleton: pairs of its 33 landmarks (MediaPipe's POSE_CONNECTIONS).
const POSE_EDGES = [[0, 1], [1, 2], [2, 3], [3, 7], [0, 4], [4, 5], [5, 6], [6, 8], [9, 10],
  [11, 12], [11, 13], [13, 15], [15, 17], [15, 19], [15, 21], [17, 19], [12, 14], [14, 16],
  [16, 18], [16, 20], [16, 22], [18, 20], [11, 23], [12, 24], [23, 24], [23, 25], [24, 26],
  [25, 27], [26, 28], [27, 29], [28, 30], [29, 31], [30, 32], [27, 31], [28, 32]];
const POSE_MIN_VISIBILITY = 0.5;
const THUMB_MS = 1000;
const LARGE_MS = 200;

const omma = {
  stats: null, // the newest "stats" event (metrics JSON)
  statsUpdates: 0,
  results: {}, // camera index -> newest result (the JSON output's record)
  page: 0,
  pages: 1,
  visible: [], // camera indices on the page
  large: -1, // camera in the large view, -1: none
  overlay: null, // what the large view's overlay shows (see drawOverlay)
  thumbsLoaded: 0,
  largeLoaded: 0,
  sync: null, // participants' synchrony: {updates, t_ms, pairs: [{a, b, values, history}]}
};
window.omma = omma;

const $ = (id) => document.getElementById(id);
let source = null;
let sourceKey = '';

function fmt(v, digits) {
  return v === null || v === undefined || Number.isNaN(v) ? '-' : Number(v).toFixed(digits);
}

function trouble(c) {
  if (c.state === 'reconnecting' || c.state === 'failed') return true;
  if (c.state === 'running' && c.latency_ms && c.latency_ms.p99 > 2000) return true; // lagging
  if (c.fps_in > 1 && c.fps_processed !== null && c.fps_processed < 0.5 * c.fps_in) return true;
  return (c.recent_drops || 0) > 0;
}

function cameras() {
  return omma.stats ? omma.stats.cameras : [];
}

function filtered() {
  const text = $('filter').value.trim().toLowerCase();
  const state = $('state').value;
  return cameras().filter((c) => {
    if (text && !c.name.toLowerCase().includes(text)) return false;
    if (state === 'trouble') return trouble(c);
    if (state !== 'all' && c.state !== state) return false;
    return true;
  });
}

function card(c) {
  const el = document.createElement('div');
  el.className = 'cam';
  el.dataset.cam = c.index;
  el.innerHTML = '<div class="view"><img alt=""><canvas></canvas></div>' +
    '<div class="label"><div class="name"></div><div class="line1"></div>' +
    '<div class="nums line2"></div></div>';
  el.querySelector('.name').textContent = c.name;
  el.querySelector('img').addEventListener('load', () => {
    omma.thumbsLoaded++;
    drawOverlay(el.querySelector('.view'), c.index, false);
  });
  el.addEventListener('click', () => openLarge(c.index));
  return el;
}

function stateBadge(c) {
  const s = document.createElement('span');
  s.className = 'state ' + c.state;
  s.textContent = c.state === 'reconnecting' ? 'reconnecting #' + c.attempt : c.state;
  return s;
}

function renderGrid() {
  const list = filtered();
  omma.pages = Math.max(1, Math.ceil(list.length / PER_PAGE));
  omma.page = Math.min(omma.page, omma.pages - 1);
  const shown = list.slice(omma.page * PER_PAGE, (omma.page + 1) * PER_PAGE);
  $('page').textContent = 'page ' + (omma.page + 1) + '/' + omma.pages;
  const grid = $('grid');
  const want = shown.map((c) => c.index);
  const have = Array.from(grid.children).map((e) => Number(e.dataset.cam));
  if (want.join(',') !== have.join(',')) {
    const old = {};
    for (const e of grid.children) old[e.dataset.cam] = e;
    grid.replaceChildren(...shown.map((c) => old[c.index] || card(c)));
  }
  for (const c of shown) {
    const el = grid.querySelector('[data-cam="' + c.index + '"]');
    el.classList.toggle('trouble', trouble(c));
    el.classList.toggle('ended', c.state === 'ended');
    el.dataset.state = c.state;
    const l1 = el.querySelector('.line1');
    l1.replaceChildren(stateBadge(c), document.createTextNode(
      ' ' + (c.gpu === null ? 'cpu' : 'gpu ' + c.gpu) + (c.decoder ? ' · ' + c.decoder : '')));
    el.querySelector('.line2').innerHTML = '';
    const nums = el.querySelector('.line2');
    const parts = [['in', fmt(c.fps_in, 1)], ['out', fmt(c.fps_processed, 1)],
      ['drops', c.frames_dropped], ['p50', fmt(c.latency_ms && c.latency_ms.p50, 1)],
      ['p99', fmt(c.latency_ms && c.latency_ms.p99, 1)]];
    for (const [k, v] of parts) {
      nums.append(k + ' ');
      const b = document.createElement('b');
      b.textContent = v;
      nums.append(b, '  ');
    }
    if (c.error) el.title = c.error;
  }
  omma.visible = want;
  reconnect();
}

function renderSummary() {
  const s = omma.stats;
  const cams = s.cameras;
  const bad = cams.filter(trouble).length;
  $('summary').textContent = cams.length + ' cameras, ' + bad + ' in trouble · ' +
    s.frames_processed + ' frames processed · up ' + fmt(s.uptime_s, 0) + ' s';
  const gpus = $('gpus');
  if (s.gpus.length === 0) {
    gpus.textContent = 'CPU backend (no GPU)';
    return;
  }
  gpus.replaceChildren(...s.gpus.map((g) => {
    const d = document.createElement('div');
    d.className = 'gpu';
    if (!g.available) {
      d.textContent = 'GPU ' + g.index + ': ' + (g.reason || 'no reading');
      return d;
    }
    const mem = g.mem_total_bytes ? 100 * g.mem_used_bytes / g.mem_total_bytes : null;
    d.innerHTML = 'GPU ' + g.index + ' util <span class="bar"><i></i></span>' +
      fmt(g.util_pct, 0) + '% · mem ' + fmt(mem, 0) + '% · ' + fmt(g.power_w, 0) + ' W · ' +
      fmt(g.temperature_c, 0) + ' °C';
    d.querySelector('i').style.width = (g.util_pct || 0) + '%';
    return d;
  }));
}

function renderLargeStats() {
  if (omma.large < 0 || !omma.stats) return;
  const c = cameras().find((x) => x.index === omma.large);
  if (!c) return;
  const rows = [['state', c.state + (c.error ? ': ' + c.error : '')],
    ['fps in / processed', fmt(c.fps_in, 1) + ' / ' + fmt(c.fps_processed, 1)],
    ['frames in / processed', c.frames_in + ' / ' + c.frames_processed],
    ['dropped', c.frames_dropped],
    ['latency p50 / p99', fmt(c.latency_ms && c.latency_ms.p50, 1) + ' / ' +
      fmt(c.latency_ms && c.latency_ms.p99, 1) + ' ms'],
    ['decoder', c.decoder || '-'], ['reconnects', c.reconnects],
    ['GPU', c.gpu === null ? 'none (CPU)' : c.gpu]];
  const r = omma.results[c.index];
  if (r) {
    rows.push(['faces', r.faces.length]);
    for (const f of r.faces)
      rows.push(['face ' + f.id, (f.participant ? f.participant + ', ' : '') + 'score ' +
        fmt(f.score, 2) + ', presence ' + fmt(f.presence, 2)]);
    for (const p of r.pose || [])
      rows.push(['pose ' + p.id, (p.face ? 'face ' + p.face + ', ' : 'no face, ') + 'score ' +
        fmt(p.score, 2)]);
  }
  $('large-stats').replaceChildren(...rows.flatMap(([k, v]) => {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = String(v);
    return [dt, dd];
  }));
}

// Draws camera cam's newest result over the image of `view`. Boxes and
// points are in frame pixels; the preview shows the whole frame, so one
// scale maps both axes.
function drawOverlay(view, cam, large) {
  const img = view.querySelector('img');
  const canvas = view.querySelector('canvas');
  const w = img.clientWidth;
  const h = img.clientHeight;
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, w, h);
  const r = omma.results[cam];
  if (!r || !r.width || !w) return;
  const sx = w / r.width;
  const sy = h / r.height;
  const drawn = [];
  ctx.lineWidth = large ? 2 : 1.5;
  ctx.font = (large ? 14 : 11) + 'px system-ui, sans-serif';
  for (const f of r.faces) {
    const [x0, y0, x1, y1] = f.box;
    const box = {x: x0 * sx, y: y0 * sy, w: (x1 - x0) * sx, h: (y1 - y0) * sy};
    drawn.push(box);
    ctx.strokeStyle = '#33d17a';
    ctx.strokeRect(box.x, box.y, box.w, box.h);
    const label = (f.participant ? f.participant + ' ' : '') + '#' + f.id;
    ctx.fillStyle = 'rgba(0,0,0,0.6)';
    ctx.fillRect(box.x, box.y - (large ? 18 : 14), ctx.measureText(label).width + 8,
      large ? 18 : 14);
    ctx.fillStyle = '#33d17a';
    ctx.fillText(label, box.x + 4, box.y - 4);
    ctx.fillStyle = '#ffd166';
    for (const [x, y] of f.keypoints) ctx.fillRect(x * sx - 1.5, y * sy - 1.5, 3, 3);
    if ($('landmarks').checked && f.landmarks) {
      ctx.fillStyle = 'rgba(120,200,255,0.9)';
      const d = large ? 2 : 1.2;
      for (const p of f.landmarks) ctx.fillRect(p[0] * sx - d / 2, p[1] * sy - d / 2, d, d);
    }
  }
  const people = r.pose || [];
  for (const p of people) drawPose(ctx, p, sx, sy, large);
  if (large) {
    omma.overlay = {
      cam, frame: r.frame, width: r.width, height: r.height,
      canvas: {width: w, height: h},
      faces: r.faces.map((f) => ({id: f.id, box: f.box.slice(), participant: f.participant || null})),
      labels: r.faces.map((f) => (f.participant ? f.participant + ' ' : '') + '#' + f.id),
      poses: people.map((p) => ({id: p.id, face: p.face === undefined ? null : p.face})),
      drawn,
    };
  }
}

// A person's skeleton: the edges whose two ends are likely visible.
function drawPose(ctx, p, sx, sy, large) {
  const lm = p.landmarks;
  const seen = (k) => lm[k] && lm[k][0] !== null && lm[k][1] !== null &&
    (lm[k][3] === null || lm[k][3] >= POSE_MIN_VISIBILITY);
  ctx.strokeStyle = 'rgba(255,120,200,0.95)';
  ctx.lineWidth = large ? 3 : 1.5;
  ctx.beginPath();
  for (const [a, b] of POSE_EDGES) {
    if (!seen(a) || !seen(b)) continue;
    ctx.moveTo(lm[a][0] * sx, lm[a][1] * sy);
    ctx.lineTo(lm[b][0] * sx, lm[b][1] * sy);
  }
  ctx.stroke();
  ctx.fillStyle = 'rgba(255,255,255,0.9)';
  const d = large ? 4 : 2;
  for (let k = 0; k < lm.length; k++)
    if (seen(k)) ctx.fillRect(lm[k][0] * sx - d / 2, lm[k][1] * sy - d / 2, d, d);
}

// The participants' synchrony: per pair, a bar per signal (its windowed
// correlation r, -1..1, or co-modulation magnitude) and a sparkline of the
// pair's mean r over the last SYNC_HISTORY samples.
function onSync(msg) {
  const sync = omma.sync || {updates: 0, pairs: []};
  const byKey = {};
  for (const p of sync.pairs) byKey[p.a + '\u0000' + p.b] = p;
  const pairs = [];
  for (const ch of msg.channels) {
    const key = ch.a + '\u0000' + ch.b;
    let p = byKey[key];
    if (!p) {
      p = byKey[key] = {a: ch.a, b: ch.b, values: {}, history: []};
    }
    if (!pairs.includes(p)) {
      pairs.push(p);
      p.values = {};
    }
    p.values[ch.signal + (ch.kind === 'r' ? '' : ' comod')] = ch.value;
  }
  for (const p of pairs) {
    const rs = Object.entries(p.values).filter(([k, v]) => !k.endsWith(' comod') && v !== null);
    const mean = rs.length ? rs.reduce((t, [, v]) => t + v, 0) / rs.length : null;
    p.history.push(mean);
    if (p.history.length > SYNC_HISTORY) p.history.shift();
  }
  sync.pairs = pairs;
  sync.t_ms = msg.t_ms;
  sync.updates++;
  omma.sync = sync;
  renderSync();
}

function renderSync() {
  const box = $('sync');
  const sync = omma.sync;
  if (!sync || !sync.pairs.length) return;
  box.hidden = false;
  const rows = $('sync-pairs');
  const want = sync.pairs.map((p) => p.a + '\u0000' + p.b);
  if (Array.from(rows.children).map((e) => e.dataset.pair).join('|') !== want.join('|')) {
    rows.replaceChildren(...sync.pairs.map((p) => {
      const el = document.createElement('div');
      el.className = 'pair';
      el.dataset.pair = p.a + '\u0000' + p.b;
      el.innerHTML = '<div class="pair-name"></div><canvas class="spark" width="160" ' +
        'height="36"></canvas><div class="signals"></div>';
      el.querySelector('.pair-name').textContent = p.a + ' \u2013 ' + p.b;
      return el;
    }));
  }
  sync.pairs.forEach((p, i) => {
    const el = rows.children[i];
    const sig = el.querySelector('.signals');
    const entries = Object.entries(p.values);
    if (sig.children.length !== entries.length) {
      sig.replaceChildren(...entries.map(([k]) => {
        const d = document.createElement('div');
        d.className = 'sig';
        d.dataset.signal = k;
        d.innerHTML = '<span class="sig-name"></span><span class="sbar"><i></i></span>' +
          '<span class="sig-value"></span>';
        d.querySelector('.sig-name').textContent = k;
        return d;
      }));
    }
    entries.forEach(([k, v], j) => {
      const d = sig.children[j];
      const bar = d.querySelector('i');
      const x = v === null ? 0 : Math.max(-1, Math.min(1, v));
      bar.style.left = (x < 0 ? 50 + 50 * x : 50) + '%';
      bar.style.width = Math.abs(50 * x) + '%';
      bar.className = x < 0 ? 'neg' : 'pos';
      d.querySelector('.sig-value').textContent = fmt(v, 2);
      d.dataset.value = v === null ? '' : String(v);
    });
    drawSpark(el.querySelector('canvas'), p.history);
  });
}

function drawSpark(canvas, history) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = 'rgba(255,255,255,0.25)';
  ctx.beginPath();
  ctx.moveTo(0, h / 2);
  ctx.lineTo(w, h / 2);
  ctx.stroke();
  ctx.strokeStyle = '#ffd166';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let pen = false;
  history.forEach((v, i) => {
    if (v === null) {
      pen = false;
      return;
    }
    const x = w - 1 - (history.length - 1 - i) * (w - 2) / (SYNC_HISTORY - 1); // newest right
    const y = h / 2 - (Math.max(-1, Math.min(1, v)) * (h / 2 - 2));
    if (pen) ctx.lineTo(x, y);
    else ctx.moveTo(x, y);
    pen = true;
  });
  ctx.stroke();
}

function reconnect() {
  const cams = omma.visible.slice(0, 63);
  const key = cams.join(',') + '|' + omma.large;
  if (key === sourceKey && source && source.readyState !== EventSource.CLOSED) return;
  sourceKey = key;
  if (source) source.close();
  let url = 'api/events?cams=' + cams.join(',');
  if (omma.large >= 0) url += '&large=' + omma.large;
  source = new EventSource(url);
  source.onopen = () => {
    $('conn').textContent = 'live';
    $('conn').className = 'conn live';
  };
  source.onerror = () => {
    $('conn').textContent = 'reconnecting…';
    $('conn').className = 'conn';
  };
  source.addEventListener('stats', (e) => {
    const s = JSON.parse(e.data);
    const before = {};
    if (omma.stats) for (const c of omma.stats.cameras) before[c.index] = c.frames_dropped;
    for (const c of s.cameras)
      c.recent_drops = c.index in before ? c.frames_dropped - before[c.index] : 0;
    omma.stats = s;
    omma.statsUpdates++;
    renderSummary();
    renderGrid();
    renderLargeStats();
  });
  source.addEventListener('sync', (e) => onSync(JSON.parse(e.data)));
  source.addEventListener('result', (e) => {
    const [line, dims] = e.data.split('\n');
    const r = JSON.parse(line);
    Object.assign(r, JSON.parse(dims));
    omma.results[r.camera] = r;
    const el = $('grid').querySelector('[data-cam="' + r.camera + '"] .view');
    if (el) drawOverlay(el, r.camera, false);
    if (r.camera === omma.large) {
      drawOverlay($('large-view'), r.camera, true);
      renderLargeStats();
    }
  });
}

// Previews: each image asks again once the last one arrived (or failed),
// at most every THUMB_MS / LARGE_MS: a slow link gets fewer, nothing piles up.
function refresh(img, cam, size, every) {
  if (img.dataset.busy === '1') return;
  const last = Number(img.dataset.at || 0);
  if (performance.now() - last < every) return;
  img.dataset.busy = '1';
  img.dataset.at = String(performance.now());
  const done = () => { img.dataset.busy = '0'; };
  img.addEventListener('load', done, {once: true});
  img.addEventListener('error', done, {once: true});
  img.src = 'api/preview/' + cam + '.jpg?size=' + size + '&t=' + Date.now();
}

function tick() {
  if (document.hidden) return;
  if (omma.large >= 0) {
    refresh($('large-img'), omma.large, 'large', LARGE_MS);
  } else {
    for (const el of $('grid').children)
      refresh(el.querySelector('img'), Number(el.dataset.cam), 'thumb', THUMB_MS);
  }
}

function openLarge(cam) {
  omma.large = cam;
  const c = cameras().find((x) => x.index === cam);
  $('large-name').textContent = c ? c.name : 'camera ' + cam;
  $('large').hidden = false;
  $('large-img').removeAttribute('src');
  $('large-img').dataset.at = '0';
  $('large-img').dataset.busy = '0';
  omma.overlay = null;
  renderLargeStats();
  reconnect();
}

function closeLarge() {
  omma.large = -1;
  omma.overlay = null;
  $('large').hidden = true;
  reconnect();
}

$('large-img').addEventListener('load', () => {
  omma.largeLoaded++;
  if (omma.large >= 0) drawOverlay($('large-view'), omma.large, true);
});
$('close').addEventListener('click', closeLarge);
document.addEventListener('keydown', (e) => { if (e.key === 'Escape') closeLarge(); });
$('filter').addEventListener('input', () => { omma.page = 0; renderGrid(); });
$('state').addEventListener('change', () => { omma.page = 0; renderGrid(); });
$('prev').addEventListener('click', () => { omma.page = Math.max(0, omma.page - 1); renderGrid(); });
$('next').addEventListener('click', () => {
  omma.page = Math.min(omma.pages - 1, omma.page + 1);
  renderGrid();
});
$('landmarks').addEventListener('change', () => {
  if (omma.large >= 0) drawOverlay($('large-view'), omma.large, true);
});
setInterval(tick, 100);
reconnect();
