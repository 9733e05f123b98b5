"use strict";
// The feature browser: an index of every latent (sorted, filtered by
// density band, searched by token text) and one latent's view, drawn from
// the JSON embedded in the page when it is opened (#latent-N in the
// address opens latent N).
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const BANDS = ["dead", "ultra-rare", "rare", "typical", "dense"];
  // The longest side of an image drawn, in CSS pixels (its thumbnail's).
  const THUMB = 160;
  // The page's token texts; contexts, effects and searches refer to them
  // by number.
  const texts = data.tokens;
  const latents = data.latent.map((latent, i) => ({
    latent, density: data.density[i], band: BANDS[data.band[i]], max: data.max[i],
    preview: data.preview[i], words: data.words[i],
  }));
  const byLatent = new Map(latents.map((f, rank) => [f.latent, { f, rank }]));
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  // Three significant digits at every scale, so a column reads alike.
  const pct = (d) => d === 0 ? "0%" : (100 * d).toPrecision(3) + "%";
  const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const num = (v) => v === 0 ? "0" : Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(3);
  // A token shown by itself (the token an input sits on, a hover title):
  // its spaces as ␣ and no text as ∅, what the library's `alone` adds to
  // the text it already made visible (modelbin_format::saev::alone).
  const alone = (t) => t === "" ? "∅" : t.replace(/ /g, "␣");

  // The images the page shows (null for a text dataset): the patch grid,
  // the model's patch and input size, whether contexts hold a grid, and
  // each image as [img, name, picture URI or "", note or ""].
  const pictures = data.images;
  // A context from its numbers: [value, at, tokens, firing] with `firing`
  // the positions and activations of its nonzero tokens; of an image,
  // [value, picture, token, firing, cls] with `firing` over its patches;
  // or, without text, [value, img, layer, token].
  function context(c) {
    if (pictures) {
      const [rows, cols] = pictures.grid;
      const acts = new Array(pictures.cells ? rows * cols : 0).fill(0);
      for (let i = 0; i < c[3].length; i += 2) acts[c[3][i]] = c[3][i + 1];
      const [img, name, uri, note] = pictures.list[c[1]];
      return { value: c[0], token: c[2], acts, cls: c[4], img, name, uri, note };
    }
    if (!Array.isArray(c[2])) return { value: c[0], img: c[1], layer: c[2], token: c[3] };
    const acts = new Array(c[2].length).fill(0);
    for (let i = 0; i < c[3].length; i += 2) acts[c[3][i]] = c[3][i + 1];
    return { value: c[0], at: c[1], tokens: c[2].map((t) => texts[t]), acts };
  }
  // Token numbers and values interleaved, as {token, value} pairs.
  const pairs = (list) => {
    const out = [];
    for (let i = 0; i < list.length; i += 2) out.push({ token: texts[list[i]], value: list[i + 1] });
    return out;
  };
  // A latent's whole view, parsed from its numbers when first opened.
  const details = new Map();
  function detail(latent) {
    const found = byLatent.get(latent);
    if (!found) return null;
    if (!details.has(latent)) {
      const [fired, mean, histogram, top, intervals, e] = JSON.parse(data.details[found.rank]);
      const effects = !e ? undefined : e.length === 2 ?
        { logits: { raised: pairs(e[0]), lowered: pairs(e[1]) } } : { nearest: { pieces: pairs(e[0]) } };
      details.set(latent, {
        ...found.f, fired, mean, histogram, effects, top: top.map(context),
        quantiles: intervals.map(([low, high, fired, samples]) =>
          ({ low, high, fired, samples: samples.map(context) })),
      });
    }
    return details.get(latent);
  }

  // The index: one link per latent, built once; sorting moves them and
  // filtering hides them.
  const index = $("rows");
  index.innerHTML = latents.map((f) =>
    `<a href="#latent-${f.latent}" data-latent="${f.latent}">` +
    `<span class="idx">#${f.latent}</span>` +
    `<span class="den" title="firing density">${pct(f.density)}</span>` +
    `<span class="max" title="max activation">${num(f.max)}</span>` +
    `<span class="band ${f.band}">${f.band}</span>` +
    `<span class="prev" title="${esc(f.preview)}">${esc(f.preview)}</span></a>`).join("");
  const rows = Array.from(index.children);
  const entries = latents.map((f, i) => ({ f, row: rows[i] }));

  const orders = {
    browse: (a, b) => byLatent.get(a.f.latent).rank - byLatent.get(b.f.latent).rank,
    "density-desc": (a, b) => b.f.density - a.f.density || a.f.latent - b.f.latent,
    "density-asc": (a, b) => a.f.density - b.f.density || a.f.latent - b.f.latent,
    "max-desc": (a, b) => b.f.max - a.f.max || a.f.latent - b.f.latent,
    index: (a, b) => a.f.latent - b.f.latent,
  };
  const counts = Object.fromEntries(BANDS.map((b) => [b, 0]));
  latents.forEach((f) => counts[f.band]++);
  const shownBands = new Set(BANDS);
  $("bands").innerHTML = BANDS.map((b) =>
    `<button type="button" data-band="${b}" aria-pressed="true">${b} ${counts[b]}</button>`).join("");

  function sort() {
    const order = orders[$("sort").value];
    entries.sort(order);
    const fragment = document.createDocumentFragment();
    entries.forEach((e) => fragment.appendChild(e.row));
    index.appendChild(fragment);
  }

  function filter() {
    const query = $("search").value.trim().toLowerCase();
    const matches = query ? texts.map((t) => t.toLowerCase().includes(query)) : null;
    let shown = 0;
    for (const e of entries) {
      let visible = shownBands.has(e.f.band);
      if (visible && matches) visible = e.f.words.some((t) => matches[t]);
      e.row.hidden = !visible;
      if (visible) shown++;
    }
    $("shown").textContent = `${shown} of ${latents.length} latents shown`;
  }

  $("sort").addEventListener("change", sort);
  $("bands").addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button) return;
    const band = button.dataset.band;
    const on = !shownBands.has(band);
    if (on) shownBands.add(band); else shownBands.delete(band);
    button.setAttribute("aria-pressed", String(on));
    filter();
  });
  let pending = 0;
  $("search").addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(filter, 120);
  });

  // One latent's view.
  function histogram(f) {
    const w = 420, h = 110, left = 4, bottom = 16;
    const n = f.histogram.length;
    const most = Math.max(1, ...f.histogram);
    const scale = (c) => c === 0 ? 0 : Math.max(1, (h - bottom) * Math.log10(1 + c) / Math.log10(1 + most));
    const bw = (w - left) / n;
    const bars = f.histogram.map((c, i) => {
      const lo = f.max * i / n, hi = f.max * (i + 1) / n;
      const y = h - bottom - scale(c);
      return `<rect x="${(left + i * bw).toFixed(1)}" y="${y.toFixed(1)}" width="${(bw - 1).toFixed(1)}" ` +
        `height="${scale(c).toFixed(1)}"><title>(${num(lo)}, ${num(hi)}]: ${c}</title></rect>`;
    }).join("");
    return `<svg class="hist" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" ` +
      `aria-label="histogram of activations, log-scaled counts">${bars}` +
      `<text x="${left}" y="${h - 3}">0</text>` +
      `<text x="${w}" y="${h - 3}" text-anchor="end">${num(f.max)}</text>` +
      `<text x="${w / 2}" y="${h - 3}" text-anchor="middle">activation (counts on a log scale; most ${most})</text></svg>`;
  }

  // An image with the latent's activation on each patch drawn over it:
  // one cell per patch, its colour from pale yellow (small) to red (the
  // latent's max) and its opacity growing with the value; a cell's title
  // gives its value. Without its picture (file missing or changed), the
  // heat map alone, with a note.
  function picture(c, f) {
    const [rows, cols] = pictures.grid, p = pictures.patch, [h, w] = pictures.input;
    const scale = THUMB / Math.max(h, w), W = Math.round(w * scale), H = Math.round(h * scale);
    let cells = "";
    if (pictures.cells) {
      for (let r = 0; r < rows; r++) {
        for (let k = 0; k < cols; k++) {
          const v = c.acts[r * cols + k];
          const t = f.max > 0 ? Math.min(1, v / f.max) : 0;
          const fill = v > 0 ? `hsl(${Math.round(55 - 55 * t)},100%,50%)` : "none";
          cells += `<rect x="${k * p}" y="${r * p}" width="${p}" height="${p}" fill="${fill}" ` +
            `fill-opacity="${v > 0 ? (0.25 + 0.5 * t).toFixed(2) : 0}" data-v="${v}">` +
            `<title>patch (${r}, ${k}): ${num(v)}</title></rect>`;
        }
      }
    }
    const under = c.uri ? `<img src="${c.uri}" width="${W}" height="${H}" alt="${esc(c.name)}">` :
      `<div class="blank" style="width:${W}px;height:${H}px"></div>`;
    const cls = c.cls === null || c.cls === undefined ? "" : ` · CLS ${num(c.cls)}`;
    const note = c.note ? `<br><span class="note">${esc(c.note)}</span>` : "";
    return `<figure class="pic" data-img="${c.img}"><div class="frame" style="width:${W}px;height:${H}px">${under}` +
      `<svg class="heat" viewBox="0 0 ${w} ${h}" width="${W}" height="${H}" preserveAspectRatio="none" ` +
      `role="img" aria-label="activation on each patch">${cells}</svg></div>` +
      `<figcaption><b>${num(c.value)}</b>${cls} · ${esc(c.name)}${note}</figcaption></figure>`;
  }
  const pics = (list, f) => `<div class="pics">${list.map((c) => picture(c, f)).join("")}</div>`;

  function shaded(c, f) {
    if (!c.tokens) {
      return `<div class="ctx"><span class="val">${num(c.value)}</span>` +
        `<span class="text">image ${c.img}, layer ${c.layer}, token ${c.token}</span></div>`;
    }
    const tokens = c.tokens.map((t, i) => {
      const a = c.acts[i];
      const alpha = f.max > 0 ? Math.min(1, a / f.max) : 0;
      const style = a > 0 ? ` style="background:rgba(242,142,43,${alpha.toFixed(3)})"` : "";
      return `<span class="tok${i === c.at ? " hit" : ""}"${style} ` +
        `title="${esc(alone(t))}: ${num(a)}">${esc(i === c.at ? alone(t) : t)}</span>`;
    }).join("");
    return `<div class="ctx"><span class="val">${num(c.value)}</span><span class="text">${tokens}</span></div>`;
  }

  function effects(e) {
    const table = (title, list, cls) => `<table><caption class="${cls}">${title}</caption>` +
      list.map((t) => `<tr><td>${esc(t.token)}</td><td class="v">${num(t.value)}</td></tr>`).join("") +
      "</table>";
    if (e.logits) {
      return "<h3>Direct effect on the next token</h3><div class=\"effects\">" +
        table("raised", e.logits.raised, "up") + table("lowered", e.logits.lowered, "down") + "</div>";
    }
    return "<h3>Nearest word pieces (input embeddings)</h3><div class=\"effects\">" +
      table("cosine", e.nearest.pieces, "up") + "</div>";
  }

  function render(latent) {
    const f = detail(latent);
    const view = $("latent");
    if (!f) {
      view.innerHTML = `<p class="hint">Latent ${esc(latent)} is not on this page.</p>`;
      return;
    }
    const parts = [
      `<h2>Latent ${f.latent} <span class="band ${f.band}">${f.band}</span></h2>`,
      `<div class="stats"><span>density <b>${pct(f.density)}</b></span>` +
      `<span>fires on <b>${f.fired}</b> of ${data.examples} inputs</span>` +
      `<span>max <b>${num(f.max)}</b></span><span>mean <b>${num(f.mean)}</b></span></div>`,
    ];
    if (f.fired > 0) parts.push("<h3>Activations</h3>", histogram(f));
    if (f.effects) parts.push(effects(f.effects));
    const shown = (list) => pictures ? [pics(list, f)] : list.map((c) => shaded(c, f));
    if (pictures && f.fired > 0) {
      parts.push(`<p class="scale">heat map: 0 <span class="ramp"></span> ${num(f.max)} (the latent's max)</p>`);
    }
    if (f.top.length) {
      parts.push(pictures ? "<h3>Top images (by their strongest patch)</h3>" : "<h3>Top activations</h3>",
        ...shown(f.top));
    }
    if (f.quantiles.length) {
      parts.push("<h3>Sampled from intervals of the activation range</h3>");
      for (const q of f.quantiles.slice().reverse()) {
        const share = f.fired ? (100 * q.fired / f.fired).toFixed(1) : "0";
        // An image dataset counts patches and shows images, each by its
        // strongest patch in the interval.
        const counted = pictures ? count(q.fired, "patch", "patches") : count(q.fired, "input", "inputs");
        const sampled = pictures ? count(q.samples.length, "image", "images") : q.samples.length;
        parts.push(`<h4>(${num(q.low)}, ${num(q.high)}]: ${counted}, ${share}%; ${sampled} shown</h4>`,
          ...shown(q.samples));
      }
    }
    view.innerHTML = parts.join("");
    view.scrollTop = 0;
    for (const e of entries) e.row.classList.toggle("open", e.f.latent === latent);
  }

  function route() {
    const m = /^#latent-(\d+)$/.exec(location.hash);
    if (m) render(Number(m[1]));
  }
  window.addEventListener("hashchange", route);

  const bands = BANDS.filter((b) => counts[b]).map((b) => `${counts[b]} ${b}`).join(", ");
  $("summary").textContent = `${latents.length} of ${data.d_sae} latents over ${data.examples} inputs: ${bands}. ` +
    "Bands of firing density: dead (never), ultra-rare (< 1e-5), rare (< 1e-3), typical (< 1e-1), dense.";
  if (pictures) {
    $("search").placeholder = "search image file names";
    $("search").setAttribute("aria-label", "search image file names");
  }
  filter();
  if (data.open !== null && data.open !== undefined && !location.hash) {
    document.body.classList.add("single");
    render(data.open);
  } else {
    route();
  }
})();
