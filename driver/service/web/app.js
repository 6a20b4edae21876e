// The record & replay page (docs/service.md section 8): plain JavaScript over the service's /api/v1, no
// library and nothing loaded from elsewhere. Status is polled from /api/v1/status (both jobs in one answer).
"use strict";

const API = new URL("../api/v1/", document.baseURI);
const POLL_MS = 500;
const DATASETS_EVERY_MS = 5000;
const $ = (id) => document.getElementById(id);

let lastStates = { record: null, replay: null };
let datasetsAt = 0;
let datasetsEagerUntil = 0;  // after a job ends: its manifest may land a moment after its state changes

function token() {
  return sessionStorage.getItem("token") || "";
}

// The owner's address (`mediadriver page`) carries the token in the fragment, which the browser never sends:
// it goes to the tab's session storage and out of the address bar (also when pasted into an open page).
function takeTokenFromAddress() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return false;
  sessionStorage.setItem("token", decodeURIComponent(match[1]));
  history.replaceState(null, "", location.pathname + location.search);
  return true;
}
takeTokenFromAddress();

async function api(method, path, body) {
  const headers = {};
  if (token()) headers.Authorization = "Bearer " + token();
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(new URL(path, API), init);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: text }; }
  if (!response.ok) {
    const message = (data && data.error) || response.statusText;
    throw new Error(response.status + " " + message);
  }
  return data;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function act(fn) {
  try {
    showError("");
    await fn();
    await poll();
  } catch (e) {
    showError(e.message);
  }
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + " " + units[i];
}

const count = (n) => Number(n).toLocaleString("en-US");

function setBadge(el, state) {
  el.textContent = state;
  el.className = "badge " + state;
}

function renderStatus(status) {
  const rec = status.record;
  setBadge($("record-state"), rec.state);
  $("record-dataset").textContent = rec.dataset_id ? rec.dataset_id + (rec.name ? " (" + rec.name + ")" : "") : "-";
  $("record-messages").textContent = count(rec.messages);
  $("record-bytes").textContent = bytes(rec.bytes);
  $("record-duration").textContent = rec.duration_s.toFixed(1) + " s";
  // A rolling capture: data sets cut and dropped so far, and the one being recorded.
  const rolling = rec.rolling;
  for (const el of document.querySelectorAll(".rolling")) el.hidden = !rolling;
  $("record-rolling").textContent = rolling
    ? count(rolling.datasets_cut) + " cut, " + count(rolling.datasets_dropped) + " dropped; now #" +
      rolling.dataset_seq + ": " + count(rolling.dataset_messages) + " messages, " + bytes(rolling.dataset_bytes)
    : "-";
  $("rec-start").disabled = rec.running;
  $("rec-stop").disabled = !rec.running;

  const rep = status.replay;
  setBadge($("replay-state"), rep.state);
  $("replay-dataset-id").textContent = rep.dataset_id || "-";
  $("replay-messages").textContent = count(rep.messages);
  $("replay-bytes").textContent = bytes(rep.bytes);
  $("replay-duration").textContent = rep.duration_s.toFixed(1) + " s";
  $("replay-repeats").textContent = rep.repeats_done + "/" + rep.repeat;
  $("replay-start").disabled = rep.running;
  $("replay-stop").disabled = !rep.running;

  const failed = [rec, rep].map((s) => s.error).filter(Boolean);
  if (failed.length && $("error").hidden) showError(failed.join("; "));
  // A job that ended may have made or changed a data set.
  const ended = (job, s) => lastStates[job] !== null && lastStates[job] !== s.state && !s.running;
  if (ended("record", rec) || ended("replay", rep)) datasetsEagerUntil = Date.now() + 3000;
  lastStates = { record: rec.state, replay: rep.state };
}

function renderDatasets(datasets) {
  const body = $("datasets").querySelector("tbody");
  body.replaceChildren();
  const select = $("replay-dataset");
  const chosen = select.value;
  select.replaceChildren();
  for (const d of datasets.slice().reverse()) {  // newest first
    const row = document.createElement("tr");
    row.dataset.id = d.id;
    const streams = d.streams.map((s) => s.channel + " " + s.stream_id).join(", ");
    const cells = [
      [d.id, ""], [d.name, ""], [count(d.messages), "num"], [bytes(d.bytes), "num"],
      [d.span_s.toFixed(3) + " s", "num"], [streams, ""], [d.created.replace("T", " ").slice(0, 19), ""],
    ];
    for (const [text, cls] of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      if (cls) td.className = cls;
      row.appendChild(td);
    }
    const rate = document.createElement("td");
    row.insertBefore(rate, row.children[5]);  // after the span
    rateChart(d).then((chart) => rate.replaceChildren(chart)).catch(() => {});
    const actions = document.createElement("td");
    const exportButton = document.createElement("button");
    exportButton.className = "small";
    exportButton.textContent = "export";
    exportButton.onclick = () => act(() => download(d));
    const deleteButton = document.createElement("button");
    deleteButton.className = "small stop";
    deleteButton.textContent = "delete";
    deleteButton.onclick = () => {
      if (confirm("Delete data set " + d.name + " (" + d.id + ")?")) {
        act(async () => { await api("DELETE", "datasets/" + encodeURIComponent(d.id)); datasetsAt = 0; });
      }
    };
    actions.append(exportButton, " ", deleteButton);
    row.appendChild(actions);
    body.appendChild(row);

    const option = document.createElement("option");
    option.value = d.id;
    option.textContent = d.name + " (" + d.id + ", " + count(d.messages) + " messages, " + d.span_s.toFixed(1) + " s)";
    select.appendChild(option);
  }
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
  $("no-datasets").hidden = datasets.length > 0;
}

// A data set never changes: its rate is fetched once (and drawn on each listing).
const RATE_BUCKETS = 60;
const rateCharts = new Map();

function rateChart(d) {
  if (!rateCharts.has(d.id)) {
    rateCharts.set(d.id, api("GET", "datasets/" + encodeURIComponent(d.id) + "/rate?buckets=" + RATE_BUCKETS)
      .catch((e) => { rateCharts.delete(d.id); throw e; }));
  }
  return rateCharts.get(d.id).then(drawRate);
}

function drawRate(rate) {
  const canvas = document.createElement("canvas");
  canvas.className = "rate";
  canvas.width = 120;
  canvas.height = 24;
  const perSecond = rate.messages.map((n) => n / rate.bucket_s);
  const peak = Math.max(1, ...perSecond);
  const step = canvas.width / Math.max(1, perSecond.length - 1);
  const g = canvas.getContext("2d");
  g.strokeStyle = "#2a6fdb";
  g.lineWidth = 1.5;
  g.beginPath();
  perSecond.forEach((r, i) => g.lineTo(i * step, canvas.height - 1 - (canvas.height - 2) * r / peak));
  g.stroke();
  canvas.dataset.points = String(perSecond.length);
  canvas.title = "messages/s over the span, peak " + count(Math.round(peak));
  return canvas;
}

async function download(d) {
  const url = new URL("datasets/" + encodeURIComponent(d.id) + "/export?compression=GZIP", API);
  if (!token()) {  // the browser streams it to disk
    window.location.href = url;
    return;
  }
  const response = await fetch(url, { headers: { Authorization: "Bearer " + token() } });
  if (!response.ok) throw new Error(response.status + " " + ((await response.json()).error || ""));
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = d.name + "-" + d.id + ".tar.gz";
  link.click();
  URL.revokeObjectURL(link.href);
}

async function poll() {
  try {
    renderStatus(await api("GET", "status"));
    if (Date.now() - datasetsAt > DATASETS_EVERY_MS || Date.now() < datasetsEagerUntil) {
      datasetsAt = Date.now();
      renderDatasets((await api("GET", "datasets")).datasets);
    }
    setBadge($("connection"), "online");
  } catch (e) {
    setBadge($("connection"), "offline");
    if (e.message.startsWith("401")) showError(e.message);
  }
}

function numberOrNull(id, parse) {
  const text = $(id).value.trim();
  return text === "" ? null : parse(text);
}

function recordRequest() {
  const streams = [];
  for (const line of $("rec-streams").value.split("\n")) {
    const parts = line.trim().split(/\s+/);
    if (parts.length === 1 && parts[0] === "") continue;
    if (parts.length !== 2 || !/^-?\d+$/.test(parts[1])) {
      throw new Error("streams: each line is a channel and a stream id, e.g. aeron:ipc 1001 (not " + JSON.stringify(line) + ")");
    }
    streams.push({ channel: parts[0], stream_id: parseInt(parts[1], 10) });
  }
  const body = { streams };
  const duration = numberOrNull("rec-duration", parseFloat);
  const maxMessages = numberOrNull("rec-count", (t) => parseInt(t, 10));
  const name = $("rec-name").value.trim();
  if (duration !== null) body.duration_s = duration;
  if (maxMessages !== null) body.max_messages = maxMessages;
  if (name) body.name = name;
  const everyS = numberOrNull("rec-rotate-s", parseFloat);
  const everyBytes = numberOrNull("rec-rotate-bytes", (t) => parseInt(t, 10));
  if (everyS !== null || everyBytes !== null) {
    body.rotate = {};
    if (everyS !== null) body.rotate.every_s = everyS;
    if (everyBytes !== null) body.rotate.every_bytes = everyBytes;
  }
  return body;
}

function replayRequest() {
  const body = {
    dataset_id: $("replay-dataset").value,
    rate: parseFloat($("replay-rate").value || "1"),
    repeat: parseInt($("replay-repeat").value || "1", 10),
  };
  const channel = $("replay-channel").value.trim();
  const stream = numberOrNull("replay-stream", (t) => parseInt(t, 10));
  if (channel) body.channel = channel;
  if (stream !== null) body.stream_id = stream;
  return body;
}

$("record-form").addEventListener("submit", (e) => {
  e.preventDefault();
  act(() => api("POST", "record", recordRequest()));
});
$("rec-stop").addEventListener("click", () => act(() => api("DELETE", "record")));
$("replay-form").addEventListener("submit", (e) => {
  e.preventDefault();
  act(() => api("POST", "replay", replayRequest()));
});
$("replay-stop").addEventListener("click", () => act(() => api("DELETE", "replay")));
$("refresh").addEventListener("click", () => { datasetsAt = 0; act(async () => {}); });
$("token").value = token();
$("token").addEventListener("change", () => {
  sessionStorage.setItem("token", $("token").value);
  datasetsAt = 0;
  act(async () => {});
});

window.addEventListener("hashchange", () => {
  if (!takeTokenFromAddress()) return;
  $("token").value = token();
  datasetsAt = 0;
  act(async () => {});
});

poll();
setInterval(poll, POLL_MS);
